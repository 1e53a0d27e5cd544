#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job (scripts/demo.sh execs this): on a fresh Debian 12 machine, as root, it installs
# the dependencies, builds out of tree in ./build, starts the local heterogeneous Slurm cluster
# (2 nodes x 4 GPUs each of v100, p100, k80) with ringsched active, runs a mixed workload of real
# ring-allreduce training jobs (ringrun + ringrun-train, several models, some elastic, one with
# SPB; each iteration emulates its GPU type's profiled speed, the allreduce is real) and two real
# PyTorch jobs (a CNN on load_digits over the "ringrt" backend: one elastic, resized as the
# cluster fills and empties, one with SPB), shows live what is placed, grown and shrunk, prints a
# table of JCT and final loss/accuracy and tears the cluster down. Every job is an ordinary
# user's: ring-USER for the trace's user column, made for the run and removed at the end.
#   scripts/run-demo.sh [--keep]      --keep leaves the cluster (and those users) up afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
log() { printf 'demo: %s\n' "$*"; }
keep=0
for a in "$@"; do
  case $a in
    --keep) keep=1 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option $a (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it starts munged, slurmctld and slurmd)" >&2; exit 1; }

t_start=$SECONDS
log "1/5 dependencies"
bash scripts/install-deps.sh
[ -x scripts/fetch-slurm-src.sh ] && bash scripts/fetch-slurm-src.sh >/dev/null

log "2/5 build (out of tree in ./build)"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then autoreconf -fi >/dev/null 2>&1; fi
mkdir -p build
(cd build && { [ -f config.status ] || ../configure -q; } && make -j"$(nproc)" >make.log 2>&1) ||
  { tail -30 build/make.log; log "build failed (build/make.log)"; exit 1; }
for f in wrapper/ringrun wrapper/ringrun-train plugins/priority/ringsched/.libs/priority_ringsched.so; do
  [ -e "build/$f" ] || { log "build/$f missing after the build"; exit 1; }
done

log "3/5 local heterogeneous cluster with ringsched"
# The jobs are ordinary users' (ring-alice, ring-bob, ...: the trace's user column), who must be
# able to enter the run folder and read the cluster's slurm.conf; a checkout below a private
# folder (root's home) runs both in /tmp.
base=$(scripts/ringjobs.sh workdir "$top/.run" ringsched-demo)
[ "$base" = "$top/.run" ] || log "the checkout is private to its owner: the cluster and the run are in $base"
export RINGSCHED_CLUSTER_DIR=$base/demo-cluster
mkdir -p "$RINGSCHED_CLUSTER_DIR"
scripts/ringjobs.sh conf 8 > "$RINGSCHED_CLUSTER_DIR/ringsched.conf"
run=$base/demo
teardown() {
  [ $keep = 1 ] && return
  scripts/testcluster.sh down >/dev/null 2>&1 || true
  scripts/ringjobs.sh remove-users "$run/result"  # the users this run made, and their homes
}
trap teardown EXIT
scripts/testcluster.sh up --plugins --builddir="$top/build"
eval "$(scripts/testcluster.sh env)"

# Three elastic jobs start while the cluster is idle; five fixed ones arrive within 30 s and the
# elastic ones shrink to make room, then grow back as the fixed ones finish.
# PyTorch jobs (program "torch", scripts/ringjobs.sh) train for real on the CPUs; they are
# scheduled as the model named in their row.
torch_jobs=""
if [ -f build/python/site/ringsched/torch/_ringrt.so ]; then
  torch_jobs="9,0,resnet18-b128,2,500,1,4,1,ivan,0,torch
10,40,resnet50-b64,2,300,2,2,0,judy,1,torch"
else
  log "no PyTorch jobs: configure found no torch (scripts/install-deps.sh installs python3-torch)"
fi
log "4/5 workload: 8 ring jobs and $([ -n "$torch_jobs" ] && echo 2 || echo no) PyTorch jobs (job_id,submit_s,model,gpus,iterations,min,max,elastic,user,spb,program)"
mkdir -p "$run"
chmod 755 "$run"
cat > "$run/trace.csv" <<TRACE
job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic,user,spb,program
1,0,transformer-b128,8,2000,1,8,1,alice,0
2,5,resnet50-b64,4,800,1,8,1,bob,0
3,10,resnet18-b128,4,2000,4,4,0,carol,0
4,15,lm-b80,4,2000,4,4,0,dave,0
5,20,cyclegan,4,150,4,4,0,erin,0
6,25,transformer-b64,4,400,4,4,0,frank,0
7,30,a3c,2,400,2,2,0,grace,0
8,35,resnet50-b64,4,500,1,8,1,heidi,1
${torch_jobs}
TRACE
cat "$run/trace.csv"
log "live view: [seconds] job state size (placed / requeued to resize / grown / shrunk)"
log "each job is submitted by and runs as its trace user's ordinary account (ring-alice, ...; made for this run, removed at the end unless --keep)"
scripts/ringjobs.sh run --trace "$run/trace.csv" --mode ringsched --out "$run/result" --builddir "$top/build" --timeout 420 --as-users

log "5/5 plan of the policy engine at the end: $RINGSCHED_CLUSTER_DIR/plan.json; per-job logs: $run/result/logs"
if [ -f "$run/result/measured.csv" ]; then
  log "measured iteration speeds accepted into $run/result/measured.csv: $(($(wc -l < "$run/result/measured.csv") - 1)) points"
fi
log "done in $((SECONDS - t_start)) s"
