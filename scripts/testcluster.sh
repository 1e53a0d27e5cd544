#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testcluster.sh: a real Slurm cluster on 127.0.0.1 for the tests and the demo.
#
#   testcluster.sh up [--plugins] [--builddir=DIR] [--slurm=VERSION]
#                                                    start munged, slurmctld and 6 slurmd
#   testcluster.sh down                              stop everything this cluster started
#   testcluster.sh status                            print what runs (exit 1 if not up)
#   testcluster.sh restart-ctld                      kill and restart slurmctld (state kept)
#   testcluster.sh env                               print the environment clients need
#
# Nodes: v100-[1-2], p100-[1-2], k80-[1-2], 4 fake GPUs each (gres.conf File=/dev/tty*), one
# slurmd process per node with its own port. With --plugins, priority/ringsched,
# job_submit/ringsched and the ringsched SPANK plugin are loaded from the build directory
# (--builddir, $RINGSCHED_BUILDDIR, or the current directory).
#
# Slurm version: --slurm=22.05 is the installed Slurm (Debian 12's packages); 24.11, 25.11 and
# 26.05 are built from ../shared/slurm into a cache by scripts/build-slurm.sh on first use (about
# 10 minutes on 2 cores). Without --slurm: the Slurm the build directory was configured for
# (configure --with-slurm-src), else the installed one. The other commands use the version the
# cluster was started with; "env" prints its PATH. Clusters of different versions (different
# state directories) run side by side.
#
# Environment:
#   RINGSCHED_CLUSTER_DIR   private state directory (default: <repo>/.run/cluster)
#   RINGSCHED_CLUSTER_PORT  first TCP port (default: derived from the state directory, so that
#                           clusters in different directories do not collide, in 10000..19990,
#                           below the jobs' rendezvous ports and the ephemeral ports); uses
#                           port..port+6
#   RINGSCHED_PROFILES      profile CSV for ringsched.conf (default: <repo>/data/profiles/gavel.csv)
#   RINGSCHED_FEATURES      model feature CSV (default: <repo>/data/model_features.csv)
#
# "up" is idempotent: a cluster already up with the same plugin setting is left running; one with
# the other setting is restarted. Everything is stopped by the PIDs recorded in the state
# directory, never by process name.
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
state=${RINGSCHED_CLUSTER_DIR:-$repo_root/.run/cluster}
mkdir -p "$state"
state=$(cd "$state" && pwd)

