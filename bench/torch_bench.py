#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One rank of bench/torch-bench.sh (run under ringrun): allreduce time of float32 buffers and
DDP step time of one model, on the backend given. Rank 0 prints one line:
  bench backend=B world=W allreduce_ms 1MiB=.. 4MiB=.. 16MiB=.. ddp_step_ms=.. ddp_params=..
Times are medians over --iters repetitions (each allreduce/step waited for; a barrier before each
repetition so that every rank starts together)."""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import ringsched.torch  # noqa: F401 -- registers "ringrt"


def median_ms(fn, iters, warmup=2):
    times = []
    for i in range(warmup + iters):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", required=True)
    p.add_argument("--sizes", default="1,4,16", help="MiB")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    fields = []
    for mib in [int(s) for s in args.sizes.split(",")]:
        buf = torch.ones(mib * 1024 * 1024 // 4)
        fields.append("%dMiB=%.3f" % (mib, median_ms(lambda: dist.all_reduce(buf), args.iters)))
    torch.manual_seed(0)
    h = args.hidden
    model = nn.Sequential(nn.Linear(h, 2 * h), nn.ReLU(), nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, 10))
    ddp = DistributedDataParallel(model)  # default buckets (25 MiB cap), the same for both backends
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(args.batch, h), torch.randint(0, 10, (args.batch,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    step_ms = median_ms(step, args.iters)
    nparams = sum(q.numel() for q in model.parameters())
    if rank == 0:
        print("bench backend=%s world=%d allreduce_ms %s ddp_step_ms=%.3f ddp_params=%d" % (
            args.backend, world, " ".join(fields), step_ms, nparams), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
