#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# resize_burst.sh: a burst of real elastic ring jobs of an ordinary user on the local Slurm cluster
# with the ringsched plugins and a planner that resizes as eagerly as it can (issue 14.2: a resize
# request that comes while a job is starting must be deferred, never fatal). Each job is
# `exec ringrun -- ringrun-train --emulate-model=M` (every iteration takes the profile's time, the
# allreduce between its workers is real). Waits for every job to end and prints: jobs completed,
# jobs that ended any other way (killed), resizes carried out (requeues), and the ones that ended
# by signal 12 (SIGUSR2) in particular.
#
#   bench/resize_burst.sh [--jobs N] [--steps S] [--builddir DIR] [--out DIR] [--timeout S]
# Jobs are submitted by the user ringtest1 (created if missing), programs copied to a 0755 folder
# in the cluster's state folder. The cluster has its own state folder and is stopped at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
builddir=${RINGSCHED_BUILDDIR:-$repo/build} out=$repo/.run/resize-burst jobs=500 steps=60 timeout=3600
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "resize_burst: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$jobs" "$steps" "$timeout"; do
  case $v in ''|*[!0-9]*) echo "resize_burst: --jobs, --steps and --timeout take whole numbers" >&2; exit 2 ;; esac
done
builddir=$(cd "$builddir" && pwd)
user=ringtest1
id -u "$user" >/dev/null 2>&1 || useradd -m -s /bin/sh "$user"
export RINGSCHED_CLUSTER_DIR=${RINGSCHED_CLUSTER_DIR:-/tmp/ringsched-resize-burst-cluster}
trap '"$repo/scripts/testcluster.sh" down >/dev/null 2>&1 || true' EXIT
"$repo/scripts/testcluster.sh" up --plugins --builddir="$builddir"
eval "$("$repo/scripts/testcluster.sh" env)"
state=$RINGSCHED_CLUSTER_DIR
# The planner as eager as it can be: a round every second, resizes free and never held back.
cat >> "$state/ringsched.conf" <<CONF
ReplanInterval=1
MinReplanGap=1
RestartCost=1
MinGainMultiple=0
MinResizeInterval=0
ResizeHold=0
ReshapeInterval=0
CONF
scontrol reconfigure

# Programs where the user can run them (the build tree may be below a private folder).
stage=$state/stage
"$repo/scripts/stage-programs.sh" "$builddir" "$stage"
rm -rf "$out"; mkdir -p "$out"; chown "$user": "$out"; out=$(cd "$out" && pwd)
models=(resnet18-b16 lm-b80 resnet50-b64 transformer-b128)
for m in "${models[@]}"; do
  cat > "$out/job-$m.sh" <<JOB
#!/bin/sh
export LD_LIBRARY_PATH=$stage/lib
exec $stage/ringrun --model=$m --profiles=$stage/gavel.csv -- $stage/ringrun-train --steps=$steps --log-every=100000 --emulate-model=$m
JOB
done
chown "$user": "$out"/*.sh; chmod 755 "$out"/*.sh

# Finished jobs leave slurmctld's memory after MinJobAge: every record is kept as it is seen, from
# the first submission on.
: > "$out/records"
( while [ ! -f "$out/stop-recording" ]; do
    scontrol show job -o 2>/dev/null | grep 'JobName=burst' >> "$out/records" || true
    sleep 5
  done ) &
recorder=$!
echo "resize_burst: submitting $jobs elastic ring jobs (1-8 GPUs, $steps steps each) as $user"
t0=$SECONDS
runuser -u "$user" -- sh -c "cd '$out' && for i in \$(seq $jobs); do
  m=\$(echo ${models[*]} | cut -d' ' -f\$(( i % ${#models[@]} + 1 )));
  sbatch --parsable --requeue -o /dev/null -J burst\$i --ring-model=\$m --ring-gpus=1-8 --ring-elastic job-\$m.sh || echo refused;
done" > "$out/submitted"
submitted=$(grep -c '^[0-9]' "$out/submitted" || true)
echo "resize_burst: $submitted submitted in $((SECONDS - t0)) s; waiting for them to end"
ids=$(grep '^[0-9]' "$out/submitted" | paste -sd, -)
deadline=$((SECONDS + timeout))
while :; do
  left=$(squeue -h -j "$ids" -t PD,R,CG,CF,S -o %i 2>/dev/null | wc -l)
  [ "$left" -eq 0 ] && break
  [ $SECONDS -lt $deadline ] || { echo "resize_burst: $left jobs still active after $timeout s"; break; }
  echo "resize_burst: $((SECONDS - t0)) s: $left jobs left"
  sleep 15
done
touch "$out/stop-recording"; wait "$recorder" || true
scontrol show job -o 2>/dev/null | grep 'JobName=burst' >> "$out/records" || true
# The last record of each job.
awk '{ id = $1; last[id] = $0 } END { for (id in last) print last[id] }' "$out/records" > "$out/jobs.txt"
completed=$(grep -c 'JobState=COMPLETED' "$out/jobs.txt" || true)
other=$(grep -v 'JobState=COMPLETED' "$out/jobs.txt" | grep -c 'JobName=burst' || true)
sig12=$(grep -c 'ExitCode=0:12\|ExitCode=[0-9]*:12 ' "$out/jobs.txt" || true)
restarts=$(grep -o 'Restarts=[0-9]*' "$out/jobs.txt" | awk -F= '{ s += $2 } END { print s + 0 }')
grep -v 'JobState=COMPLETED' "$out/jobs.txt" | grep 'JobName=burst' | sed 's/ .*JobState=/ /; s/ Reason=\([^ ]*\).*ExitCode=\([^ ]*\).*/ \1 exit \2/' > "$out/not-completed" || true
seen=$(wc -l < "$out/jobs.txt")
echo "resize_burst: $jobs jobs ($seen seen), $((SECONDS - t0)) s: $completed completed, $other ended otherwise" \
     "($sig12 by signal 12), $restarts resizes carried out (requeues); details in $out"
[ "$other" -eq 0 ]