installed_plugins=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/slurm-wlm
slurm_plugins=$installed_plugins
node_types=(v100 p100 k80)
nodes_per_type=2
gpus_per_node=4
node_count=$((${#node_types[@]} * nodes_per_type))

if [ -n "${RINGSCHED_CLUSTER_PORT:-}" ]; then
  base_port=$RINGSCHED_CLUSTER_PORT
else
  # Below Linux's ephemeral range (32768 and up), where a port can be taken at any moment by an
  # outgoing connection (a slurmd that cannot bind never registers), and below the jobs' default
  # rendezvous ports (libringrt: 20000..31999).
  base_port=$((10000 + $(printf '%s' "$state" | cksum | cut -d' ' -f1) % 1000 * 10))
fi
case $base_port in ''|*[!0-9]*) echo "testcluster: RINGSCHED_CLUSTER_PORT must be a number" >&2; exit 2;; esac
if [ "$base_port" -lt 1024 ] || [ "$base_port" -gt 65000 ]; then
  echo "testcluster: port $base_port out of range 1024..65000" >&2; exit 2
fi

export SLURM_CONF=$state/slurm.conf
log() { echo "testcluster: $*"; }
die() { echo "testcluster: error: $*" >&2; exit 1; }

# --- Slurm version --------------------------------------------------------------------------------

# Daemons and commands of one Slurm: bin and sbin folders first on PATH, its own plugin folder.
use_slurm_dirs() {
  local bin=$1 sbin=$2
  [ -x "$sbin/slurmctld" ] || { echo "testcluster: no slurmctld in $sbin" >&2; return 1; }
  if [ "$sbin" = /usr/sbin ]; then
    slurm_plugins=$installed_plugins
  else
    slurm_plugins=$(dirname "$sbin")/lib/slurm
  fi
  slurm_bindir=$bin
  slurm_sbindir=$sbin
  export PATH="$bin:$sbin:$PATH"
  slurm_version=$(slurmctld -V | awk '{print $2}')
}

# Whether this cluster's Slurm is at least MAJOR.MINOR.
slurm_at_least() { [ "$(printf '%s\n%s\n' "$1" "${slurm_version:-0}" | sort -V | head -n 1)" = "$1" ]; }

installed_slurm_version() { [ -x /usr/sbin/slurmctld ] && /usr/sbin/slurmctld -V | awk '{print $2}'; }

# --slurm=VERSION: the installed Slurm when it is that version, else a release from
# scripts/build-slurm.sh (built into its cache on first use).
use_slurm_version() {
  local want=$1 installed prefix
  case $want in [0-9][0-9].[0-9][0-9]|[0-9][0-9].[0-9][0-9].[0-9]*) ;; *) die "--slurm=$want: expected a version such as 26.05";; esac
  installed=$(installed_slurm_version 2>/dev/null || true)
  if [ -n "$installed" ] && { [ "$installed" = "$want" ] || [ "${installed%.*}" = "$want" ]; }; then
    use_slurm_dirs /usr/bin /usr/sbin || die "the installed Slurm cannot be used"
    return
  fi
  log "Slurm $want: scripts/build-slurm.sh $want (built once, then cached)"
  prefix=$("$repo_root/scripts/build-slurm.sh" "$want") || die "Slurm $want is not available (installed: ${installed:-none})"
  use_slurm_dirs "$prefix/bin" "$prefix/sbin" || die "scripts/build-slurm.sh $want gave no usable Slurm"
}

# The Slurm the build directory's plugins were configured for ("" if it has none).
builddir_slurm() {  # BUILDDIR VARIABLE
  [ -f "$1/plugins/Makefile" ] || return 0
  sed -n "s/^$2 = //p" "$1/plugins/Makefile" | head -n 1
}

# The Slurm this cluster was started with, for the commands after "up" (daemons are stopped by
# PID even when that Slurm is gone).
load_slurm_choice() {
  local bin=/usr/bin sbin=/usr/sbin
  [ -f "$state/slurm.dirs" ] && read -r bin sbin < "$state/slurm.dirs"
  use_slurm_dirs "$bin" "$sbin" || true
}

