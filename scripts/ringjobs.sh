#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ringjobs.sh: run a workload of real ring-allreduce training jobs on the local Slurm cluster and
# measure it. Used by scripts/run-demo.sh (the main job) and bench/ab_slurm.sh (the A/B run).
#
#   ringjobs.sh run --trace FILE --mode ringsched|stock --out DIR [--builddir DIR] [--timeout S]
#                   [--as-users]
#     --as-users (root only): each job is submitted by, and runs as, the ordinary user ring-USER,
#     as on a real site (USER: the row's user column, default "user"; made with useradd -m if
#     missing, and then listed in DIR/users-created). The programs are staged in DIR/stage; each
#     job's checkpoints and log are its user's alone. DIR must be a folder those users can enter.
#   ringjobs.sh table DIR         the JCT table and the summary of a finished run
#   ringjobs.sh workdir DIR PREFIX  print a folder for a run as users: DIR (made, mode 755) when
#                                 ordinary users can enter it, else a new /tmp/PREFIX.XXXXXX (the
#                                 checkout is below a private folder such as root's home)
#   ringjobs.sh remove-users DIR...  remove (userdel -r) the users that runs in DIR... made
#   ringjobs.sh conf MAX_GPUS     print the ringsched.conf of a time-compressed run (the demo and
#                                 the A/B run): replanning every 3 s, resizes paying off within
#                                 seconds; PlanFile in $RINGSCHED_CLUSTER_DIR
#
# The trace is DESIGN 5's format: job_id,submit_s,model,gpus,iterations[,min_gpus,max_gpus,
# elastic,user,spb[,program]]. Each job is `ringrun -- ringrun-train --emulate-model=MODEL`: every
# iteration takes the time the Gavel profile gives for the GPU type and count it runs on, while the
# allreduce between its workers is real. With program "torch" the job is a real PyTorch job
# instead: python/examples/train_digits.py (a CNN on load_digits, DDP on libringrt's "ringrt"
# backend, elastic; SPB with spb=1) for `iterations` steps, scheduled as MODEL. The table shows
# each job's final loss (and test accuracy for PyTorch jobs) next to its JCT.
#   ringsched: sbatch --ring-model/--ring-gpus/--ring-iters (elastic jobs --ring-elastic), no gres:
#              the plugins pick type and count and resize elastic jobs while they run.
#   stock:     sbatch --gres=gpu:GPUS (untyped): cons_tres + backfill + the default priority.
# The cluster must already be up with the matching plugin setting (scripts/testcluster.sh).
# Times come from each job's events file (ringrun(1)); JCT = finish - submit.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "ringjobs: error: $*" >&2; exit 1; }

