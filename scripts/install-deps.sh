#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian package ringsched needs to build, test and run its demo.
# Idempotent: packages already present are left as they are. Run as root (CI and the demo do).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

packages=(
  # build
  build-essential autoconf autoconf-archive automake libtool pkg-config dpkg-dev
  # libraries used by the policy library, the runtime and the tests
  libjansson-dev libhwloc-dev libcppunit-dev libglpk-dev libssl-dev
  # Slurm 22.05 and its build headers (the plugins are compiled against the source tree)
  slurmctld slurmd slurm-client munge libslurm-dev libmunge-dev libpam0g-dev
  # plots, ring-runtime comparisons, leak checks
  gnuplot-nox libopenmpi-dev openmpi-bin libgloo-dev valgrind
  # the PyTorch integration (python/, CPU builds of Debian's torch 1.13) and its data set
  python3 python3-dev python3-torch libtorch-dev pybind11-dev python3-torchvision python3-sklearn
  # misc tools the harness uses
  procps psmisc
  # the man pages' check (test_man_pages: groff -man -ww)
  groff-base
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# apt-get source needs a deb-src entry for the Slurm source tree.
need_src=0
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  need_src=1
fi

if [ ${#missing[@]} -eq 0 ] && [ $need_src -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ $need_src -eq 1 ]; then
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
  else
    echo "deb-src http://deb.debian.org/debian bookworm main" | $SUDO tee /etc/apt/sources.list.d/ringsched-src.list >/dev/null
  fi
fi

echo "install-deps: installing ${missing[*]:-(source index only)}"
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: done"