node_names() {
  local t i
  for t in "${node_types[@]}"; do
    for ((i = 1; i <= nodes_per_type; i++)); do echo "$t-$i"; done
  done
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$state/$1.pid" 2>/dev/null || true; }

# --- configuration --------------------------------------------------------------------------------

write_config() {
  local plugins=$1 builddir=$2
  mkdir -p "$state/ctld" "$state/log" "$state/spool" "$state/munge" "$state/plugins"
  chmod 0711 "$state/munge"  # other users reach the socket (tests submit as nobody); the key stays 0600

  local plugindir=$slurm_plugins priority=priority/basic jobsubmit=""
  rm -f "$state/plugins/"*.so
  : > "$state/plugstack.conf"
  if [ "$plugins" = 1 ]; then
    local so
    for so in priority/ringsched/.libs/priority_ringsched.so \
              job_submit/ringsched/.libs/job_submit_ringsched.so \
              spank/ringsched/.libs/spank_ringsched.so; do
      [ -f "$builddir/plugins/$so" ] || die "$builddir/plugins/$so not built (make in the build dir, or --builddir=DIR)"
      # A copy, not a link: sbatch run by any user loads the SPANK plugin from here.
      cp -f "$builddir/plugins/$so" "$state/plugins/$(basename "$so")"
    done
    plugindir="$state/plugins:$slurm_plugins"
    priority=priority/ringsched
    jobsubmit="JobSubmitPlugins=ringsched"
    echo "optional $state/plugins/spank_ringsched.so" > "$state/plugstack.conf"
  fi
  echo "$plugins" > "$state/plugins.flag"

  local profiles=${RINGSCHED_PROFILES:-$repo_root/data/profiles/gavel.csv}
  # ringsched.conf is (re)written only if missing, so that a test's edits survive restarts.
  if [ ! -f "$state/ringsched.conf" ]; then
    cat > "$state/ringsched.conf" <<EOF
# ringsched.conf of the local test cluster (see ringsched.conf(5))
Policy=combined
ReplanInterval=5
RestartCost=30
MinGainMultiple=2
MinResizeInterval=60
Samples=32
ProfileFiles=$profiles
FeatureFile=${RINGSCHED_FEATURES:-$repo_root/data/model_features.csv}
PlanFile=$state/plan.json
MaxGpusPerJob=16
EOF
  fi

  local host
  host=$(hostname -s)
  {
    echo "# Generated by scripts/testcluster.sh; settings from DESIGN.md section 4."
    echo "ClusterName=ringtest"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$base_port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$state/munge/munge.socket,cred_expire=5"
    echo "MailProg=/bin/true"
    echo "PluginDir=$plugindir"
    echo "PlugStackConfig=$state/plugstack.conf"
    echo "StateSaveLocation=$state/ctld"
    echo "SlurmdSpoolDir=$state/spool/%n"
    echo "SlurmctldPidFile=$state/slurmctld.pid"
    echo "SlurmdPidFile=$state/slurmd-%n.pid"
    echo "SlurmctldLogFile=$state/log/slurmctld.log"
    echo "SlurmdLogFile=$state/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SlurmdParameters=config_overrides"
    echo "SchedulerType=sched/backfill"
    echo "SchedulerParameters=sched_interval=2,bf_interval=2"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "PriorityType=$priority"
    [ -n "$jobsubmit" ] && echo "$jobsubmit"
    echo "GresTypes=gpu"
    echo "DefMemPerCPU=100"
    echo "JobRequeue=1"
    echo "KillWait=5"
    echo "MinJobAge=120"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "MaxJobCount=20000"
    local t i port=$((base_port + 1))
    for t in "${node_types[@]}"; do
      for ((i = 1; i <= nodes_per_type; i++)); do
        echo "NodeName=$t-$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=8 RealMemory=8000 Gres=gpu:$t:$gpus_per_node Feature=$t State=UNKNOWN"
        port=$((port + 1))
      done
    done
    echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } > "$state/slurm.conf"

  # Slurm 24.11 and later start a cgroup plugin in slurmd even with proctrack/linuxproc and no
  # task plugin (22.05 does not, and has no "disabled").
  if slurm_at_least 24.11; then
    echo "CgroupPlugin=disabled" > "$state/cgroup.conf"
  else
    rm -f "$state/cgroup.conf"
  fi

  {
    echo "AutoDetect=off"
    for t in "${node_types[@]}"; do
      for ((i = 1; i <= nodes_per_type; i++)); do
        echo "NodeName=$t-$i Name=gpu Type=$t File=/dev/tty[0-$((gpus_per_node - 1))]"
      done
    done
  } > "$state/gres.conf"
}

# --- daemons --------------------------------------------------------------------------------------

start_munge() {
  if pid_alive "$(pid_of munged)"; then return; fi
  if [ ! -s "$state/munge/munge.key" ]; then
    (umask 077; dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 0600 "$state/munge/munge.key"
  munged --force --socket="$state/munge/munge.socket" --key-file="$state/munge/munge.key" \
    --pid-file="$state/munged.pid" --log-file="$state/log/munged.log" \
    --seed-file="$state/munge/munged.seed" 2>>"$state/log/munged.log" ||
    die "munged did not start (see $state/log/munged.log)"
}

start_ctld() {
  if pid_alive "$(pid_of slurmctld)"; then return; fi
  local clear=$1
  # -c: a fresh cluster starts without the previous run's jobs; restart-ctld keeps them.
  slurmctld ${clear:+-c} -f "$state/slurm.conf" 2>>"$state/log/slurmctld.start" ||
    die "slurmctld did not start (see $state/log/slurmctld.log)"
  local tries
  for ((tries = 0; tries < 100; tries++)); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && return
    sleep 0.1
  done
  die "slurmctld not answering after 10 s (see $state/log/slurmctld.log)"
}

start_slurmds() {
  local n
  for n in $(node_names); do
    mkdir -p "$state/spool/$n"
    if pid_alive "$(pid_of "slurmd-$n")"; then continue; fi
    slurmd -f "$state/slurm.conf" -N "$n" 2>>"$state/log/slurmd-$n.start" ||
      die "slurmd $n did not start (see $state/log/slurmd-$n.log)"
  done
}

# A daemon that exited (a port taken by another program, a bad config) fails the start at once,
# with its last log line, instead of after the whole wait.
check_daemons_alive() {
  local waited=$1 name logf
  for name in slurmctld $(for n in $(node_names); do echo "slurmd-$n"; done); do
    logf=$state/log/$name.log
    if [ -s "$state/$name.pid" ] && pid_alive "$(pid_of "$name")"; then continue; fi
    # the PID file appears once the daemon has settled: give it a few seconds
    [ -s "$state/$name.pid" ] || [ "$waited" -ge 5 ] || continue
    die "$name exited: $(grep -h -i 'error\|fatal' "$logf" "$state/log/$name.start" 2>/dev/null | tail -n 1) (see $logf)"
  done
}

wait_ready() {
  local t0=$SECONDS deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    if timeout 10 srun -N"$node_count" -t 1 --quiet true >/dev/null 2>&1; then return; fi
    check_daemons_alive $((SECONDS - t0))
    # Nodes registered before the config settled can stay down: return them to service.
    scontrol update NodeName=ALL State=RESUME >/dev/null 2>&1 || true
    sleep 0.5
  done
  die "cluster not ready after 60 s (srun -N$node_count true fails; see $state/log/)"
}

# Stops daemons by their recorded PIDs, all at once: TERM, then KILL after a 10 s grace period.
stop_pids() {
  local name pids=()
  for name in "$@"; do pids+=("$(pid_of "$name")"); done
  stop_processes "${pids[@]}"
  for name in "$@"; do rm -f "$state/$name.pid"; done
}

# TERM to each PID alive, KILL to those still alive 10 s later.
stop_processes() {
  local pids=() pid i
  for pid in "$@"; do
    if pid_alive "$pid"; then kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for pid in "${pids[@]}"; do pid_alive "$pid" && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
  return 0
}

# slurmstepd processes of this cluster (job steps) keep sockets in its spool directory.
stepd_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    if ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $state/spool/"; then basename "$p"; fi
  done
}

# Daemons started with this cluster's slurm.conf. "scontrol reconfigure" makes slurmctld and each
# slurmd (Slurm 23.11 and later) start a new process that writes the PID file only after a
# moment: a "down" in that window stopped the old PIDs, and the new slurmctld outlived the test
# that reconfigured (seen with 25.11).
conf_pids() {
  local p
  for p in /proc/[0-9]*; do
    case $(cat "$p/comm" 2>/dev/null) in slurmctld | slurmd) ;; *) continue ;; esac
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "-f $state/slurm.conf " && basename "$p"
  done
  return 0
}