cmd_run() {
  local trace="" mode="" out="" builddir="${RINGSCHED_BUILDDIR:-$repo/build}" timeout=600 as_users=0
  while [ $# -gt 0 ]; do
    case $1 in
      --trace) trace=$2; shift 2 ;;
      --mode) mode=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --builddir) builddir=$2; shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      --as-users) as_users=1; shift ;;
      *) die "run: unknown option $1" ;;
    esac
  done
  [ -f "$trace" ] || die "run: --trace FILE missing or unreadable: '$trace'"
  case $mode in ringsched|stock) ;; *) die "run: --mode must be ringsched or stock, not '$mode'" ;; esac
  [ -n "$out" ] || die "run: --out DIR missing"
  case $timeout in ''|*[!0-9]*) die "run: --timeout must be seconds" ;; esac
  builddir=$(cd "$builddir" && pwd)
  local ringrun=$builddir/wrapper/ringrun train=$builddir/wrapper/ringrun-train
  [ -x "$ringrun" ] && [ -x "$train" ] || die "run: $ringrun or $train not built"
  local profiles=${RINGSCHED_PROFILES:-$repo/data/profiles/gavel.csv}
  [ $as_users = 0 ] || [ "$(id -u)" -eq 0 ] || die "run: --as-users makes and switches to users: run as root"
  rm -rf "$out"
  mkdir -p "$out/jobs" "$out/logs" "$out/ck"
  out=$(cd "$out" && pwd)
  echo "$mode" > "$out/mode"
  local pythonpath=$builddir/python/site digits=$repo/python/examples/train_digits.py
  if [ $as_users = 1 ]; then
    # The jobs' users read the staged programs and scripts and write only below their own folders.
    chmod 755 "$out" "$out/jobs" "$out/logs" "$out/ck"
    runuser -u nobody -- test -x "$out" ||
      die "run: --as-users: ordinary users cannot enter $out (a folder above it is private); pick another --out"
    "$repo/scripts/stage-programs.sh" "$builddir" "$out/stage"
    ringrun=$out/stage/ringrun train=$out/stage/ringrun-train pythonpath=$out/stage/site digits=$out/stage/train_digits.py
    # The staged gavel.csv unless the run names other profiles.
    if [ "$profiles" -ef "$repo/data/profiles/gavel.csv" ]; then
      profiles=$out/stage/gavel.csv
    else
      cp "$profiles" "$out/stage/profiles.csv" && chmod 644 "$out/stage/profiles.csv"
      profiles=$out/stage/profiles.csv
    fi
  fi

  # Validate the whole trace before submitting anything.
  # With --as-users the user column names the account ring-USER (ensure_user): lower-case letters,
  # digits, '_' and '-' (trace users are often hashes such as 0e4a51), at most 27 characters.
  awk -F, -v users=$as_users 'NR == 1 { next } /^#/ || NF == 0 { next }
    users && NF >= 9 && $9 != "" && ($9 !~ /^[a-z0-9][a-z0-9_-]*$/ || length($9) > 27) {
      printf "ringjobs: %s line %d: user \"%s\" cannot name an account ring-USER (a-z, 0-9, _ and -, " \
             "at most 27 characters)\n", FILENAME, NR, $9 > "/dev/stderr"; bad = 1; next }
    NF < 5 || $2 !~ /^[0-9.]+$/ ||
    $4 !~ /^[0-9]+$/ || $5 !~ /^[0-9]+$/ || $3 !~ /^[A-Za-z0-9_.-]+$/ ||
    $1 !~ /^[A-Za-z0-9_.-]+$/ || (NF >= 7 && ($6 !~ /^[0-9]+$/ || $7 !~ /^[0-9]+$/)) {
      printf "ringjobs: %s line %d: malformed row: %s\n", FILENAME, NR, $0 > "/dev/stderr"; bad = 1 }
    END { exit bad }' "$trace" || die "run: bad trace $trace"

  local t0 line
  t0=$(date +%s.%N)
  echo "$t0" > "$out/t0"
  local rows=()
  while IFS= read -r line; do rows+=("$line"); done < <(awk -F, 'NR > 1 && !/^#/ && NF >= 5' "$trace" | sort -t, -k2,2g)
  echo "ringjobs: $mode: submitting ${#rows[@]} jobs from $trace"
  local monitor_pid
  monitor "$out" "${#rows[@]}" "$timeout" & monitor_pid=$!
  local r
  for r in "${rows[@]}"; do
    IFS=, read -r id submit model gpus iters min max elastic user spb program <<<"$r"
    min=${min:-$gpus}; max=${max:-$gpus}; elastic=${elastic:-0}; spb=${spb:-0}; program=${program:-ringrun-train}
    local account=""
    [ $as_users = 0 ] || account=$(ensure_user "ring-${user:-user}" "$out")
    local now wait
    now=$(date +%s.%N)
    wait=$(awk -v t0="$t0" -v s="$submit" -v n="$now" 'BEGIN { w = t0 + s - n; print (w > 0 ? w : 0) }')
    sleep "$wait"
    local name=j$id script=$out/jobs/j$id.sh
    if [ "$program" = torch ]; then
      [ -f "$builddir/python/site/ringsched/torch/_ringrt.so" ] || die "run: $name is a PyTorch job but $builddir has no ringsched.torch"
      {
        echo "#!/bin/sh"
        [ $as_users = 0 ] || echo "export LD_LIBRARY_PATH=$out/stage/lib"
        echo "export PYTHONPATH=$pythonpath"
        echo "exec $ringrun --ckpt-dir=$out/ck/$name \\"
        echo "  -- ${PYTHON:-/usr/bin/python3} $digits --steps=$iters --ckpt-every=50 --pace=0.1$([ "$spb" = 1 ] && echo ' --spb')"
      } > "$script"
    else
      {
        echo "#!/bin/sh"
        [ $as_users = 0 ] || echo "export LD_LIBRARY_PATH=$out/stage/lib"
        echo "exec $ringrun --model=$model --profiles=$profiles --report=$out/ck/$name/measured.csv --ckpt-dir=$out/ck/$name \\"
        echo "  -- $train --steps=$iters --log-every=100000 --emulate-model=$model$([ "$spb" = 1 ] && echo ' --spb')"
      } > "$script"
    fi
    chmod +x "$script"
    local args=(--parsable -J "$name" -o "$out/logs/$name.out" --open-mode=append --requeue)
    if [ "$mode" = ringsched ]; then
      args+=(--ring-model="$model" --ring-gpus="$min-$max" --ring-iters="$iters")
      if [ "$elastic" = 1 ]; then args+=(--ring-elastic); else args+=(--ring-fixed); fi
      [ "$spb" = 1 ] && args+=(--ring-spb)
    else
      args+=(--gres=gpu:"$gpus")
    fi
    local jid submit_cmd=(sbatch)
    if [ -n "$account" ]; then
      # The job's checkpoint folder and log are its user's alone; root (this script) reads them.
      install -d -m 700 -o "$account" "$out/ck/$name"
      install -m 600 -o "$account" /dev/null "$out/logs/$name.out"
      submit_cmd=(runuser -u "$account" -- sbatch)
    fi
    if ! jid=$(cd / && "${submit_cmd[@]}" "${args[@]}" "$script" 2>"$out/logs/$name.sbatch.err"); then
      echo "ringjobs: sbatch of $name refused: $(cat "$out/logs/$name.sbatch.err")"
      echo "$name refused" >> "$out/refused"
      continue
    fi
    printf '%s %s %s %s %s %s %s %s\n' "$name" "$jid" "$(date +%s.%N)" "$model" "$gpus" "$min-$max" "$elastic" \
      "$(id -un "${account:-$(id -u)}")" >> "$out/submitted"
  done
  wait "$monitor_pid" || true
  merge_reports "$out"
  cmd_table "$out"
}

