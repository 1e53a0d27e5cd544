#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: installs the Debian packages, fetches the Slurm
# source tree the plugins compile against, builds out of tree in ./build and runs every test
# program. Ends with one line: "N passed, N failed".
#   scripts/test.sh              everything
#   scripts/test.sh test_core    only the named test programs (after a first full run)
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
log() { printf 'test.sh: %s\n' "$*"; }

if [ "${RINGSCHED_SKIP_DEPS:-0}" != 1 ]; then
  bash scripts/install-deps.sh || { log "installing dependencies failed"; echo "0 passed, 1 failed"; exit 1; }
  if [ -x scripts/fetch-slurm-src.sh ]; then
    bash scripts/fetch-slurm-src.sh || log "Slurm source tree not available: the plugins and their tests are skipped"
  fi
fi

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ -n "$(find . -name Makefile.am -newer configure -not -path './build/*' -not -path './slurm-src/*' | head -1)" ] \
   || [ -n "$(find . -name '*.am' -newer configure -not -path './build/*' -not -path './slurm-src/*' | head -1)" ]; then
  log "autoreconf"
  autoreconf -fi >/dev/null 2>&1 || { autoreconf -fi; echo "0 passed, 1 failed"; exit 1; }
fi
mkdir -p build
cd build
if [ ! -f config.status ] || [ ../configure -nt config.status ]; then
  log "configure"
  ../configure -q || { echo "0 passed, 1 failed"; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
log "build (make -j$jobs)"
if ! make -j"$jobs" >make.log 2>&1; then
  tail -40 make.log
  log "build failed (full log: build/make.log)"
  echo "0 passed, 1 failed"
  exit 1
fi
log "build the test programs"
if ! make -j"$jobs" -C tests check TESTS= >>make.log 2>&1; then
  tail -40 make.log
  log "building the tests failed (full log: build/make.log)"
  echo "0 passed, 1 failed"
  exit 1
fi

# Test programs run one after another: the Slurm tests share one local cluster and the ring
# tests share ports. Each prints its own lines; the totals are summed here.
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  programs=($(make -s -C tests print-tests 2>/dev/null))
fi
passed=0
failed=0
start=$(date +%s)
for p in "${programs[@]}"; do
  log "run $p"
  t0=$(date +%s)
  out="tests/$p.log"
  (cd tests && ./"$p") >"$out" 2>&1
  rc=$?
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
  grep -E '^(PASS|FAIL|     )' "$out" | grep -v '^PASS' || true
  if [ -n "$summary" ]; then
    p_n=${summary%% passed*}
    f_n=${summary#*passed, }
    f_n=${f_n%% failed*}
    passed=$((passed + p_n))
    failed=$((failed + f_n))
    [ "$rc" -ne 0 ] && [ "$f_n" -eq 0 ] && { log "$p exited $rc after all its tests passed"; failed=$((failed + 1)); }
  else
    log "$p ended (exit $rc) without a summary line; last lines of $out:"
    tail -15 "$out"
    failed=$((failed + 1))
  fi
  log "$p: ${summary:-no summary} ($(( $(date +%s) - t0 )) s)"
done
log "all test programs: $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