cmd_down() {
  if pid_alive "$(pid_of slurmctld)"; then
    scancel --quiet --full --state=RUNNING "--user=$(id -un)" 2>/dev/null || true
    scancel --quiet "--user=$(id -un)" 2>/dev/null || true
  fi
  local n
  # slurmd before slurmctld (DESIGN 4).
  stop_pids $(for n in $(node_names); do echo "slurmd-$n"; done)
  stop_pids slurmctld
  local p
  # shellcheck disable=SC2046 # one PID per word
  stop_processes $(conf_pids)
  for p in $(stepd_pids); do kill -KILL "$p" 2>/dev/null || true; done
  stop_pids munged
  rm -f "$state/plan.json"
  log "down ($state)"
}

cmd_up() {
  local plugins=0 builddir=${RINGSCHED_BUILDDIR:-$PWD} want=""
  local a
  for a in "$@"; do
    case $a in
      --plugins) plugins=1 ;;
      --no-plugins) plugins=0 ;;
      --builddir=*) builddir=${a#--builddir=} ;;
      --slurm=*) want=${a#--slurm=} ;;
      *) die "up: unknown option $a (see --help)" ;;
    esac
  done
  builddir=$(cd "$builddir" && pwd)
  local t0=$SECONDS
  local built_for built_sbin
  built_for=$(builddir_slurm "$builddir" SLURM_VERSION)
  built_sbin=$(builddir_slurm "$builddir" SLURM_SBINDIR)
  if [ -n "$want" ]; then
    use_slurm_version "$want"
  elif [ -n "$built_sbin" ]; then
    use_slurm_dirs "$(builddir_slurm "$builddir" SLURM_BINDIR)" "$built_sbin" ||
      die "the Slurm $builddir was configured for is gone (scripts/build-slurm.sh $built_for, then make)"
  else
    use_slurm_dirs /usr/bin /usr/sbin || die "no Slurm installed (scripts/install-deps.sh) and no --slurm=VERSION"
  fi
  if [ "$plugins" = 1 ] && [ "$built_for" != "$slurm_version" ]; then
    die "the plugins in $builddir are built for Slurm ${built_for:-(none)}, this cluster would run $slurm_version (configure a build folder with --with-slurm-src of that version; scripts/test.sh --slurm=VERSION does)"
  fi
  if cluster_up && [ "$(cat "$state/plugins.flag" 2>/dev/null)" = "$plugins" ] &&
     [ "$(cat "$state/slurm.dirs" 2>/dev/null)" = "$slurm_bindir $slurm_sbindir" ]; then
    log "already up ($state, plugins=$plugins, Slurm $slurm_version)"
    return
  fi
  # Stopped with the Slurm it was started with.
  (load_slurm_choice; cmd_down >/dev/null)
  echo "$slurm_bindir $slurm_sbindir" > "$state/slurm.dirs"
  write_config "$plugins" "$builddir"
  start_munge
  start_ctld 1
  start_slurmds
  wait_ready
  log "up in $((SECONDS - t0)) s: Slurm $slurm_version, $node_count nodes ($(node_names | tr '\n' ' '| sed 's/ $//')), plugins=$plugins, port $base_port, $state"
}

