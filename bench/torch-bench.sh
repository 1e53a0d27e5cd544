#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# DDP step time and allreduce time on the "ringrt" backend (libringrt) against "gloo", with the same
# model and DDP buckets, at 2 and 4 ranks, in one run (bench/torch_bench.py under ringrun; issue
# 16.7). Both backends run in the same processes and take turns, repetition by repetition, so that
# a busy machine slows both alike. Usage: bench/torch-bench.sh [BUILD_DIR] [ITERS]
# (BUILD_DIR default: build; ITERS repetitions per case, default 20). Prints each backend's medians
# and the median over repetitions of gloo's time / ringrt's (> 1: ringrt faster).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
iters=${2:-20}
python=${PYTHON:-/usr/bin/python3}
[ -f "$build/python/site/ringsched/torch/_ringrt.so" ] || { echo "torch-bench: $build has no ringsched.torch (configure found no torch?)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for world in 2 4; do
  echo "torch-bench: ringrt and gloo, $world ranks, $iters repetitions" >&2
  PYTHONPATH="$build/python/site" "$build/wrapper/ringrun" --gpus="$world" --ckpt-dir="$tmp/ck-$world" -- \
    "$python" "$src/bench/torch_bench.py" --iters="$iters" | grep '^bench ' | tee -a "$tmp/lines"
done
"$python" - "$tmp/lines" <<'PY'
import re, sys
runs, ratios = {}, {}
for line in open(sys.argv[1]):
    vals = dict((k, float(v)) for k, v in re.findall(r"(\w+)=([0-9.]+)", line))
    b = re.search(r"backend=(\S+) world=(\d+)", line)
    if b:
        runs[(b.group(1), int(b.group(2)))] = vals
    else:
        ratios[int(vals["world"])] = vals
print("%-6s %-18s %10s %10s %12s" % ("ranks", "what", "ringrt ms", "gloo ms", "gloo/ringrt"))
for world in (2, 4):
    r, g, q = runs[("ringrt", world)], runs[("gloo", world)], ratios[world]
    names = dict((k, "allreduce " + k) for k in r if k.endswith("MiB"))
    names.update(ddp_step_ms="DDP step", ddp_cpu_ms="DDP step, CPU ms")
    for key in names:
        print("%-6d %-18s %10.3f %10.3f %11.2fx" % (world, names[key], r[key], g[key], q[key]))
PY
