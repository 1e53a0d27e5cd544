#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# DDP step time and allreduce time on the "ringrt" backend (libringrt) against "gloo", with the same
# model and DDP buckets, at 2 and 4 ranks, in one run (bench/torch_bench.py under ringrun; issue
# 16.7). Usage: bench/torch-bench.sh [BUILD_DIR] [ITERS]   (BUILD_DIR default: build)
# Prints each run's line and a table of ratios gloo/ringrt (> 1: ringrt faster).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
iters=${2:-10}
python=${PYTHON:-/usr/bin/python3}
[ -f "$build/python/site/ringsched/torch/_ringrt.so" ] || { echo "torch-bench: $build has no ringsched.torch (configure found no torch?)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for world in 2 4; do
  for backend in ringrt gloo; do
    echo "torch-bench: $backend, $world ranks" >&2
    PYTHONPATH="$build/python/site" "$build/wrapper/ringrun" --gpus="$world" --ckpt-dir="$tmp/ck-$backend-$world" -- \
      "$python" "$src/bench/torch_bench.py" --backend="$backend" --iters="$iters" | grep '^bench ' | tee -a "$tmp/lines"
  done
done
"$python" - "$tmp/lines" <<'PY'
import re, sys
runs = {}
for line in open(sys.argv[1]):
    b = re.search(r"backend=(\S+) world=(\d+)", line)
    runs[(b.group(1), int(b.group(2)))] = dict((k, float(v)) for k, v in re.findall(r"(\w+)=([0-9.]+)", line))
print("%-6s %-18s %10s %10s %8s" % ("ranks", "what", "ringrt ms", "gloo ms", "gloo/ringrt"))
for world in (2, 4):
    r, g = runs[("ringrt", world)], runs[("gloo", world)]
    for key in [k for k in r if k.endswith("MiB")] + ["ddp_step_ms"]:
        print("%-6d %-18s %10.3f %10.3f %8.2fx" % (world, "allreduce " + key if key.endswith("MiB") else "DDP step",
                                                  r[key], g[key], g[key] / r[key]))
PY
