#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, from a fresh checkout: installs the Debian packages, fetches the Slurm
# source tree the plugins compile against, builds out of tree and runs every test program. Ends
# with one line: "N passed, N failed" (", N skipped" follows when the programs report skips).
#   scripts/test.sh                   everything on the installed Slurm (22.05, in ./build), then
#                                     the Slurm integration tests on each release in
#                                     $RINGSCHED_TEST_SLURM (default 26.05; "" for none), each
#                                     built from ../shared/slurm by scripts/build-slurm.sh (cached)
#                                     into ./build-VERSION; a release without its tarball there
#                                     counts as one skipped
#   scripts/test.sh test_core         only the named test programs (after a first full run)
#   scripts/test.sh --slurm=26.05     the suite on that Slurm (22.05: the installed one, ./build;
#                                     24.11, 25.11, 26.05: ./build-VERSION); test names may follow
#   scripts/test.sh --slurm=26.05 --slurm-tests
#                                     only the Slurm integration tests (or the named ones) on
#                                     that Slurm, building only what they need: what the plain
#                                     run adds for 26.05
# Each test program has $RINGSCHED_TEST_TIMEOUT seconds (default 1200); one still running then
# is stopped and counted as a failure, with the last lines of its log.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
log() { printf 'test.sh: %s\n' "$*"; }

slurm=""
slurm_tests_only=0
names=()
for a in "$@"; do
  case $a in
    --slurm=*) slurm=${a#--slurm=} ;;
    --slurm-tests) slurm_tests_only=1 ;;
    -h|--help) sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) log "unknown option '$a' (--help)"; echo "0 passed, 1 failed"; exit 2 ;;
    *) names+=("$a") ;;
  esac
done

if [ "${RINGSCHED_SKIP_DEPS:-0}" != 1 ]; then
  bash scripts/install-deps.sh || { log "installing dependencies failed"; echo "0 passed, 1 failed"; exit 1; }
  if [ -x scripts/fetch-slurm-src.sh ]; then
    bash scripts/fetch-slurm-src.sh || log "Slurm source tree not available: the plugins and their tests are skipped"
  fi
