#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-slurm.sh: builds a Slurm release from its source tarball into a cached prefix, with only
# what the ringsched plugins and the local test cluster need, and prints the prefix.
#
#   build-slurm.sh VERSION          e.g. 26.05 (or 26.05.3): build unless cached, print the prefix
#   build-slurm.sh --path VERSION   print the prefix it would use, build nothing (exit 1 if not built)
#   build-slurm.sh --list           the versions it has tarballs for
#   build-slurm.sh --has VERSION    exit 0 if it has a tarball for VERSION, 1 if not, 2 if
#                                   VERSION is not one
#
# The tarball is slurm-MAJOR-MINOR-*.tar.xz (SchedMD's release tags, e.g. slurm-26-05-3-1.tar.xz)
# in $RINGSCHED_SLURM_TARBALLS (default: ../shared/slurm beside the checkout), checked against the
# SHA256SUMS file there. The prefix is $RINGSCHED_SLURM_CACHE/slurm-VERSION-SHA (default cache:
# ${XDG_CACHE_HOME:-~/.cache}/ringsched, see below for root), SHA the first 12 hex digits of the tarball's SHA-256:
# reused when it is complete, rebuilt when missing, half-built, made from another tarball or by an
# older recipe of this script. Run as root, the default cache is /var/cache/ringsched instead:
# the test cluster's ordinary users run the client commands and load libslurm from the prefix,
# and root's home (0700) would hide them (their sbatch would then be another Slurm's, or none).
# It holds the installed Slurm (bin/ sbin/ lib/ include/ lib/slurm/) and the configured source
# tree the plugins compile against (source/, configure --with-slurm-src=PREFIX/source).
#
# Built: libslurm, slurmctld, slurmd, slurmstepd, sbatch, scontrol, squeue, srun, scancel, sinfo, sprio,
# the public headers, and the plugins scripts/testcluster.sh's slurm.conf loads (the list below).
# Needs: a C compiler, make, libmunge-dev (scripts/install-deps.sh installs them).
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
tarballs=${RINGSCHED_SLURM_TARBALLS:-$repo_root/../shared/slurm}
if [ "$(id -u)" = 0 ]; then default_cache=/var/cache/ringsched; else default_cache=${XDG_CACHE_HOME:-$HOME/.cache}/ringsched; fi
cache=${RINGSCHED_SLURM_CACHE:-$default_cache}
# Bump when the programs, plugins or options below change: a prefix built by another recipe is rebuilt.
recipe=2
umask 022  # the prefix is read by every user of the test cluster
jobs=${RINGSCHED_SLURM_JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { echo "build-slurm: $*" >&2; }
die() { echo "build-slurm: error: $*" >&2; exit 1; }

# Client commands and daemons (directories of Slurm's src/), in build order.
programs=(api slurmctld slurmd sbatch scontrol squeue srun scancel sinfo sprio)
# Plugins (directories of src/plugins/) that the daemons and commands of a test cluster load; those
# a release lacks are skipped. By 24.11 the "none" plugins are gone (an unset type, or "x/none",
# means none), and the daemons insist on others: prep/script, mpi/pmi2, certgen/script (25.11),
# compress/none (26.05), ...; a missing one is fatal at start.
plugins=(auth/munge cred/munge hash/k12 hash/sha3 tls/none certgen/script certmgr/script
  compress/none url_parser/internal prep/script mpi/pmi2 select/cons_tres gres/gpu gpu/generic
  topology/default topology/flat topology/tree sched/backfill priority/basic proctrack/linuxproc)

tarball_of() {  # VERSION (22.05-style or 22.05.8-style) -> newest matching tarball
  local v=$1 major minor micro pattern
  IFS=. read -r major minor micro <<< "$v"
  case "$major.$minor" in [0-9][0-9].[0-9][0-9]) ;; *) die "version '$v': expected MAJOR.MINOR[.MICRO], e.g. 26.05";; esac
  pattern="slurm-$major-$minor-${micro:+$micro-}*.tar.xz"
  # shellcheck disable=SC2086
  { (cd "$tarballs" 2>/dev/null && ls -1 $pattern 2>/dev/null) || true; } | sort -V | tail -n 1
}

cmd=build
case ${1:-} in
  --path) cmd=path; shift ;;
  --list)
    { (cd "$tarballs" 2>/dev/null && ls -1 slurm-*.tar.xz 2>/dev/null) || true; } |
      sed -n 's/^slurm-\([0-9]*\)-\([0-9]*\)-\([0-9]*\)-.*\.tar\.xz$/\1.\2.\3/p' | sort -V
    exit 0 ;;
  --has)
    [ $# -eq 2 ] || die "usage: build-slurm.sh --has VERSION"
    has=$(tarball_of "$2") || exit 2  # not a version: tarball_of said why
    [ -n "$has" ]
    exit ;;
  -h|--help|help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 1 ] || die "usage: build-slurm.sh [--path] VERSION | --has VERSION | --list | --help"
