#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Forward and backward time of train_digits' CNN per block, one process, one thread (bench/
torch-spb.sh): the backward/forward ratio b of the SPB cost model (policy/spb.h) as measured, and
the share of the backward that a rank at SPB depth d (the last d blocks) still does.
Prints: "spb_cost batch=B forward_ms=F backward_ms=K b=K/F" and one "depth=d backward_share=..."
line per depth. Minimum over --iters repetitions, the depths interleaved."""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "examples"))
import train_digits  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--iters", type=int, default=200)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = train_digits.Net()
    x, y = torch.randn(args.batch, 1, 8, 8), torch.randint(0, 10, (args.batch,))
    blocks = list(net.blocks)

    def run(depth):
        """(forward s, backward s) with backprop through the last `depth` blocks."""
        cut = len(blocks) - depth
        t0 = time.perf_counter()
        h = x
        with torch.no_grad():
            for b in blocks[:cut]:
                h = b(h)
        for b in blocks[cut:]:
            h = b(h)
        loss = F.cross_entropy(h, y, reduction="sum")
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        net.zero_grad(set_to_none=True)
        return t1 - t0, t2 - t1

    # Depths interleaved and the minimum taken: on a shared machine a median still catches
    # preemptions; the fastest of many repetitions is the computation itself.
    times = {d: [] for d in range(1, len(blocks) + 1)}
    for i in range(20 + args.iters):
        for d in times:
            t = run(d)
            if i >= 20:
                times[d].append(t)
    best = {d: (min(f for f, _ in ts), min(b for _, b in ts)) for d, ts in times.items()}
    fwd, bwd = best[len(blocks)]
    print("spb_cost batch=%d forward_ms=%.4f backward_ms=%.4f b=%.3f" % (args.batch, fwd * 1e3, bwd * 1e3, bwd / fwd))
    for d, (f, b) in best.items():
        print("depth=%d of %d forward_ms=%.4f backward_ms=%.4f backward_share=%.3f step_share=%.3f" % (
            d, len(blocks), f * 1e3, b * 1e3, b / bwd, (f + b) / (fwd + bwd)))

if __name__ == "__main__":
    main()