fi

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ -n "$(find . -name Makefile.am -newer configure -not -path './build*' -not -path './slurm-src/*' | head -1)" ] \
   || [ -n "$(find . -name '*.am' -newer configure -not -path './build*' -not -path './slurm-src/*' | head -1)" ]; then
  log "autoreconf"
  autoreconf -fi >/dev/null 2>&1 || { autoreconf -fi; echo "0 passed, 1 failed"; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
program_timeout=${RINGSCHED_TEST_TIMEOUT:-1200}
passed=0
failed=0
skipped=""  # summed only from programs whose closing line counts skips

# build DIR SLURM-ONLY [CONFIGURE-ARGS...]: configure (again when the arguments changed) and build
# the project and its test programs in DIR; with SLURM-ONLY=1 only the Slurm integration tests
# (those named on the command line, or all) and what they need.
build() {
  local dir=$1 slurm_only=$2
  shift 2
  mkdir -p "$dir"
  cd "$dir" || return 1
  local want="$*"
  if [ ! -f config.status ] || [ ../configure -nt config.status ] || [ "$(cat .test-configure-args 2>/dev/null)" != "$want" ]; then
    log "configure ($dir${want:+: $want})"
    ../configure -q "$@" || { cd "$top"; return 1; }
    echo "$want" > .test-configure-args
  fi
  log "build $dir (make -j$jobs)"
  # All test programs (helpers too); with SLURM-ONLY the Slurm ones named on the command line,
  # else all of those.
  local targets=(check TESTS=) d
  : >make.log
  if [ "$slurm_only" = 1 ]; then
    targets=("${names[@]}")
    [ ${#targets[@]} -gt 0 ] || targets=($(slurm_tests))
    local parts=(policy ring-runtime plugins tools wrapper)
    # The PyTorch package (python/) only for the PyTorch tests: it takes minutes to compile.
    case " ${targets[*]}" in *" test_torch"*) parts+=(python) ;; esac
    for d in "${parts[@]}"; do
      make -j"$jobs" -C "$d" >>make.log 2>&1 || { tail -40 make.log; log "build failed (full log: $dir/make.log)"; cd "$top"; return 1; }
    done
  elif ! make -j"$jobs" >>make.log 2>&1; then
    tail -40 make.log; log "build failed (full log: $dir/make.log)"; cd "$top"; return 1
  fi
  log "build the test programs"
  if [ ${#targets[@]} -gt 0 ] && ! make -j"$jobs" -C tests "${targets[@]}" >>make.log 2>&1; then
    tail -40 make.log
    log "building the tests failed (full log: $dir/make.log)"
    cd "$top"
    return 1
  fi
  cd "$top"
}

# The Slurm integration test programs of the build folder in the current directory.
slurm_tests() { make -s -C tests print-integration-tests 2>/dev/null | tr ' ' '\n' | grep slurm; }

# run_programs DIR PROGRAM...: runs them one after another (the Slurm tests share one local
# cluster and the ring tests share ports); each prints its own lines; the totals are summed here.
run_programs() {
  local dir=$1
  shift
  local start p t0 out rc summary p_n f_n s_n note
  start=$(date +%s)
  for p in "$@"; do
    log "run $p ($dir)"
    t0=$(date +%s)
    out="$dir/tests/$p.log"
    # A deadline per program: a hang fails that program, with its log's last lines, and the
    # suite goes on (a CI run has 90 minutes for everything; the slowest program takes ~4).
    # A Slurm test program notes its cluster's folder (slurm_test_cluster.cpp): stopped by the
    # deadline, it cannot take its daemons down, so this does, before the next program's cluster.
    note="$(cd "$dir/tests" && pwd)/$p.cluster"
    rm -f "$note"
    (cd "$dir/tests" && RINGSCHED_TEST_CLUSTER_NOTE=$note timeout -k 30 "$program_timeout" ./"$p") >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      log "$p still running after $program_timeout s: stopped (RINGSCHED_TEST_TIMEOUT)"
      if [ -s "$note" ]; then
        log "$p: taking its cluster down ($(cat "$note"))"
        RINGSCHED_CLUSTER_DIR=$(cat "$note") SLURM_CONF="$(cat "$note")/slurm.conf" \
          timeout 120 scripts/testcluster.sh down 2>&1 | tail -3
      fi
    fi
    rm -f "$note"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -1)
    grep -E '^(PASS|FAIL|SKIP|     )' "$out" | grep -v '^PASS' || true
    if [ -n "$summary" ]; then
      p_n=${summary%% passed*}
      f_n=${summary#*passed, }
      f_n=${f_n%% failed*}
      passed=$((passed + p_n))
      failed=$((failed + f_n))
      case $summary in
        *skipped) s_n=${summary##*failed, }; skipped=$((${skipped:-0} + ${s_n%% skipped})) ;;
      esac
      [ "$rc" -ne 0 ] && [ "$f_n" -eq 0 ] && { log "$p exited $rc after all its tests passed"; failed=$((failed + 1)); }
    else
      log "$p ended (exit $rc) without a summary line; last lines of $out:"
      tail -15 "$out"
      failed=$((failed + 1))
    fi
    log "$p: ${summary:-no summary} ($(( $(date +%s) - t0 )) s)"
  done
  log "test programs in $dir: $(( $(date +%s) - start )) s"
}

# suite VERSION|"" SLURM-ONLY PROGRAM...: build for that Slurm (""/the installed one: ./build) and
# run the named programs, or all of them, or (SLURM-ONLY=1) the Slurm integration tests.
suite() {
  local version=$1 slurm_only=$2
  shift 2
  local dir=build args=() installed prefix t0
  installed=$( [ -x /usr/sbin/slurmctld ] && /usr/sbin/slurmctld -V | awk '{print $2}')
  if [ -n "$version" ] && [ "$version" != "${installed%.*}" ] && [ "$version" != "$installed" ]; then
    dir=build-$version
    t0=$(date +%s)
    log "Slurm $version: scripts/build-slurm.sh $version"
    if ! prefix=$(bash scripts/build-slurm.sh "$version"); then
      log "Slurm $version could not be built"
      failed=$((failed + 1))
      return
    fi
    log "Slurm $version ready in $(( $(date +%s) - t0 )) s: $prefix"
    args=(--with-slurm-src="$prefix/source")
  fi
  t0=$(date +%s)
  if ! build "$dir" "$slurm_only" "${args[@]}"; then
    failed=$((failed + 1))
    return
  fi
  log "built $dir in $(( $(date +%s) - t0 )) s"
  local programs=("$@")
  if [ ${#programs[@]} -eq 0 ]; then
    if [ "$slurm_only" = 1 ]; then
      programs=($(cd "$dir" && slurm_tests))
    else
      programs=($(make -s -C "$dir/tests" print-tests 2>/dev/null))
    fi
  fi
  local built_for
  built_for=$(sed -n 's/^SLURM_VERSION = //p' "$dir/plugins/Makefile")
  if [ -n "$version" ] && [ "${built_for%.*}" != "$version" ] && [ "$built_for" != "$version" ]; then
    log "$dir has no plugins for Slurm $version (configure found '${built_for:-no Slurm}'); its Slurm tests cannot run"
    failed=$((failed + 1))
  fi
  run_programs "$dir" "${programs[@]}"
}

if [ -n "$slurm" ]; then
  suite "$slurm" "$slurm_tests_only" "${names[@]}"
else
  suite "" "$slurm_tests_only" "${names[@]}"
  if [ ${#names[@]} -eq 0 ]; then
    for v in ${RINGSCHED_TEST_SLURM-26.05}; do
      # Its source tarball is not part of this repository: without it (a clone without
      # ../shared beside it) that version's tests cannot run, which is a skip, not a failure.
      # A tarball that is there and does not build still fails, as does a bad version.
      bash scripts/build-slurm.sh --has "$v"
      if [ $? -eq 1 ]; then
        log "Slurm $v: no source tarball in ${RINGSCHED_SLURM_TARBALLS:-../shared/slurm} (scripts/build-slurm.sh --list); its Slurm tests are skipped"
        skipped=$((${skipped:-0} + 1))
        continue
      fi
      suite "$v" 1
    done
  fi
fi
echo "$passed passed, $failed failed${skipped:+, $skipped skipped}"
[ "$failed" -eq 0 ]
