#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One rank of bench/torch-bench.sh (run under ringrun): allreduce time of float32 buffers and DDP
step time of one model on "ringrt" and "gloo", measured in one process, taking turns.

Both backends live side by side (a "ringrt" and a "gloo" group over every rank, a DDP replica on
each with the same model, buckets and seed), and every repetition runs the ringrt case and the gloo
case back to back, their order alternating. So both see the same moment of a busy machine: on a
shared 2-core machine separate runs of the same case differ by 2x, which buried the comparison.

Rank 0 prints one line per backend, then one line of paired ratios:
  bench backend=B world=W allreduce_ms 1MiB=.. 4MiB=.. 16MiB=.. ddp_step_ms=.. ddp_cpu_ms=.. ddp_params=..
  bench ratio world=W 1MiB=.. 4MiB=.. 16MiB=.. ddp_step_ms=.. ddp_cpu_ms=..
Times are medians over --iters repetitions (each after a barrier; two warm-up repetitions not
counted); ddp_cpu_ms is the CPU time of the whole process (compute, DDP's and the backend's threads),
where a backend that spins shows even when there are cores to spare. A ratio is the median over the
repetitions of gloo's time / ringrt's time in the same repetition (> 1: ringrt faster)."""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import ringsched.torch  # noqa: F401 -- registers "ringrt"

BACKENDS = ("ringrt", "gloo")


def paired(cases, iters, sync, warmup=2):
    """cases: backend -> fn. Returns backend -> (wall ms list, cpu ms list), in repetition order."""
    out = dict((b, ([], [])) for b in cases)
    for i in range(warmup + iters):
        for b in (BACKENDS if i % 2 == 0 else BACKENDS[::-1]):
            sync()
            t0, c0 = time.perf_counter(), time.process_time()
            cases[b]()
            if i >= warmup:
                out[b][0].append((time.perf_counter() - t0) * 1000.0)
                out[b][1].append((time.process_time() - c0) * 1000.0)
    return out


def ratio(gloo, ringrt):
    return statistics.median(g / r for g, r in zip(gloo, ringrt) if r > 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1,4,16", help="allreduce sizes, MiB")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    groups = {"ringrt": dist.new_group(backend="ringrt"), "gloo": dist.new_group(backend="gloo")}
    barrier_group = groups["gloo"]
    rank, world = dist.get_rank(), dist.get_world_size()

    def sync():
        dist.barrier(group=barrier_group)

    fields = dict((b, []) for b in BACKENDS)
    ratios = []
    for mib in [int(s) for s in args.sizes.split(",")]:
        bufs = dict((b, torch.ones(mib * 1024 * 1024 // 4)) for b in BACKENDS)
        runs = paired(dict((b, (lambda b=b: dist.all_reduce(bufs[b], group=groups[b]))) for b in BACKENDS),
                      args.iters, sync)
        for b in BACKENDS:
            fields[b].append("%dMiB=%.3f" % (mib, statistics.median(runs[b][0])))
        ratios.append("%dMiB=%.3f" % (mib, ratio(runs["gloo"][0], runs["ringrt"][0])))

    h = args.hidden
    x, y = torch.randn(args.batch, h), torch.randint(0, 10, (args.batch,))
    replicas = {}
    for b in BACKENDS:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(h, 2 * h), nn.ReLU(), nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, 10))
        # default buckets (25 MiB cap, 1 MiB first bucket), the same for both backends
        replicas[b] = (DistributedDataParallel(model, process_group=groups[b]),
                       torch.optim.SGD(model.parameters(), lr=0.01))

    def step(b):
        ddp, opt = replicas[b]
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    runs = paired(dict((b, (lambda b=b: step(b))) for b in BACKENDS), args.iters, sync)
    nparams = sum(q.numel() for q in replicas["gloo"][0].module.parameters())
    if rank == 0:
        for b in BACKENDS:
            print("bench backend=%s world=%d allreduce_ms %s ddp_step_ms=%.3f ddp_cpu_ms=%.3f ddp_params=%d" % (
                b, world, " ".join(fields[b]), statistics.median(runs[b][0]), statistics.median(runs[b][1]),
                nparams), flush=True)
        print("bench ratio world=%d %s ddp_step_ms=%.3f ddp_cpu_ms=%.3f" % (
            world, " ".join(ratios), ratio(runs["gloo"][0], runs["ringrt"][0]),
            ratio(runs["gloo"][1], runs["ringrt"][1])), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
