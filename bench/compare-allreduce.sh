#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# compare-allreduce.sh -- libringrt's allreduce against OpenMPI's MPI_Allreduce (shared memory
# through the vader BTL, and TCP loopback) and Gloo's ring, on the same sizes in the same run,
# with ranks as processes on this machine; prints every table and then the ratios.
# Both TCP sides run twice: with their own choice of algorithm (at 4 ranks: halving/doubling for
# ours, mostly recursive halving/doubling for OpenMPI too) and with the ring forced
# (RINGRT_TCP_ALGORITHM=ring; coll_tuned_allreduce_algorithm 4), so that like algorithms are
# compared as well.
# Ours also runs with RINGRT_TCP_CONGESTION=system: by default libringrt replaces a system-wide
# BBR by cubic or reno on its own connections (libringrt(3)), which OpenMPI does not, so that
# column compares the two under the same congestion control. --system-cc sets the system's
# default for the whole run instead (root; restored at exit), e.g. --system-cc cubic.
#
# usage: bench/compare-allreduce.sh [--ringrt-bench PATH] [--ranks "2 4"] [--max-bytes B]
#                                   [--min-bytes B] [--out DIR] [--system-cc NAME]
#   --ringrt-bench  the built ringrt-bench (default: ring-runtime/ringrt-bench of the build tree
#                   this is run from, or ringrt-bench on PATH)
#   --ranks         world sizes to run (default "2 4")
#   --min/max-bytes size range, x4 steps (default 4096 .. 268435456)
#   --out           where the helper programs are built and the raw tables kept
#                   (default: a fresh temporary folder)
#   --system-cc     net.ipv4.tcp_congestion_control for the run (needs root)
# Needs mpicc/mpirun (openmpi-bin, libopenmpi-dev) and libgloo-dev. The machine is shared:
# keep --max-bytes small for a quick look.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=""
ranks="2 4"
minb=4096
maxb=268435456
out=""
system_cc=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ringrt-bench) bench=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --min-bytes) minb=$2; shift 2 ;;
    --max-bytes) maxb=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --system-cc) system_cc=$2; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-allreduce: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bench" ]; then
  if [ -x ring-runtime/ringrt-bench ]; then bench=ring-runtime/ringrt-bench
  elif command -v ringrt-bench >/dev/null; then bench=$(command -v ringrt-bench)
  else echo "compare-allreduce: build ringrt-bench first or pass --ringrt-bench" >&2; exit 2; fi
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/ringrt-compare-XXXXXX)
mkdir -p "$out"
gloo_lib=$(ls /usr/lib/libgloo.so* /usr/lib/*/libgloo.so* 2>/dev/null | head -n 1 || true)
[ -n "$gloo_lib" ] || { echo "compare-allreduce: libgloo not found (apt-get install libgloo-dev)" >&2; exit 2; }
cc_file=/proc/sys/net/ipv4/tcp_congestion_control
allowed_file=/proc/sys/net/ipv4/tcp_allowed_congestion_control
if [ -n "$system_cc" ]; then
  # setting the default also adds it to the allowed list: both are put back at exit
  old_cc=$(cat "$cc_file")
  old_allowed=$(cat "$allowed_file")
  trap 'echo "$old_cc" > "$cc_file"; echo "$old_allowed" > "$allowed_file"' EXIT
  echo "$system_cc" > "$cc_file" || { echo "compare-allreduce: cannot set $cc_file to $system_cc" >&2; exit 2; }
fi
echo "compare-allreduce: system TCP congestion control $(cat "$cc_file")" \
     "(allowed to every process: $(cat "$allowed_file"))"
echo "compare-allreduce: building the OpenMPI and Gloo helpers in $out"
mpicc -O2 -o "$out/mpi_allreduce_bench" "$here/mpi_allreduce_bench.c"
g++ -O2 -std=c++17 -o "$out/gloo_allreduce_bench" "$here/gloo_allreduce_bench.cpp" "$gloo_lib" -lpthread
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun_=(mpirun --oversubscribe --bind-to none)
sizes=(--min-bytes "$minb" --max-bytes "$maxb")

for n in $ranks; do
  echo; echo "===== $n ranks ====="
  "$bench" --ranks "$n" --backend tcp "${sizes[@]}" | tee "$out/ringrt-tcp-$n.txt"
  RINGRT_TCP_ALGORITHM=ring "$bench" --ranks "$n" --backend tcp "${sizes[@]}" | tee "$out/ringrt-tcp-ring-$n.txt"
  echo "# RINGRT_TCP_CONGESTION=system"
  RINGRT_TCP_CONGESTION=system "$bench" --ranks "$n" --backend tcp "${sizes[@]}" | tee "$out/ringrt-tcp-sys-$n.txt"
  "${mpirun_[@]}" -np "$n" --mca btl self,tcp --mca btl_tcp_if_include lo \
    "$out/mpi_allreduce_bench" "${sizes[@]}" --label "btl tcp, loopback" | tee "$out/mpi-tcp-$n.txt"
  "${mpirun_[@]}" -np "$n" --mca btl self,tcp --mca btl_tcp_if_include lo \
    --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4 \
    "$out/mpi_allreduce_bench" "${sizes[@]}" --label "btl tcp, loopback, ring algorithm" |
    tee "$out/mpi-tcp-ring-$n.txt"
  "$out/gloo_allreduce_bench" --ranks "$n" "${sizes[@]}" | tee "$out/gloo-$n.txt"
  "$bench" --ranks "$n" --backend shm "${sizes[@]}" | tee "$out/ringrt-shm-$n.txt"
  "${mpirun_[@]}" -np "$n" --mca btl self,vader \
    "$out/mpi_allreduce_bench" "${sizes[@]}" --label "btl vader, shared memory" | tee "$out/mpi-sm-$n.txt"
done

echo
echo "===== ratios (busbw ratio = ours / theirs, higher is better; latency ratio = ours / theirs, lower is better) ====="
for n in $ranks; do
  echo
  echo "n=$n"
  printf "%12s | %9s %9s %8s | %9s %8s | %9s %9s %8s | %9s %8s | %9s %9s %8s\n" size ringrt-tcp mpi-tcp x-mpi \
    rt-syscc x-mpi rt-ring mpi-ring x-ring gloo x-gloo ringrt-shm mpi-sm x-mpi
  paste <(grep -v '^#' "$out/ringrt-tcp-$n.txt") <(grep -v '^#' "$out/mpi-tcp-$n.txt") \
        <(grep -v '^#' "$out/gloo-$n.txt") <(grep -v '^#' "$out/ringrt-shm-$n.txt") \
        <(grep -v '^#' "$out/mpi-sm-$n.txt") <(grep -v '^#' "$out/mpi-tcp-ring-$n.txt") \
        <(grep -v '^#' "$out/ringrt-tcp-ring-$n.txt") <(grep -v '^#' "$out/ringrt-tcp-sys-$n.txt") |
    awk '{ # 6 columns per table: size count time algbw busbw iters
      rt=$5; mt=$11; gl=$17; rs=$23; ms=$29; mr=$35; rr=$41; sy=$47;
      printf "%12s | %9.3f %9.3f %8.2f | %9.3f %8.2f | %9.3f %9.3f %8.2f | %9.3f %8.2f | %9.3f %9.3f %8.2f\n", $1,
             rt, mt, rt/mt, sy, sy/mt, rr, mr, rr/mr, gl, rt/gl, rs, ms, rs/ms;
      if ($1 == 4096) lat = sprintf("  4 KiB latency: ringrt-tcp %.1f us vs mpi-tcp %.1f us (x%.2f); ringrt-shm %.1f us vs mpi-sm %.1f us (x%.2f)",
                                    $3, $9, $3/$9, $21, $27, $21/$27);
    } END { if (lat != "") print lat }'
done
echo
echo "raw tables kept in $out"
