#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# resize_latency.sh: resize a real ring job on the local Slurm cluster 1 -> 2 -> 4 -> 2 GPUs and
# measure, for each resize, the seconds from the decision to the first iteration at the new
# size, broken down: checkpoint (workers stop and the file is verified), Slurm requeue + update +
# release (libslurm), Slurm restart (release -> the batch script runs again), restore (ring
# formed again, checkpoint read, first iteration done). Then checks that no training state was
# lost: the job's loss curve against an uninterrupted local run of the same training.
#
#   bench/resize_latency.sh [--builddir DIR] [--out DIR]
# The cluster is started without the ringsched plugins (the resize requests are written to the
# job's request file, the same path the policy engine's requests take inside ringrun), in its own
# state folder, and stopped at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
builddir=${RINGSCHED_BUILDDIR:-$repo/build} out=$repo/.run/resize-latency
while [ $# -gt 0 ]; do
  case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "resize_latency: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
builddir=$(cd "$builddir" && pwd)
ringrun=$builddir/wrapper/ringrun train=$builddir/wrapper/ringrun-train
profiles=$repo/data/profiles/gavel.csv
rm -rf "$out"; mkdir -p "$out"; out=$(cd "$out" && pwd)
export RINGSCHED_CLUSTER_DIR=${RINGSCHED_CLUSTER_DIR:-$repo/.run/latency-cluster}
trap '"$repo/scripts/testcluster.sh" down >/dev/null 2>&1 || true' EXIT
"$repo/scripts/testcluster.sh" up --no-plugins --builddir="$builddir"
eval "$("$repo/scripts/testcluster.sh" env)"

steps=1500
training="--steps=$steps --log-every=100000 --emulate-model=lm-b80"
cat > "$out/job.sh" <<JOB
#!/bin/sh
exec $ringrun --model=lm-b80 --profiles=$profiles --ckpt-dir=$out/ck -- $train $training --loss-log=$out/slurm.loss
JOB
chmod +x "$out/job.sh"
jid=$(sbatch --parsable --requeue --open-mode=append -J resize-latency --gres=gpu:v100:1 -o "$out/job.out" "$out/job.sh")
echo "resize_latency: job $jid on 1 x v100"

lines() { [ -f "$out/slurm.loss" ] && wc -l < "$out/slurm.loss" || echo 0; }
wait_until() {  # seconds, condition...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.2; done
}
progressed() { [ "$(lines)" -ge $(( mark + 150 )) ]; }
at_size() { tail -1 "$out/slurm.loss" 2>/dev/null | awk -v s="$1" '$3 == s { ok = 1 } END { exit !ok }'; }
mark=0
for size in 2 4 2; do
  wait_until 120 progressed || { echo "resize_latency: no progress (see $out/job.out)"; exit 1; }
  echo "$size" > "$out/ck/resize-request.tmp" && mv "$out/ck/resize-request.tmp" "$out/ck/resize-request"
  echo "resize_latency: requested $size GPUs at step $(lines)"
  wait_until 120 at_size "$size" || { echo "resize_latency: the job did not come back at $size GPUs (see $out/job.out)"; exit 1; }
  mark=$(lines)
done
wait_until 300 grep -q ' finished' "$out/ck/events" || { echo "resize_latency: job did not finish"; exit 1; }

echo
echo "resize_latency: breakdown per resize (seconds; from $out/ck/events)"
awk '
  $2 == "decision" { d = $1; what = $3 }
  $2 == "checkpointed" && d { c = $1 }
  $2 == "released" && d { r = $1 }
  $2 == "workers_started" && d && r { s = $1 }
  $2 == "first_step" && d && s {
    printf "  %-6s checkpoint %5.2f  requeue+update+release %5.2f  Slurm restart %5.2f  restore+first step %5.2f  total %5.2f\n",
      what, c - d, r - c, s - r, $1 - s, $1 - d
    n++; tot += $1 - d; ck += c - d; rq += r - c; st += s - r; rs += $1 - s; d = 0; r = 0; s = 0 }
  END { if (n) printf "  mean   checkpoint %5.2f  requeue+update+release %5.2f  Slurm restart %5.2f  restore+first step %5.2f  total %5.2f\n",
      ck / n, rq / n, st / n, rs / n, tot / n }' "$out/ck/events" | tee "$out/latency.txt"

# No state lost: the same training, uninterrupted, one local rank (emulation changes only time).
"$ringrun" --gpus=1 --ckpt-dir="$out/ref-ck" -- "$train" --steps=$steps --log-every=100000 --loss-log="$out/ref.loss" >/dev/null
awk 'FNR == NR { ref[$1] = $2; next } { sz[$3] = 1; d = $2 - ref[$1]; if (d < 0) d = -d; if (d > m) m = d; n++ }
  END { s = ""; for (k in sz) s = s " " k
        printf "resize_latency: %d logged steps at sizes%s; max |loss - uninterrupted loss| = %.3g\n", n, s, m }' \
  "$out/ref.loss" "$out/slurm.loss" | tee -a "$out/latency.txt"