# User NAME made an ordinary user of this machine (useradd -m) if missing, and then listed in
# OUT/users-created (for whoever wants to remove it afterwards); prints the name.
ensure_user() {
  local name=$1 out=$2
  [[ $name =~ ^[a-z][a-z0-9_-]{0,31}$ ]] || die "run: '$name' is not a user name"
  if ! id -u "$name" >/dev/null 2>&1; then
    useradd -m -s /bin/sh "$name" >/dev/null 2>&1 || die "run: cannot create the user $name (useradd)"
    echo "$name" >> "$out/users-created"
  fi
  echo "$name"
}

# Each ringrun-train job reports its measured speeds into its own folder (a user's, with
# --as-users); DIR/measured.csv gathers them, one header.
merge_reports() {
  local out=$1 f first=1
  for f in "$out"/ck/*/measured.csv; do
    [ -f "$f" ] || continue
    if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
  done > "$out/measured.csv.tmp"
  if [ -s "$out/measured.csv.tmp" ]; then mv "$out/measured.csv.tmp" "$out/measured.csv"; else rm -f "$out/measured.csv.tmp"; fi
}

# Live view: prints each job's state and size changes until every job is done (or timeout).
monitor() {
  local out=$1 total=$2 timeout=$3
  declare -A last
  local start=$SECONDS
  while :; do
    sleep 2
    local t=$((SECONDS - start))
    local lines
    lines=$(squeue -h -o '%i|%j|%T|%b|%D|%N|%f' 2>/dev/null || true)
    local id name state tres nodes nodelist features
    while IFS='|' read -r id name state tres nodes nodelist features; do
      [ -n "$name" ] || continue
      grep -q "^$name $id " "$out/submitted" 2>/dev/null || continue  # not one of this run's jobs
      local gpus type desc
      gpus=$(sed -n 's/.*gpu:\([A-Za-z0-9_-]*:\)\{0,1\}\([0-9]*\).*/\2/p' <<<"$tres")
      type=$(sed -n 's/.*gpu:\([A-Za-z][A-Za-z0-9_-]*\):[0-9].*/\1/p' <<<"$tres")
      # ringsched's jobs carry their type as a feature constraint (ringsched(8)).
      [ -n "$type" ] || [[ ! $features =~ ^[A-Za-z0-9_.-]+$ ]] || type=$features
      gpus=$(( ${gpus:-0} * ${nodes:-1} ))
      desc="$state $gpus x ${type:-any}"
      [ "$state" = RUNNING ] && desc="$desc on $nodelist"
      if [ "${last[$name]:-}" != "$desc" ]; then
        local prev=${last[$name]:-} what=""
        local pg=${prev#* }; pg=${pg%% *}
        if [ "$state" = RUNNING ]; then
          case $prev in
            RUNNING*) what="resized" ;;
            *) if [ -n "${last[ran:$name]:-}" ]; then what="resumed"; else what="placed"; fi ;;
          esac
          last[ran:$name]=1
        elif [ "$state" = PENDING ] && [[ $prev == RUNNING* ]]; then
          what="requeued to resize"
        fi
        if [[ $prev == *RUNNING* || $prev == PENDING* ]] && [ -n "$pg" ] && [ "$pg" != "$gpus" ] && [ "$gpus" -gt 0 ]; then
          if [ "$gpus" -gt "$pg" ]; then what="$what, grown $pg -> $gpus"; else what="$what, shrunk $pg -> $gpus"; fi
        fi
        printf '[%4ds] %-6s %-28s %s\n' "$t" "$name" "$desc" "$what"
        last[$name]=$desc
      fi
    done <<<"$lines"
    local ev
    for ev in "$out"/ck/*/events; do
      [ -f "$ev" ] || continue
      local jn=${ev%/events}; jn=${jn##*/}
      if [ -z "${last[done:$jn]:-}" ] && grep -q -E ' (finished|worker_failed)' "$ev"; then
        last[done:$jn]=1
        if grep -q ' finished' "$ev"; then
          printf '[%4ds] %-6s %-28s %s\n' "$t" "$jn" "finished" "after $(awk '$2 == "workers_started" { n++ } END { print n - 1 }' "$ev") restart(s)"
        else
          printf '[%4ds] %-6s %-28s %s\n' "$t" "$jn" "FAILED" "$(grep -m1 ' worker_failed' "$ev" | cut -d' ' -f3-)"
        fi
      fi
    done
    local done_jobs
    done_jobs=$( { grep -l -E ' (finished|worker_failed)' "$out"/ck/*/events 2>/dev/null || true; } | wc -l)
    local refused=0
    [ -f "$out/refused" ] && refused=$(wc -l < "$out/refused")
    if [ "$done_jobs" -ge $((total - refused)) ] && [ -z "$(squeue -h -o %i 2>/dev/null)" ]; then
      echo "ringjobs: all $done_jobs jobs done after ${t}s"
      return
    fi
    if [ "$t" -ge "$timeout" ]; then
      echo "ringjobs: timeout after ${t}s with $done_jobs of $total jobs done; cancelling the rest"
      local ids
      ids=$(awk '{ print $2 }' "$out/submitted" 2>/dev/null | tr '\n' ' ')
      [ -z "$ids" ] || scancel --quiet $ids 2>/dev/null || true
      return
    fi
  done
}

cmd_table() {
  local out=$1
  [ -f "$out/submitted" ] || die "table: $out/submitted missing (not a ringjobs run folder)"
  local mode
  mode=$(cat "$out/mode" 2>/dev/null || echo "?")
  printf '\n%-6s %-11s %-18s %-6s %-7s %9s %9s %9s %8s %-8s %s\n' job user model asked sizes submit_s end_s jct_s restarts result final
  local name jid sub model gpus range elastic owner
  while read -r name jid sub model gpus range elastic owner; do
    local ev=$out/ck/$name/events end="" result="unfinished" restarts=0 sizes=""
    if [ -f "$ev" ]; then
      end=$(awk '$2 == "finished" { print $1 }' "$ev" | tail -1)
      grep -q ' worker_failed' "$ev" && result="FAILED"
      [ -n "$end" ] && result="ok"
      restarts=$(awk '$2 == "workers_started" { n++ } END { print (n > 0 ? n - 1 : 0) }' "$ev")
      sizes=$(awk '$2 == "workers_started" { s = s (s == "" ? "" : ">") $3 } END { print s }' "$ev")
    fi
    local jct="-" endrel="-" subrel
    subrel=$(awk -v a="$sub" -v t0="$(cat "$out/t0")" 'BEGIN { printf "%.1f", a - t0 }')
    if [ -n "$end" ]; then
      jct=$(awk -v a="$sub" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
      endrel=$(awk -v b="$end" -v t0="$(cat "$out/t0")" 'BEGIN { printf "%.1f", b - t0 }')
    fi
    # The trainer's last word: ringrun-train's last logged loss, train_digits' loss and accuracy.
    local final
    final=$(awk '/^train_digits: done/ { f = "loss " $7 " acc " $9 } /^ringrun-train: step/ { f = "loss " $5 }
                 END { print (f == "" ? "-" : f) }' "$out/logs/$name.out" 2>/dev/null || echo -)
    printf '%-6s %-11s %-18s %-6s %-7s %9s %9s %9s %8s %-8s %s\n' "$name" "${owner:--}" "$model" "$range" "${sizes:--}" "$subrel" "$endrel" "$jct" "$restarts" "$result" "$final"
    printf '%s %s %s %s %s\n' "$name" "$jct" "$endrel" "$restarts" "$result" >> "$out/rows.tmp"
  done < "$out/submitted"
  awk -v mode="$mode" '{ n++; if ($2 != "-") { j += $2; ok++; if ($3 > mk) mk = $3 } r += $4 }
    END { printf "\n%s: %d jobs, %d finished; average JCT %.1f s; makespan %.1f s; restarts %d\n",
            mode, n, ok, (ok ? j / ok : 0), mk, r
          printf "{\"mode\":\"%s\",\"jobs\":%d,\"finished\":%d,\"avg_jct_s\":%.2f,\"makespan_s\":%.2f,\"restarts\":%d}\n",
            mode, n, ok, (ok ? j / ok : 0), mk, r > "/dev/stderr" }' "$out/rows.tmp" 2>"$out/summary.json"
  rm -f "$out/rows.tmp"
}

# Workloads here last minutes, so replanning is fast and a resize pays off sooner than in
# production; RestartCost is the resize latency measured on the local cluster
# (bench/resize_latency.sh).
cmd_conf() {
  local max=${1:-}
  case $max in ''|*[!0-9]*) die "conf: MAX_GPUS must be a number" ;; esac
  [ -n "${RINGSCHED_CLUSTER_DIR:-}" ] || die "conf: RINGSCHED_CLUSTER_DIR is not set"
  cat <<CONF
# ringsched.conf of a time-compressed run on the local cluster (see ringsched.conf(5))
Policy=combined
ReplanInterval=3
RestartCost=8
MinGainMultiple=1.5
MinResizeInterval=20
Samples=32
ProfileFiles=${RINGSCHED_PROFILES:-$repo/data/profiles/gavel.csv}
FeatureFile=$repo/data/model_features.csv
PlanFile=$RINGSCHED_CLUSTER_DIR/plan.json
MaxGpusPerJob=$max
CONF
}

# A folder the jobs' ordinary users can enter: the wanted one, or a fresh one in /tmp.
cmd_workdir() {
  local want=${1:-} prefix=${2:-}
  [ -n "$want" ] && [[ $prefix =~ ^[A-Za-z0-9._-]+$ ]] || die "workdir: usage: workdir DIR PREFIX"
  mkdir -p "$want" && chmod 755 "$want"
  if runuser -u nobody -- test -x "$want"; then
    (cd "$want" && pwd)
  else
    local d
    d=$(mktemp -d "/tmp/$prefix.XXXXXX") && chmod 755 "$d" && echo "$d"
  fi
}

# The users that `run --as-users` made (DIR/users-created), removed with their homes.
cmd_remove_users() {
  local dir u
  for dir in "$@"; do
    for u in $(cat "$dir/users-created" 2>/dev/null); do
      [[ $u =~ ^ring- ]] || continue  # only names ensure_user made
      userdel -r "$u" >/dev/null 2>&1 || true
    done
  done
}

case ${1:-} in
  run) shift; cmd_run "$@" ;;
  workdir) shift; cmd_workdir "$@" ;;
  remove-users) shift; cmd_remove_users "$@" ;;
  conf) shift; cmd_conf "$@" ;;
  table) shift; cmd_table "$@" ;;
  -h|--help|help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *) echo "usage: $(basename "$0") run --trace FILE --mode ringsched|stock --out DIR [--builddir DIR] [--timeout S] [--as-users] | table DIR | conf MAX_GPUS | workdir DIR PREFIX | remove-users DIR... | --help" >&2; exit 2 ;;
esac
