#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetches the Debian source of the installed Slurm into ./slurm-src/ (at the repository root, or
# the directory given as $1) and configures it with Debian's own flags, so that the plugins can
# include Slurm's internal headers (obj/config.h, src/slurmctld/slurmctld.h, ...) for exactly the
# installed version. ./slurm-src/source is a symlink to the extracted tree; configure.ac probes it.
# Idempotent: a tree that is already configured for the installed version is left alone.
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$repo_root/slurm-src}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

installed=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || true)
if [ -z "$installed" ]; then
  echo "fetch-slurm-src: slurmctld is not installed (run scripts/install-deps.sh)" >&2
  exit 1
fi
upstream=${installed%%-*}   # 22.05.8-4+deb12u3 -> 22.05.8

if [ -f "$dest/source/obj/config.h" ] && [ -f "$dest/source/src/slurmctld/slurmctld.h" ] &&
   grep -q "^#define SLURM_VERSION_STRING \"$upstream\"" "$dest/source/obj/config.h" &&
   [ "$(cat "$dest/.debian-version" 2>/dev/null)" = "$installed" ]; then
  echo "fetch-slurm-src: $dest/source is configured for Slurm $installed"
  exit 0
fi

cd "$dest"
tree=$(find . -maxdepth 1 -type d -name "slurm-wlm-$upstream*" | head -n1)
if [ -z "$tree" ]; then
  echo "fetch-slurm-src: apt-get source slurm-wlm=$installed into $dest"
  apt-get source -qq "slurm-wlm=$installed" >/dev/null
  tree=$(find . -maxdepth 1 -type d -name "slurm-wlm-$upstream*" | head -n1)
fi
if [ -z "$tree" ]; then
  echo "fetch-slurm-src: apt-get source produced no slurm-wlm-$upstream tree in $dest" >&2
  exit 1
fi
tree=$(cd "$tree" && pwd)
ln -sfn "$tree" "$dest/source"

# Debian's configure flags (debian/rules, override_dh_auto_configure; pmix is left out because only
# its own plugin uses it). Only obj/config.h and the generated headers matter for our plugins, and
# the flags decide what they say (MULTIPLE_SLURMD, paths), so they must match the installed build.
cd "$tree"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
mkdir -p obj
cd obj
echo "fetch-slurm-src: configuring $tree (Debian flags)"
../configure -q \
  --prefix=/usr --sysconfdir=/etc/slurm --localstatedir=/var \
  --libdir="/usr/lib/$multiarch" --libexecdir="/usr/lib/$multiarch" \
  --includedir=/usr/include \
  --with-pam_dir="/lib/$multiarch/security" \
  --with-munge --enable-pam --without-rpath --disable-debug --enable-multiple-slurmd \
  --with-pmix=no SUCMD=/bin/su SLEEP_CMD=/bin/sleep >/dev/null 2>configure.err ||
  { cat configure.err >&2; exit 1; }
test -f config.h
echo "$installed" > "$dest/.debian-version"
echo "fetch-slurm-src: ready: $dest/source (Slurm $(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' config.h))"
