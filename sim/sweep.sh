#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Does `combined` win everywhere? Every workload family ringsim can import, on homogeneous
# clusters and clusters of 2, 3 and 5 GPU types with 4- and 8-GPU nodes, at several loads and
# seeds, under every policy; then one summary table, worst case first (issue 15, point 2).
# Run from the repository root:
#   RINGSIM=/path/to/build/sim/ringsim sim/sweep.sh OUTDIR [--full] [--policies P1,P2,...]
#     [--links INTRA,INTER] [--seeds S1,S2,...] [--families F1,F2,...] [--plan-gap S] [--restart S]
#     [--cluster FILE,...]
# Default: 120 jobs per run, loads 0.5x 1x 2x, seed 1, each family on its first cluster (about
# 1 minute of CPU, most of it the philly family). --full: 160 jobs, loads 0.5x 0.75x 1x 1.5x
# 2x, seeds 1-3, every family on every cluster its profile table allows (hours). Runs at nice 10.
# --links INTRA,INTER: every node's link speeds in GB/s (default: the cluster CSV's defaults,
# 100 and 12.5); e.g. 100,100 takes the locality charge out of the placement and of ringsim's
# engine, which charges every policy's allocation the placement's model.
# --seeds S1,S2,...: the seeds of the traces and the planner (default 1; --full: 1,2,3).
# --families F1,F2,...: only these workload families (below; default all). Gavel's Philly trace
# (philly) takes most of the time: minutes per run at load 2, with every policy.
# Load: every job's iterations x L at the same arrival times (L = 1: the trace as imported).
# --plan-gap S: ringsim's --plan-gap (default 0: every event plans, as the figures in
# docs/combined-*.md were measured; the plugin and ringsim's default coalesce events within 2 s).
# --restart S: ringsim's restart cost per resize or resume (default 30 s); a site whose checkpoints
# take longer sees here whether the ranking holds for it.
# --cluster FILE,...: ringsim cluster CSVs (a site's own layout, or shapes the built-in ones do not
# cover) to run each family on instead of its built-in clusters; a family runs on a file only if
# its profile table knows every GPU type in it (the others are named and skipped). Reports are
# named after each file's base name; the files are copied into OUTDIR/clusters. Not with --links
# (put the speeds in the file's intra_gbps and inter_gbps columns).
# OUTDIR keeps its reports: a sweep run again skips the runs already there (an interrupted one
# resumes), so it refuses an OUTDIR made with other options (OUTDIR/options names them).
# Output: OUTDIR/summary.txt (the table), OUTDIR/summary.csv, OUTDIR/ratio.png (gnuplot: combined's
# avg JCT over the best other policy's and over Tiresias's, per scenario), one JSON report per run.
set -eu
RINGSIM=${RINGSIM:-sim/ringsim}
DATA=${RINGSCHED_SHARED_DATA:-../shared/data}
OUT=${1:?usage: sim/sweep.sh OUTDIR [--full] [--policies P1,P2,...] [--links INTRA,INTER] [--seeds S1,S2,...] [--families F1,F2,...] [--plan-gap S] [--restart S] [--cluster FILE,...]}
shift
FULL=0
LINKS=
SEED_LIST=
FAMILIES=
PLAN_GAP=0
RESTART=30
SITE_CLUSTERS=
POLICIES=fifo,tiresias,optimus,besttype,static,doubling,hetero,combined
while [ $# -gt 0 ]; do
  case $1 in
  --full) FULL=1 ;;
  --policies) POLICIES=${2:?--policies needs a list}; shift ;;
  --links) LINKS=${2:?--links needs INTRA,INTER}; shift
    echo "$LINKS" | grep -Eq '^[0-9]+([.][0-9]+)?,[0-9]+([.][0-9]+)?$' ||
      { echo "sweep.sh: --links wants two speeds in GB/s, INTRA,INTER (got '$LINKS')" >&2; exit 2; } ;;
  --seeds) SEED_LIST=${2:?--seeds needs a list}; shift
    echo "$SEED_LIST" | grep -Eq '^[0-9]+(,[0-9]+)*$' ||
      { echo "sweep.sh: --seeds wants whole numbers separated by commas (got '$SEED_LIST')" >&2; exit 2; } ;;
  --families) FAMILIES=${2:?--families needs a list}; shift ;;
  --cluster) SITE_CLUSTERS=${2:?--cluster needs a list of cluster CSV files}; shift ;;
  --plan-gap|--restart)
    v=${2:?$1 needs a number of seconds}
    echo "$v" | grep -Eq '^[0-9]+([.][0-9]+)?$' ||
      { echo "sweep.sh: $1 wants a number of seconds, 0 or more (got '$v')" >&2; exit 2; }
    if [ "$1" = --plan-gap ]; then PLAN_GAP=$v; else RESTART=$v; fi
    shift ;;
  *) echo "sweep.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
