#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A small CNN on scikit-learn's load_digits (1797 8x8 images, shipped in python3-sklearn),
trained data-parallel under ringrun: torch.distributed with DDP on "ringrt" (libringrt) or
"gloo", elastic (checkpoint on ringrun's stop request, restore at any size with the same global
batch), optionally with structured partial backprop. The recipe of docs/pytorch.md; the torch
tests, the benchmark and the demo run it.

    ringrun --gpus=2 -- /usr/bin/python3 train_digits.py --steps=200 --loss-log=loss.txt

Rank 0 appends "step loss world" to --loss-log and prints the test accuracy at the end
(--out FILE also writes it, with the parameters, as JSON).
"""
import argparse
import contextlib
import gc
import json
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import ringsched.torch as rt


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="ringrt", choices=["ringrt", "gloo"])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--global-batch", type=int, default=64)
    p.add_argument("--micro-batch", type=int, default=None, help="largest per-rank micro-batch (accumulate above)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ckpt-every", type=int, default=0, help="also checkpoint every K steps")
    p.add_argument("--loss-log", default=None)
    p.add_argument("--out", default=None, help="rank 0 writes accuracy, loss and parameters here (JSON)")
    p.add_argument("--spb", action="store_true", help="structured partial backprop (needs --backend=ringrt)")
    p.add_argument("--pace", type=float, default=0.0, help="seconds each step lasts at least (tests, demo)")
    p.add_argument("--ignore-stop", action="store_true", help="tests: ignore ringrun's stop request")
    return p.parse_args()


def load_digits_arrays():
    """load_digits' images (N, 8, 8) and targets, read from the file python3-sklearn ships
    (sklearn/datasets/data/digits.csv.gz: 64 pixels and the digit per row) without importing
    sklearn: that import (scipy with it) costs each rank about a second of CPU, as much as torch's
    own on a loaded machine. sklearn's loader where the file is not where it keeps it."""
    import importlib.util
    import os
    import numpy as np
    spec = importlib.util.find_spec("sklearn")
    path = os.path.join(os.path.dirname(spec.origin), "datasets", "data", "digits.csv.gz") if spec else ""
    if not os.path.isfile(path):
        from sklearn.datasets import load_digits
        d = load_digits()
        return d.images, d.target
    data = np.loadtxt(path, delimiter=",")
    return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int)


def load_digits_split(seed=0):
    images, target = load_digits_arrays()
    x = torch.tensor(images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(target, dtype=torch.int64)
    g = torch.Generator()
    g.manual_seed(seed)
    order = torch.randperm(len(y), generator=g)
    test, train = order[:360], order[360:]
    return x[train], y[train], x[test], y[test]


def make_blocks():
    """The CNN as blocks in forward order (SPB cuts between them)."""
    return nn.ModuleList([
        nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU()),
        nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU()),
        nn.Sequential(nn.Linear(64, 10)),
    ])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = make_blocks()

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def main():
    args = parse_args()
    torch.set_num_threads(1)  # one CPU worker per rank: ringrun starts one process per "GPU"
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    xtr, ytr, xte, yte = load_digits_split()

    torch.manual_seed(args.seed)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.steps // 2), gamma=0.5)
    sampler = rt.GlobalBatchSampler(len(ytr), args.global_batch, seed=args.seed, micro_batch=args.micro_batch)
    log = open(args.loss_log, "a") if rank == 0 and args.loss_log else None

    def log_step(step, mean_loss, world):
        if log:
            log.write("%d %.9g %d\n" % (step, mean_loss, world))
            log.flush()

    state = rt.ElasticState(model, opt, sched, sampler, checkpoint_every=args.ckpt_every, on_step=log_step,
                            fingerprint={"lr": args.lr, "momentum": args.momentum, "seed": args.seed,
                                         "spb": args.spb, "steps": args.steps})
    if args.ignore_stop:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    state.restore()

    spb = rt.StructuredPartialBackprop(model.blocks, shallow=2) if args.spb else None
    ddp = None if spb else DistributedDataParallel(model)
    if rank == 0:
        print("train_digits: world %d, backend %s, global batch %d, steps %d..%d%s" % (
            world, args.backend, args.global_batch, state.step, args.steps, ", SPB" if spb else ""), flush=True)

    step_times = []
    while state.step < args.steps:
        t0 = time.monotonic()
        step = state.step
        loss_sum = 0.0
        for idx, last in state.micro_batches():
            if spb:
                out = spb.forward(xtr[idx], step)
            else:
                out = ddp(xtr[idx])
            loss = F.cross_entropy(out, ytr[idx], reduction="sum") * state.loss_scale
            sync = contextlib.nullcontext() if (spb or last) else ddp.no_sync()
            with sync:
                loss.backward()
            loss_sum += loss.item()
        if spb:
            spb.allreduce_gradients(step)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        step_times.append(time.monotonic() - t0)
        if args.pace > step_times[-1]:
            time.sleep(args.pace - step_times[-1])
        state.step_done(loss_sum)  # logs through log_step; on ringrun's stop: checkpoint, exit 75
    state.finish()

    if rank == 0:
        model.eval()
        with torch.no_grad():
            pred = model(xte).argmax(1)
        acc = (pred == yte).float().mean().item()
        steady = step_times[2:] or step_times
        step_ms = 1000.0 * sum(steady) / max(1, len(steady))
        traffic = rt.traffic() if args.backend == "ringrt" else {}
        print("train_digits: done at step %d: loss %.6f accuracy %.4f step %.2f ms" % (
            state.step, state.last_loss if state.last_loss is not None else float("nan"), acc, step_ms), flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"accuracy": acc, "loss": state.last_loss, "world": world, "steps": state.step,
                           "step_ms": step_ms, "traffic": traffic,
                           "params": {k: v.reshape(-1).tolist() for k, v in model.state_dict().items()}}, f)
    # DDP first, while the group is still registered: torch 1.13 destroys a group that DDP's
    # Reducer releases last with the GIL held, and gloo's destructor then joins a worker thread
    # that may be waiting for the GIL to free a tensor (gloo: a hang at exit, once in 19 runs of
    # test_torch here).
    # Freed by destroy_process_group(), the group goes through torch's binding, which lets go of
    # the GIL first.
    del ddp
    gc.collect()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
