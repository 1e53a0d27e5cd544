#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# ringrt-leakcheck.sh WORKER [N] -- runs libringrt's leak worker (two forked ranks, N mixed
# collectives on the TCP ring and on shared memory) under valgrind; fails when any process has a
# definitely or indirectly lost block, or any other memory error. WORKER must be a real program
# (not a libtool wrapper script): tests/ringrt.am links it statically against libringrt_core.
set -eu
if ! command -v valgrind >/dev/null 2>&1; then
  echo "ringrt-leakcheck: valgrind not installed" >&2
  exit 77
fi
exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=3 "$@"
