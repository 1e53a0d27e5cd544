#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run by test_torch under ringrun: every collective of the "ringrt" backend, per dtype and op,
against a serial reference computed from every rank's inputs (each rank can make all of them:
they come from a generator seeded by the rank). Prints one "ok ..." line per check and exits 1
at the first mismatch, naming it."""
import sys

import torch
import torch.distributed as dist

import ringsched.torch as rt

torch.set_num_threads(1)
dist.init_process_group("ringrt")
rank, world = dist.get_rank(), dist.get_world_size()
checks = 0


def fail(what):
    sys.stderr.write("rank %d: FAILED %s\n" % (rank, what))
    sys.exit(1)


def inputs(r, dtype, n):
    g = torch.Generator()
    g.manual_seed(1000 + r)
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g, dtype=torch.float64) * 10).to(dtype)
    return torch.randint(-1000, 1000, (n,), generator=g, dtype=torch.int64).to(dtype)


def reference(dtype, n, op):
    parts = torch.stack([inputs(r, dtype, n).to(torch.float64 if dtype.is_floating_point else torch.int64)
                         for r in range(world)])
    if op == "sum":
        out = parts.sum(0)
    elif op == "avg":
        out = parts.sum(0) / world if dtype.is_floating_point else torch.div(parts.sum(0), world, rounding_mode="trunc")
    elif op == "min":
        out = parts.min(0).values
    else:
        out = parts.max(0).values
    return out


# Reduction-order tolerance, relative to the largest magnitude involved: float32 sums in ring order
# differ from a float64 serial sum by a few ulps per addition; half types are reduced in float32
# and rounded once.
TOL = {torch.float32: 1e-6, torch.float64: 1e-13, torch.float16: 1e-3, torch.bfloat16: 8e-3}
OPS = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
if hasattr(dist.ReduceOp, "AVG"):
    OPS["avg"] = dist.ReduceOp.AVG

for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64):
    for n in (1, 1000, 70001):
        for name, op in OPS.items():
            t = inputs(rank, dtype, n)
            dist.all_reduce(t, op=op)
            want = reference(dtype, n, name)
            got = t.to(want.dtype)
            if dtype.is_floating_point:
                scale = max(1.0, want.abs().max().item()) * world
                err = (got - want).abs().max().item()
                if err > TOL[dtype] * scale:
                    fail("allreduce %s %s n=%d: max error %g > %g" % (name, dtype, n, err, TOL[dtype] * scale))
            elif not torch.equal(got, want):
                fail("allreduce %s %s n=%d: differs from the serial reference" % (name, dtype, n))
            # Every rank must hold the bitwise same result.
            bits = t.view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.int64)
            lo, hi = bits.to(torch.int64).clone(), bits.to(torch.int64).clone()
            dist.all_reduce(lo, op=dist.ReduceOp.MIN)
            dist.all_reduce(hi, op=dist.ReduceOp.MAX)
            if not torch.equal(lo, hi):
                fail("allreduce %s %s n=%d: ranks disagree bitwise" % (name, dtype, n))
            checks += 1
    print("ok allreduce %s" % dtype, flush=True)

# Non-contiguous tensors are reduced through a copy and written back in place.
t = torch.arange(20, dtype=torch.float32).reshape(4, 5).t() * (rank + 1)
dist.all_reduce(t)
if not torch.equal(t, torch.arange(20, dtype=torch.float32).reshape(4, 5).t() * (world * (world + 1) / 2)):
    fail("allreduce of a non-contiguous tensor")
checks += 1
print("ok allreduce non-contiguous", flush=True)

# Broadcast and allgather move bytes of any dtype, odd sizes included.
for dtype in (torch.float32, torch.float64, torch.float16, torch.int64, torch.uint8, torch.bool, torch.int8):
    for n in (1, 3, 1001):
        for root in range(world):
            t = (torch.arange(n) * (rank + 3) % 7).to(dtype)
            dist.broadcast(t, src=root)
            if not torch.equal(t, (torch.arange(n) * (root + 3) % 7).to(dtype)):
                fail("broadcast %s n=%d root %d" % (dtype, n, root))
        out = [torch.empty(n, dtype=dtype) for _ in range(world)]
        dist.all_gather(out, (torch.arange(n) * (rank + 3) % 7).to(dtype))
        for r in range(world):
            if not torch.equal(out[r], (torch.arange(n) * (r + 3) % 7).to(dtype)):
                fail("all_gather %s n=%d slot %d" % (dtype, n, r))
        checks += 2
print("ok broadcast, all_gather", flush=True)

# Objects travel as byte tensors (broadcast_object_list, all_gather_object use them).
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank, "name": "r%d" % rank})
if objs != [{"rank": r, "name": "r%d" % r} for r in range(world)]:
    fail("all_gather_object: %r" % objs)
lst = [("from", rank)]
dist.broadcast_object_list(lst, src=world - 1)
if lst != [("from", world - 1)]:
    fail("broadcast_object_list: %r" % lst)
checks += 2
print("ok objects", flush=True)

# reduce, gather, scatter, barrier.
t = torch.full((5,), float(rank + 1))
dist.reduce(t, dst=0)
if rank == 0 and not torch.equal(t, torch.full((5,), world * (world + 1) / 2)):
    fail("reduce to 0: %r" % t)
if rank != 0 and not torch.equal(t, torch.full((5,), float(rank + 1))):
    fail("reduce changed a non-root's tensor")
g = [torch.empty(3) for _ in range(world)] if rank == 0 else None
dist.gather(torch.full((3,), float(rank)), gather_list=g, dst=0)
if rank == 0 and [x[0].item() for x in g] != [float(r) for r in range(world)]:
    fail("gather: %r" % g)
s = torch.empty(2)
dist.scatter(s, scatter_list=[torch.full((2,), float(10 + r)) for r in range(world)] if rank == world - 1 else None,
             src=world - 1)
if not torch.equal(s, torch.full((2,), float(10 + rank))):
    fail("scatter: %r" % s)
dist.barrier()
checks += 4
print("ok reduce, gather, scatter, barrier", flush=True)

# What libringrt cannot do is refused with a message naming it (and leaves the world usable).
try:
    dist.all_reduce(torch.ones(3), op=dist.ReduceOp.PRODUCT)
    fail("PRODUCT was accepted")
except RuntimeError as e:
    if "reduce op" not in str(e):
        fail("PRODUCT refused with an unclear message: %s" % e)
try:
    dist.all_reduce(torch.ones(3, dtype=torch.uint8))
    fail("a uint8 allreduce was accepted")
except RuntimeError as e:
    if "uint8" not in str(e) and "Byte" not in str(e):
        fail("uint8 refused with an unclear message: %s" % e)
t = torch.ones(2)
dist.all_reduce(t)
if t[0].item() != world:
    fail("the world is not usable after a refused call")
checks += 3
print("ok refusals", flush=True)
print("rank %d: %d checks passed on %s (%s)" % (rank, checks, rt.transport(), rt.TORCH_API), flush=True)
dist.destroy_process_group()
