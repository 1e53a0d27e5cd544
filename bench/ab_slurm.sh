#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ab_slurm.sh: the A/B run on real Slurm. The same time-compressed workload -- the first N jobs
# of Gavel's Philly-derived trace (../shared/data/gavel/philly_vc_jobs_seed0.csv), with Gavel's
# measured throughputs -- runs twice on the local heterogeneous cluster: with stock Slurm
# (cons_tres + backfill + the default priority, untyped --gres=gpu:N as users submit today) and
# with ringsched (plugins on, --ring-* options). Prints both JCT tables and the ratio.
#
#   bench/ab_slurm.sh [--jobs N] [--builddir DIR] [--timeout S] [--out DIR]
#
# Compression (so that a run takes minutes): arrivals are spread over ARRIVAL_SPAN_S seconds in
# their trace order; each job's length is mapped, by its rank among the N jobs' trace lengths,
# onto MIN_S..MAX_S seconds of work on one v100, and its iteration count is that time times the
# model's one-v100 speed from the profile. Models whose one-v100 speed exceeds 30 iterations/s
# are left out (the emulation cannot follow iterations shorter than the machine's scheduling
# noise). Sizes are capped at 4 GPUs (one node) for both sides.
# Run as root (it starts the daemons), the jobs are ordinary users' on both sides (ringjobs.sh
# run --as-users: ring-USER per trace user, removed at the end); the run folder is then one they
# can enter (./.run, or a new /tmp/ringsched-ab.* when the checkout is private).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# The timeout is per side: stock Slurm puts some long jobs on one K80 and needs about 17 minutes.
jobs=32 builddir=${RINGSCHED_BUILDDIR:-$repo/build} timeout=1800 out=""
ARRIVAL_SPAN_S=${ARRIVAL_SPAN_S:-120} MIN_S=${MIN_S:-20} MAX_S=${MAX_S:-150}
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ab_slurm: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $jobs in ''|*[!0-9]*) echo "ab_slurm: --jobs must be a number" >&2; exit 2 ;; esac
builddir=$(cd "$builddir" && pwd)
profiles=$repo/data/profiles/gavel.csv
src=$repo/../shared/data/gavel/philly_vc_jobs_seed0.csv
[ -f "$src" ] || { echo "ab_slurm: $src missing (the shared data folder beside the checkout)" >&2; exit 1; }
as_users=()
if [ "$(id -u)" -eq 0 ]; then
  as_users=(--as-users)
  base=$("$repo/scripts/ringjobs.sh" workdir "$repo/.run" ringsched-ab)
else
  base=$repo/.run
fi
out=${out:-$base/ab}
mkdir -p "$out"
export RINGSCHED_CLUSTER_DIR=${RINGSCHED_CLUSTER_DIR:-$base/ab-cluster}

# 1. The workload.
"$builddir/sim/ringsim" trace gavel "$src" -o "$out/gavel-full.csv" --max-gpus 4 --limit 2000 >/dev/null
awk -F, -v n="$jobs" -v span="$ARRIVAL_SPAN_S" -v lo="$MIN_S" -v hi="$MAX_S" '
  FNR == NR { if ($2 == "v100" && $3 == 1) v1[$1] = $5; next }       # profile: one-v100 speeds
  FNR == 1 { print; next }
  !($3 in v1) || v1[$3] > 30 { next }
  k < n { k++; row[k] = $0; len[k] = $5 / v1[$3]; sub_s[k] = $2 }
  END {
    for (i = 1; i <= k; i++) { r = 0; for (j = 1; j <= k; j++) if (len[j] < len[i] || (len[j] == len[i] && j < i)) r++
      rank[i] = r }
    last = sub_s[k] > 0 ? sub_s[k] : 1
    for (i = 1; i <= k; i++) {
      split(row[i], f, ",")
      gpus = f[4] > 4 ? 4 : f[4]; mx = f[7] > 4 ? 4 : f[7]; mn = f[6] > gpus ? gpus : f[6]
      secs = lo + (hi - lo) * (k > 1 ? rank[i] / (k - 1) : 0)
      iters = int(secs * v1[f[3]] + 0.5); if (iters < 1) iters = 1
      printf "%d,%.1f,%s,%d,%d,%d,%d,%d,%s,%d\n", i, span * (i - 1) / (k > 1 ? k - 1 : 1), f[3], gpus, iters, mn, mx, f[8], f[9], f[10]
    }
  }' "$profiles" "$out/gavel-full.csv" > "$out/trace.csv"
echo "ab_slurm: workload $out/trace.csv: $(($(wc -l < "$out/trace.csv") - 1)) jobs from $src"

# 2. Stock Slurm, then ringsched, on the same cluster definition.
RINGSCHED_PROFILES=$profiles "$repo/scripts/ringjobs.sh" conf 4 > "$RINGSCHED_CLUSTER_DIR.ringsched.conf"
teardown() {
  "$repo/scripts/testcluster.sh" down >/dev/null 2>&1 || true
  "$repo/scripts/ringjobs.sh" remove-users "$out/stock" "$out/ringsched"
}
trap teardown EXIT
for mode in stock ringsched; do
  mkdir -p "$RINGSCHED_CLUSTER_DIR"
  cp "$RINGSCHED_CLUSTER_DIR.ringsched.conf" "$RINGSCHED_CLUSTER_DIR/ringsched.conf"
  if [ $mode = stock ]; then "$repo/scripts/testcluster.sh" up --no-plugins --builddir="$builddir"
  else "$repo/scripts/testcluster.sh" up --plugins --builddir="$builddir"; fi
  eval "$("$repo/scripts/testcluster.sh" env)"
  "$repo/scripts/ringjobs.sh" run --trace "$out/trace.csv" --mode $mode --out "$out/$mode" --builddir "$builddir" --timeout "$timeout" \
    "${as_users[@]}"
done

# 3. The comparison, from this one run.
awk -F'[:,}]' '{ for (i = 1; i < NF; i++) { gsub(/[{" ]/, "", $i); v[FILENAME, $i] = $(i + 1) } }
  END { s = ARGV[1]; r = ARGV[2]
    printf "\nA/B on real Slurm (%s jobs):\n", v[s, "jobs"]
    printf "  %-10s %12s %12s %9s %9s\n", "", "avg JCT s", "makespan s", "restarts", "finished"
    printf "  %-10s %12.1f %12.1f %9d %9d\n", "stock", v[s, "avg_jct_s"], v[s, "makespan_s"], v[s, "restarts"], v[s, "finished"]
    printf "  %-10s %12.1f %12.1f %9d %9d\n", "ringsched", v[r, "avg_jct_s"], v[r, "makespan_s"], v[r, "restarts"], v[r, "finished"]
    if (v[s, "finished"] != v[s, "jobs"] || v[r, "finished"] != v[r, "jobs"])
      printf "  NOT COMPARABLE: not every job finished on both sides (averages cover finished jobs only)\n"
    else if (v[s, "avg_jct_s"] > 0) printf "  ringsched / stock: average JCT %.2fx, makespan %.2fx\n",
      v[r, "avg_jct_s"] / v[s, "avg_jct_s"], v[r, "makespan_s"] / v[s, "makespan_s"] }' \
  "$out/stock/summary.json" "$out/ringsched/summary.json" | tee "$out/ab.txt"
