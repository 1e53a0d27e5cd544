#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Reproduces the figures of docs/ringsim.md. Run from the repository root:
#   RINGSIM=/path/to/build/sim/ringsim sim/claims.sh OUTDIR [experiment...]
# experiments: doubling hetero similarity spb scale (default: all but scale). Each prints the
# ringsim table and leaves a JSON report (and plots for hetero) in OUTDIR.
set -eu
RINGSIM=${RINGSIM:-sim/ringsim}
DATA=${RINGSCHED_SHARED_DATA:-../shared/data}
OUT=${1:?usage: sim/claims.sh OUTDIR [doubling hetero similarity spb scale]}
shift
mkdir -p "$OUT"
EXPS=${*:-doubling hetero similarity spb}
GAVEL=data/profiles/gavel.csv
EF=data/profiles/elasticflow.csv
GAVEL_CLUSTER=k80:36,p100:36,v100:36
# Our policies run with 8 sampled categories (the planner's default is 64) to keep runs short.
# Every event plans (--plan-gap 0), as the figures in docs/ringsim.md were measured (ringsim's
# default, like the plugin's MinReplanGap, coalesces events within 2 s).
OURS="--samples 8"

"$RINGSIM" trace gavel "$DATA/gavel/philly_vc_jobs_seed0.csv" --limit 1000 -o "$OUT/philly1k.csv"
# ITP cluster01 (light, real submit times, A100 table): doubling and hetero both replay it.
"$RINGSIM" trace durations "$DATA/itp/cluster01.csv" --profiles $EF --ref-type a100 -o "$OUT/itp01.csv"

for e in $EXPS; do
  case $e in
  doubling)
    # Three workload patterns: the Philly-derived head (heavy, Gavel table), ITP cluster01
    # (light, real submit times, A100 table), Philly durations with Poisson arrivals (T4 table).
    "$RINGSIM" trace durations "$DATA/gavel/philly_job_distribution.csv" --profiles $EF --ref-type t4 \
      --jobs-per-hour 6 --time-scale 0.1 --limit 600 -o "$OUT/phillydist.csv"
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/philly1k.csv" --cluster $GAVEL_CLUSTER --profiles $GAVEL \
      --compare static,doubling --report "$OUT/doubling_philly1k.json" --no-job-rows
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/itp01.csv" --cluster a100:64 --gpus-per-node 8 --profiles $EF \
      --compare static,doubling --report "$OUT/doubling_itp01.json" --no-job-rows
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/phillydist.csv" --cluster t4:64 --gpus-per-node 8 --profiles $EF \
      --compare static,doubling --report "$OUT/doubling_phillydist.json" --no-job-rows
    ;;
  hetero)
    # Gavel-style cluster, Philly-derived trace: every baseline and ours.
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/philly1k.csv" --cluster $GAVEL_CLUSTER --profiles $GAVEL \
      --compare fifo,tiresias,optimus,besttype,static,hetero,combined --report "$OUT/hetero_philly1k.json" \
      --plots "$OUT/plots_philly1k"
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/itp01.csv" --cluster a100:64,t4:64 --gpus-per-node 8 --profiles $EF \
      --compare fifo,tiresias,optimus,besttype,static,hetero,combined --report "$OUT/hetero_itp01.json" --no-job-rows
    ;;
  similarity)
    # The Recommendation and ResNet-50 models are hidden from the policies (the engine keeps their
    # true speeds); ours with model similarity against ours without.
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/philly1k.csv" --cluster $GAVEL_CLUSTER --profiles $GAVEL \
      --hold-out recommendation-b512,recommendation-b1024,recommendation-b2048,recommendation-b4096,recommendation-b8192,resnet50-b16,resnet50-b32,resnet50-b64,resnet50-b128 \
      --features data/model_features.csv --compare combined-naive,combined --report "$OUT/similarity.json" --no-job-rows
    ;;
  spb)
    # Every job SPB-capable, a cluster under contention: useful iterations per GPU-hour.
    "$RINGSIM" trace gavel "$DATA/gavel/philly_vc_jobs_seed0.csv" --limit 400 --spb-fraction 1 -o "$OUT/philly_spb.csv"
    "$RINGSIM" run --quiet --plan-gap 0 $OURS --trace "$OUT/philly_spb.csv" --cluster k80:12,p100:12,v100:12 --profiles $GAVEL \
      --compare combined,combined+spb --report "$OUT/spb.json" --no-job-rows
    ;;
  scale)
    "$RINGSIM" trace gavel "$DATA/gavel/philly_vc_jobs_seed0.csv" -o "$OUT/philly_full.csv"
    "$RINGSIM" run --quiet --plan-gap 0 --trace "$OUT/philly_full.csv" --cluster $GAVEL_CLUSTER --profiles $GAVEL \
      --compare fifo,besttype,tiresias,optimus --report "$OUT/scale_philly_full.json" --no-job-rows
    # Ours on the whole trace: hourly rounds, event planning at most hourly.
    "$RINGSIM" run --quiet $OURS --round 3600 --plan-gap 3600 --trace "$OUT/philly_full.csv" --cluster $GAVEL_CLUSTER \
      --profiles $GAVEL --policy combined --report "$OUT/scale_philly_full_combined.json" --no-job-rows
    "$RINGSIM" trace synth --jobs 20000 --profiles $EF --ref-type a100 --jobs-per-hour 400 --max-gpus 64 \
      --min-s 1800 --max-s 36000 -o "$OUT/synth20k.csv"
    "$RINGSIM" run --quiet --plan-gap 0 --trace "$OUT/synth20k.csv" --cluster a100:5000,t4:5000 --gpus-per-node 8 --profiles $EF \
      --compare fifo,besttype --report "$OUT/scale_10k.json" --no-job-rows
    "$RINGSIM" run --quiet $OURS --round 3600 --plan-gap 3600 --trace "$OUT/synth20k.csv" --cluster a100:5000,t4:5000 \
      --gpus-per-node 8 --profiles $EF --policy combined --report "$OUT/scale_10k_combined.json" --no-job-rows
    ;;
  *) echo "unknown experiment $e" >&2; exit 2 ;;
  esac
done
