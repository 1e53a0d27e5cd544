#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# stage-programs.sh BUILDDIR DIR: copy what an ordinary user's job runs into DIR (emptied first),
# readable and runnable by everyone: a build tree may sit below a folder only its owner can enter
# (/root), and slurmstepd runs a job as its user. The one staging step of the tests
# (SlurmTestCluster::stage_programs), the demo (ringjobs.sh --as-users) and bench/resize_burst.sh.
#   DIR/ringrun, DIR/ringrun-train   the real programs (not libtool's wrapper scripts)
#   DIR/lib/libringrt.so*            where the programs were linked against the shared library
#   DIR/gavel.csv                    the Gavel profiles
#   DIR/site, DIR/train_digits.py    the ringsched.torch package and the example, if built
# A job script sets LD_LIBRARY_PATH=DIR/lib (and PYTHONPATH=DIR/site for PyTorch jobs).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: $(basename "$0") BUILDDIR DIR" >&2; exit 2; }
builddir=$1 stage=$2
for p in ringrun ringrun-train; do
  [ -x "$builddir/wrapper/$p" ] || { echo "stage-programs: $builddir/wrapper/$p is not built" >&2; exit 1; }
done
rm -rf "$stage"
mkdir -p "$stage/lib"
for p in ringrun ringrun-train; do
  if [ -x "$builddir/wrapper/.libs/$p" ]; then cp "$builddir/wrapper/.libs/$p" "$stage/"; else cp "$builddir/wrapper/$p" "$stage/"; fi
done
cp -P "$builddir"/ring-runtime/.libs/libringrt.so* "$stage/lib/" 2>/dev/null || true
cp "$repo/data/profiles/gavel.csv" "$stage/"
if [ -d "$builddir/python/site" ]; then
  cp -r "$builddir/python/site" "$stage/site"
  cp "$repo/python/examples/train_digits.py" "$stage/"
fi
chmod -R a+rX "$stage"