GAVEL=data/profiles/gavel.csv
EF=data/profiles/elasticflow.csv
# Workload families (described with trace_of below): name, profile table, clusters (default: the
# first; --full: all).
families="philly:$GAVEL:gavel3mixed,v100x4,k80v100x8
phillyd:$GAVEL:v100x4,k80v100x8,gavel3mixed
itp01:$EF:a100t4x4,a100x8
itp02:$EF:a100x8,a100t4x4
itp03:$EF:a100t4x4,a100x8
efd:$EF:t4x4,a100t4x4
mix5:$GAVEL,$EF:five"
known=$(echo "$families" | cut -d: -f1 | tr '\n' ' ' | sed 's/ $//')
for f in $(echo "$FAMILIES" | tr , ' '); do
  case " $known " in *" $f "*) ;; *) echo "sweep.sh: unknown family '$f' (known: $known)" >&2; exit 2 ;; esac
done
# A site's clusters: readable, headed as ringsim's cluster CSV, base names unique (they name the
# reports), and the GPU types each holds, for matching the families' profile tables below.
site_names=
if [ -n "$SITE_CLUSTERS" ]; then
  [ -z "$LINKS" ] || { echo "sweep.sh: --links applies to the built-in clusters; give the speeds in the --cluster files' intra_gbps and inter_gbps columns" >&2; exit 2; }
  for f in $(echo "$SITE_CLUSTERS" | tr , ' '); do
    [ -r "$f" ] || { echo "sweep.sh: --cluster: cannot read '$f'" >&2; exit 2; }
    head -n 1 "$f" | grep -Eq '^node,gpu_type,gpus(,|$)' ||
      { echo "sweep.sh: --cluster: $f: line 1 should start with node,gpu_type,gpus (ringsim's cluster CSV)" >&2; exit 2; }
    n=$(basename "$f" .csv)
    echo "$n" | grep -Eq '^[A-Za-z0-9_.-]+$' ||
      { echo "sweep.sh: --cluster: $f: its base name '$n' names the reports: letters, digits, . _ - only" >&2; exit 2; }
    case " $site_names " in *" $n "*) echo "sweep.sh: --cluster: two files named $n.csv" >&2; exit 2 ;; esac
    site_names="$site_names $n"
  done
fi
# What the reports depend on besides the scenario (seeds and families only add scenarios).
options="full=$FULL policies=$POLICIES links=${LINKS:-default} plan-gap=$PLAN_GAP restart=$RESTART"
[ -z "$SITE_CLUSTERS" ] || options="$options clusters=$(echo $site_names | tr ' ' ,)"
if [ -s "$OUT/options" ] && [ "$(cat "$OUT/options")" != "$options" ]; then
  echo "sweep.sh: $OUT holds runs made with other options ($(cat "$OUT/options")), not $options: use another OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT/traces" "$OUT/clusters" "$OUT/reports"
echo "$options" > "$OUT/options"
if [ $FULL = 1 ]; then JOBS=160; LOADS="0.5 0.75 1 1.5 2"; SEEDS="1 2 3"; else JOBS=120; LOADS="0.5 1 2"; SEEDS=1; fi
[ -z "$SEED_LIST" ] || SEEDS=$(echo "$SEED_LIST" | tr , ' ')
RUN="nice -n 10 $RINGSIM"

# Clusters of 64 GPUs (the size of the public evaluations of Tiresias, Pollux and Sia), and 128
# for the two ElasticFlow types: its models are each profiled on A100 or on T4, not both, and
# ITP jobs ask for up to 64 GPUs of one type.
cluster_csv() {  # name, then TYPE:NODES:GPUS_PER_NODE ...
  f="$OUT/clusters/$1.csv"; shift
  if [ -n "$LINKS" ]; then echo "node,gpu_type,gpus,intra_gbps,inter_gbps"; else echo "node,gpu_type,gpus"; fi > "$f"
  for part in "$@"; do
    echo "$part" | awk -F: -v L="${LINKS:+,$LINKS}" \
      '{ for (i = 0; i < $2; ++i) printf "%s-%d-%d,%s,%d%s\n", $1, $3, i, $1, $3, L }' >> "$f"
  done
}
cluster_csv v100x4 v100:16:4                        # homogeneous, 4-GPU nodes
cluster_csv a100x8 a100:8:8                         # homogeneous, 8-GPU nodes
cluster_csv t4x4 t4:16:4                            # homogeneous, 4-GPU nodes
cluster_csv k80v100x8 k80:4:8 v100:4:8              # 2 types, 8-GPU nodes
cluster_csv a100t4x4 a100:16:4 t4:16:4              # 2 types, 4-GPU nodes (128: ITP jobs reach 64)
cluster_csv gavel3mixed k80:2:8 k80:4:4 p100:2:8 p100:2:4 v100:1:8 v100:6:4  # 3 types, 4 and 8
cluster_csv five k80:4:4 p100:2:8 v100:2:8 a100:2:8 t4:4:4                   # 5 types, 4 and 8
for f in $(echo "$SITE_CLUSTERS" | tr , ' '); do cp "$f" "$OUT/clusters/$(basename "$f" .csv).csv"; done
# The GPU types of a cluster file that none of the profile tables (comma-separated) knows.
unknown_types() {
  awk -F, 'FNR == 1 { next } FILENAME == ARGV[1] { t[$2] = 1; next } { known[$2] = 1 }
           END { for (x in t) if (!(x in known)) printf "%s ", x }' "$1" $(echo "$2" | tr , ' ')
}