version=$1
name=$(tarball_of "$version")
[ -n "$name" ] || die "no slurm-${version//./-}-*.tar.xz in $tarballs (build-slurm.sh --list; RINGSCHED_SLURM_TARBALLS)"
tarball=$tarballs/$name
sha=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ -f "$tarballs/SHA256SUMS" ]; then
  expected=$(awk -v f="$name" '$2 == f || $2 == "*" f {print $1}' "$tarballs/SHA256SUMS")
  [ -z "$expected" ] || [ "$expected" = "$sha" ] ||
    die "$tarball: SHA-256 $sha does not match SHA256SUMS ($expected)"
fi
release=$(echo "$name" | sed -n 's/^slurm-\([0-9]*\)-\([0-9]*\)-\([0-9]*\)-.*/\1.\2.\3/p')
major_minor=${release%.*}
prefix=$cache/slurm-$major_minor-${sha:0:12}
marker=$prefix/.ringsched-built

built() { [ -f "$marker" ] && grep -qx "recipe=$recipe" "$marker"; }
if [ "$cmd" = path ]; then
  echo "$prefix"
  built
  exit
fi

mkdir -p "$cache"
# One build per prefix at a time: a second caller waits for the first and then reuses its work.
exec 9>"$prefix.lock"
if ! flock -n 9; then
  log "waiting for another build of $prefix"
  flock 9
fi
if built; then
  echo "$prefix"
  exit 0
fi
[ -f "$marker" ] && log "$prefix was built by an older recipe of this script: building it again"

for other in "$cache"/slurm-"$major_minor"-*; do
  [ -d "$other" ] && [ "$other" != "$prefix" ] && log "note: $other is from another tarball (remove it when unused)"
done

# The prefix is compiled into the binaries (plugin and configuration paths), so Slurm is built
# where it will stay; a half-built prefix (no marker) is removed first.
rm -rf "$prefix"
mkdir -p "$prefix/source"
buildlog=$prefix/build.log
t_start=$(date +%s)
log "Slurm $release from $name into $prefix (log: $buildlog)"
tar -xJf "$tarball" -C "$prefix/source" --strip-components=1
src=$prefix/source
mkdir -p "$src/obj"

# Only what a test cluster on 127.0.0.1 needs; optional libraries off so that the build is the
# same on every machine (lz4 is left to detection: --without-lz4 breaks 26.05's configure).
# -O0 and no static libraries: these daemons serve tests, and each halves the compile time.
t0=$(date +%s)
log "configure"
(cd "$src/obj" && ../configure --prefix="$prefix" --sysconfdir="$prefix/etc" \
  --enable-multiple-slurmd --with-munge --disable-dependency-tracking --disable-static \
  --disable-optimizations \
  --disable-x11 --disable-sview --disable-slurmrestd --disable-pam \
  --without-pmix --without-hdf5 --without-ucx --without-rdkafka --without-s2n --without-lua \
  --without-nvml --without-rsmi --without-oneapi --without-freeipmi --without-jwt \
  --without-libcurl --without-hwloc --without-readline --without-bpf --without-ofed \
  --without-yaml --without-json >>"$buildlog" 2>&1) ||
  { tail -n 20 "$buildlog" >&2; die "configure failed (see $buildlog)"; }
t_configure=$(($(date +%s) - t0))

t0=$(date +%s)
make_in() {  # DIR TARGET...
  local dir=$1
  shift
  make -C "$src/obj/$dir" -j"$jobs" "$@" >>"$buildlog" 2>&1 ||
    { tail -n 30 "$buildlog" >&2; die "make $* in $dir failed (see $buildlog)"; }
}
for p in "${programs[@]}"; do
  log "make src/$p"
  make_in "src/$p"
done
built_plugins=()
helpers_done=" "
for p in "${plugins[@]}"; do
  [ -f "$src/obj/src/plugins/$p/Makefile" ] || continue
  # The category's helper libraries (cred/common, hash/common_xkcp, ...) first: not every
  # plugin's Makefile builds them on demand.
  category=${p%%/*}
  if [ "${helpers_done/ $category /}" = "$helpers_done" ]; then
    for helper in "$src/obj/src/plugins/$category"/common*/Makefile; do
      [ -f "$helper" ] && make_in "src/plugins/$category/$(basename "$(dirname "$helper")")"
    done
    helpers_done="$helpers_done$category "
  fi
  make_in "src/plugins/$p"
  built_plugins+=("$p")
done
log "plugins: ${built_plugins[*]}"
t_make=$(($(date +%s) - t0))

t0=$(date +%s)
log "install"
make_in . install-pkgincludeHEADERS
for p in "${programs[@]}"; do make_in "src/$p" install; done
for p in "${built_plugins[@]}"; do make_in "src/plugins/$p" install; done
t_install=$(($(date +%s) - t0))
"$prefix/sbin/slurmctld" -V >/dev/null || die "the built slurmctld does not run"

{
  echo "release=$release"
  echo "recipe=$recipe"
  echo "tarball=$name"
  echo "sha256=$sha"
  echo "configure_s=$t_configure"
  echo "make_s=$t_make"
  echo "install_s=$t_install"
  echo "total_s=$(($(date +%s) - t_start))"
} > "$marker"
log "built Slurm $release in $(($(date +%s) - t_start)) s (configure $t_configure s, make $t_make s, install $t_install s)"
echo "$prefix"
