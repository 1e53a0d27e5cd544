#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ringsim_burst.sh: the cost of simulating a burst (issue 15, point 3): 2,000 jobs submitted
# within 11 minutes (1-64 GPUs, powers of two, elastic from 1 GPU; those of 1 GPU fixed; half
# Gavel, half ElasticFlow models; 0.2-6 h on one GPU of their fastest type) on 6,155 GPUs of 5
# types in 1,360 nodes of 8, 8, 4, 4, 2 and 1 GPUs. Writes the cluster and the trace (seeded,
# the same every time), then runs ringsim once per --plan-gap and prints its table and the CPU
# and wall seconds of each run.
#
#   bench/ringsim_burst.sh [--builddir DIR] [--out DIR] [--policy P] [--gaps S1,S2,...]
#     [--jobs N] [--timeout S]
# Defaults: ./build, .run/ringsim-burst, combined, gaps 0,2,30 (0: plan on every event; 2:
# ringsim's default, the plugin's MinReplanGap), 2,000 jobs, 600 s per run (a run past it is
# reported, not waited for).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
builddir=${RINGSCHED_BUILDDIR:-$repo/build} out=$repo/.run/ringsim-burst
policy=combined gaps=0,2,30 jobs=2000 timeout=600
while [ $# -gt 0 ]; do
  case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --gaps) gaps=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ringsim_burst: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$jobs" "$timeout" ${gaps//,/ }; do
  case $v in ''|*[!0-9]*) echo "ringsim_burst: --jobs, --timeout and --gaps take whole numbers" >&2; exit 2 ;; esac
done
ringsim=$builddir/sim/ringsim
[ -x "$ringsim" ] || { echo "ringsim_burst: no $ringsim (build first, or --builddir)" >&2; exit 1; }
profiles=$repo/data/profiles/gavel.csv,$repo/data/profiles/elasticflow.csv
mkdir -p "$out"
/usr/bin/python3 - "$out" "$jobs" "$repo/data/profiles" <<'EOF'
import csv, random, sys
out, jobs, profiles = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(1)
types, sizes = ['v100', 'p100', 'k80', 'a100', 't4'], [8, 8, 4, 4, 2, 1]
with open(out + '/cluster.csv', 'w') as f:
    f.write('node,gpu_type,gpus\n')
    i = total = 0
    while total < 6150:
        t, g = types[i % 5], sizes[(i // 5) % 6]
        f.write('%s-%d,%s,%d\n' % (t, i, t, g))
        i, total = i + 1, total + g
one_gpu = {}  # model -> type -> iterations/s on one GPU
for name in ('gavel.csv', 'elasticflow.csv'):
    for r in csv.DictReader(open(profiles + '/' + name)):
        if int(r['num_gpus']) == 1:
            one_gpu.setdefault(r['model'], {})[r['gpu_type']] = float(r['iters_per_s'])
gavel = [m for m in one_gpu if 'v100' in one_gpu[m]]
elasticflow = [m for m in one_gpu if 'a100' in one_gpu[m] or 't4' in one_gpu[m]]
rows = []
for k in range(jobs):
    m = rng.choice(gavel if k % 2 == 0 else elasticflow)
    hours, g, submit = rng.uniform(0.2, 6), 1 << rng.randint(0, 6), rng.uniform(0, 660)
    iters = max(one_gpu[m].values()) * hours * 3600
    # elastic 1..g; a 1-GPU job is fixed (sbatch refuses --ring-elastic without MIN < MAX)
    rows.append('%d,%.1f,%s,%d,%.0f,1,%d,%d\n' % (k + 1, submit, m, g, iters, g, g > 1))
with open(out + '/trace.csv', 'w') as f:  # by submit time, then as sort(1) orders equal ones
    f.write('job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic\n')
    f.writelines(sorted(rows, key=lambda r: (float(r.split(',')[1]), r)))
EOF
echo "ringsim_burst: $jobs jobs, $(tail -n +2 "$out/cluster.csv" | wc -l) nodes; policy $policy"
for gap in ${gaps//,/ }; do
  echo "== --plan-gap $gap"
  if ! /usr/bin/time -f "cpu %U+%S s, wall %e s" -o "$out/time-$gap" timeout "$timeout" \
      "$ringsim" run --quiet --trace "$out/trace.csv" --cluster "$out/cluster.csv" \
      --profiles "$profiles" --policy "$policy" --plan-gap "$gap" > "$out/run-$gap.txt" 2>&1; then
    echo "ringsim_burst: --plan-gap $gap did not finish within $timeout s (or failed):"
    tail -3 "$out/run-$gap.txt"
    continue
  fi
  tail -n +2 "$out/run-$gap.txt"
  cat "$out/time-$gap"
done
