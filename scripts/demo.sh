#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job: a local heterogeneous Slurm cluster with ringsched active, running a mixed
# workload of real ring-allreduce training jobs. Delivered with the job wrapper (ringrun).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x scripts/run-demo.sh ]; then
  echo "demo: the end-to-end demo arrives with the job wrapper (ringrun); it is not there yet."
  echo "demo: meanwhile 'scripts/test.sh' builds everything and runs the test suite."
  exit 0
fi
exec scripts/run-demo.sh "$@"