# The workload families of the table above:
# philly:  Gavel's Philly-derived trace (its own arrivals and job types), the first jobs.
# phillyd: Philly job durations and sizes (Gavel's distribution), Poisson arrivals, Gavel models.
# itp01-03: Microsoft ITP clusters' real jobs (submit times, durations, sizes), ElasticFlow models.
# efd:     Philly durations on ElasticFlow's T4 table (as claims.sh's doubling experiment).
# mix5:    Philly durations with Gavel models, ElasticFlow T4 models and A100 models (a third
#          each) on 5 GPU types.
trace_of() {  # family seed -> trace file at load 1
  t="$OUT/traces/$1-s$2.csv"
  [ -s "$t" ] && { echo "$t"; return; }
  case $1 in
  philly) $RUN trace gavel "$DATA/gavel/philly_vc_jobs_seed0.csv" --limit $JOBS --seed "$2" -o "$t" ;;
  phillyd) $RUN trace durations "$DATA/gavel/philly_job_distribution.csv" --profiles $GAVEL --ref-type v100 \
             --jobs-per-hour 20 --time-scale 0.1 --limit $JOBS --seed "$2" -o "$t" ;;
  itp0[123]) $RUN trace durations "$DATA/itp/cluster${1#itp}.csv" --profiles $EF --ref-type a100 \
             --limit $JOBS --seed "$2" -o "$t" ;;
  efd) $RUN trace durations "$DATA/gavel/philly_job_distribution.csv" --profiles $EF --ref-type t4 \
             --jobs-per-hour 20 --time-scale 0.1 --limit $JOBS --seed "$2" -o "$t" ;;
  efa) $RUN trace durations "$DATA/gavel/philly_job_distribution.csv" --profiles $EF --ref-type a100 \
             --jobs-per-hour 20 --time-scale 0.1 --limit $JOBS --seed "$2" -o "$t" ;;
  mix5)
    a=$(trace_of phillyd "$2"); b=$(trace_of efd "$2"); c=$(trace_of efa "$2")
    { head -n 1 "$a"; { awk 'NR > 1 && NR % 3 == 1' "$a" | sed 's/^/g/'; awk 'NR > 1 && NR % 3 == 2' "$b" |
        sed 's/^/t/'; awk 'NR > 1 && NR % 3 == 0' "$c" | sed 's/^/a/'; } | sort -t, -k2,2g; } > "$t" ;;
  esac >&2
  echo "$t"
}
scaled() {  # trace load -> trace with iterations x load (column 5)
  s="${1%.csv}-L$2.csv"
  awk -F, -v OFS=, -v L="$2" 'NR == 1 { print; next } { $5 = sprintf("%.0f", $5 * L); if ($5 < 1) $5 = 1; print }' "$1" > "$s"
  echo "$s"
}