cluster_up() {
  pid_alive "$(pid_of munged)" && pid_alive "$(pid_of slurmctld)" || return 1
  local n
  for n in $(node_names); do pid_alive "$(pid_of "slurmd-$n")" || return 1; done
}

cmd_status() {
  local n s=0
  for n in munged slurmctld $(for x in $(node_names); do echo "slurmd-$x"; done); do
    if pid_alive "$(pid_of "$n")"; then
      printf '%-14s running (pid %s)\n' "$n" "$(pid_of "$n")"
    else
      printf '%-14s stopped\n' "$n"; s=1
    fi
  done
  echo "state: $state  port: $base_port  plugins: $(cat "$state/plugins.flag" 2>/dev/null || echo '?')  Slurm: ${slurm_version:-?} ($slurm_sbindir)"
  if [ $s = 0 ]; then sinfo -N -o '%N %T %G' 2>/dev/null || s=1; fi
  return $s
}

cmd_restart_ctld() {
  pid_alive "$(pid_of munged)" || die "cluster is not up"
  stop_pids slurmctld
  start_ctld ""
  log "slurmctld restarted (pid $(pid_of slurmctld))"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) load_slurm_choice; cmd_down ;;
  status) load_slurm_choice; cmd_status ;;
  restart-ctld) load_slurm_choice; cmd_restart_ctld ;;
  env) load_slurm_choice; echo "export SLURM_CONF=$state/slurm.conf"
       [ -z "${slurm_bindir:-}" ] || echo "export PATH=$slurm_bindir:$slurm_sbindir:\$PATH" ;;
  -h|--help|help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *) echo "usage: $(basename "$0") up [--plugins] [--builddir=DIR] [--slurm=VERSION] | down | status | restart-ctld | env | --help" >&2; exit 2 ;;
esac