echo "$families" | while IFS=: read fam prof clusters; do
  [ -z "$FAMILIES" ] || case ",$FAMILIES," in *,"$fam",*) ;; *) continue ;; esac
  [ $FULL = 1 ] || clusters=${clusters%%,*}
  if [ -n "$SITE_CLUSTERS" ]; then
    clusters=
    for n in $site_names; do
      u=$(unknown_types "$OUT/clusters/$n.csv" "$prof")
      if [ -n "$u" ]; then echo "== $fam skips $n: its profiles have no ${u% }" >&2; else clusters="$clusters,$n"; fi
    done
    clusters=${clusters#,}
    [ -n "$clusters" ] || continue
  fi
  for seed in $SEEDS; do
    base=$(trace_of "$fam" "$seed")
    for load in $LOADS; do
      tr=$(scaled "$base" "$load")
      for cl in $(echo "$clusters" | tr , ' '); do
        rep="$OUT/reports/$fam-$cl-L$load-s$seed.json"
        [ -s "$rep" ] && continue
        echo "== $fam on $cl, load $load, seed $seed" >&2
        $RUN run --quiet --samples 8 --plan-gap "$PLAN_GAP" --restart "$RESTART" --seed "$seed" --trace "$tr" --cluster "$OUT/clusters/$cl.csv" \
          --profiles "$prof" --compare "$POLICIES" --report "$rep" --no-job-rows > "${rep%.json}.txt" 2>&1 ||
          { echo "FAILED: $fam on $cl, load $load, seed $seed: $(tail -n 1 "${rep%.json}.txt")" >&2; rm -f "$rep"; }
      done
    done
  done
done

/usr/bin/python3 - "$OUT" <<'EOF'
import json, glob, os, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(out, "reports", "*.json"))):
    pol = json.load(open(f))["policies"]
    if "combined" not in pol or "tiresias" not in pol:
        continue
    c = pol["combined"]
    others = {k: v for k, v in pol.items() if k != "combined"}
    best = min(others, key=lambda k: others[k]["avg_jct_s"])
    t = pol["tiresias"]
    rows.append(dict(
        scenario=os.path.basename(f)[:-5], best=best,
        vs_best=c["avg_jct_s"] / others[best]["avg_jct_s"],
        vs_tiresias=c["avg_jct_s"] / t["avg_jct_s"],
        p99_vs_tiresias=c["p99_jct_s"] / t["p99_jct_s"],
        ftf_vs_tiresias=c["ftf_max"] / t["ftf_max"],
        combined_h=c["avg_jct_s"] / 3600, tiresias_h=t["avg_jct_s"] / 3600,
        fifo_h=pol["fifo"]["avg_jct_s"] / 3600 if "fifo" in pol else float("nan")))
rows.sort(key=lambda r: -r["vs_best"])
cols = ["scenario", "vs_best", "best", "vs_tiresias", "p99_vs_tiresias", "ftf_vs_tiresias",
        "combined_h", "tiresias_h", "fifo_h"]
def cell(r, k):
    v = r[k]
    return v if isinstance(v, str) else "%.3f" % v
with open(os.path.join(out, "summary.csv"), "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join(cell(r, k) for k in cols) + "\n")
lines = ["combined's avg JCT over the best other policy's (vs_best) and over Tiresias's; p99 JCT and",
         "max finish-time fairness (JCT / isolated time) over Tiresias's; worst vs_best first.", ""]
w = [max(len(c), max([len(cell(r, c)) for r in rows] or [0])) for c in cols]
lines.append("  ".join(c.ljust(x) for c, x in zip(cols, w)))
for r in rows:
    lines.append("  ".join(cell(r, c).ljust(x) for c, x in zip(cols, w)))
if rows:
    n = len(rows)
    mean = lambda k: sum(r[k] for r in rows) / n
    lines += ["", "%d scenarios: combined best in %d; vs_best mean %.3f worst %.3f; vs_tiresias mean %.3f "
              "worst %.3f; p99 worse than Tiresias in %d, FTF worse in %d" % (
                  n, sum(r["vs_best"] <= 1.0 for r in rows), mean("vs_best"), rows[0]["vs_best"],
                  mean("vs_tiresias"), max(r["vs_tiresias"] for r in rows),
                  sum(r["p99_vs_tiresias"] > 1.0 for r in rows), sum(r["ftf_vs_tiresias"] > 1.0 for r in rows))]
    # Issue 15's "combined never loses", one figure: a scenario misses on any of its four tests.
    missed = [r["scenario"] for r in rows if r["vs_best"] > 1.0 or r["vs_tiresias"] > 0.8 or
              r["p99_vs_tiresias"] > 1.0 or r["ftf_vs_tiresias"] > 1.0]
    lines.append("misses (not the lowest avg JCT, over 0.8x Tiresias's, or p99 JCT or max FTF over "
                 "Tiresias's): %d of %d%s" % (len(missed), n, (": " + " ".join(missed[:10]) +
                                                               (" ..." if len(missed) > 10 else "")) if missed else ""))
    with open(os.path.join(out, "ratio.dat"), "w") as f:
        for i, r in enumerate(rows):
            f.write("%d %s %.4f %.4f\n" % (i, r["scenario"], r["vs_best"], r["vs_tiresias"]))
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
if command -v gnuplot >/dev/null 2>&1 && [ -s "$OUT/ratio.dat" ]; then
  gnuplot <<EOF
set terminal pngcairo size 1200,500
set output "$OUT/ratio.png"
set ylabel "combined avg JCT / other"
set xlabel "scenario (worst first)"
set grid
set key top right
plot "$OUT/ratio.dat" using 1:3 with points pt 7 title "over the best other policy", \
     "$OUT/ratio.dat" using 1:4 with points pt 5 title "over Tiresias", 1 with lines lt 0 title "", \
     0.8 with lines dt 2 title "0.8"
EOF
fi
