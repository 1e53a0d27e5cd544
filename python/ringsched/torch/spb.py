# SPDX-License-Identifier: GPL-2.0-or-later
"""Structured partial backpropagation (SPB) for a data-parallel PyTorch model on libringrt.

The model is a sequence of blocks. Each step, rank r back-propagates only through the last
depth[r] blocks (the ones nearest the loss): the blocks before them run forward without autograd
and their output is detached, so their backward pass is skipped. Ranks alternate between full
depth and `shallow` blocks, the pattern rotating with the step (every rank trains every block
every other step, as ringrun-train --spb does). Each block's gradient is then averaged over the
ranks that computed it with libringrt's ringrt_allreduce_spb_depth (buckets in backprop order),
so every replica applies the same update. It replaces DDP's gradient allreduce and needs the
"ringrt" process group.

What it saves, as measured (docs/pytorch.md): the frozen blocks' backward compute and their
activations. It does not save traffic on libringrt: ringrt_allreduce_spb_depth packs every bucket,
zeros for a rank that did not compute it, and all-reduces the whole packet.
"""
import torch
import torch.distributed as dist

from . import _ringrt


class StructuredPartialBackprop:
    def __init__(self, blocks, shallow=1):
        self.blocks = list(blocks)
        if not self.blocks:
            raise ValueError("StructuredPartialBackprop: no blocks")
        if not 1 <= shallow <= len(self.blocks):
            raise ValueError("StructuredPartialBackprop: shallow depth %d is outside 1..%d" % (shallow, len(self.blocks)))
        self.shallow = int(shallow)

    def depths(self, step, world=None):
        """Blocks back-propagated by each rank at `step` (counted from the loss)."""
        if world is None:
            world = dist.get_world_size()
        full = len(self.blocks)
        return [full if (r + step) % 2 == 0 else self.shallow for r in range(world)]

    def forward(self, x, step):
        """The model's forward pass with this rank's cut for `step`."""
        depth = self.depths(step)[dist.get_rank()]
        cut = len(self.blocks) - depth
        if cut > 0:
            with torch.no_grad():
                for block in self.blocks[:cut]:
                    x = block(x)
            x = x.detach()
        for block in self.blocks[cut:]:
            x = block(x)
        return x

    def _bucket_params(self):
        # Backprop order: bucket 0 is the last block.
        return [[p for p in block.parameters() if p.requires_grad] for block in reversed(self.blocks)]

    def allreduce_gradients(self, step):
        """Average each block's gradient over the ranks whose depth reached it at `step`; every
        rank ends with the same .grad on every parameter. Collective."""
        buckets, params = [], self._bucket_params()
        for ps in params:
            flat = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in ps]
            buckets.append(torch.cat(flat) if flat else torch.zeros(0))
        dtypes = {b.dtype for b in buckets if b.numel()}
        if len(dtypes) > 1:
            raise TypeError("StructuredPartialBackprop: parameters of one dtype only, got %s" % sorted(map(str, dtypes)))
        if dtypes:
            dt = dtypes.pop()
            buckets = [b.to(dt) for b in buckets]
        _ringrt.spb_allreduce(buckets, self.depths(step))
        for ps, bucket in zip(params, buckets):
            at = 0
            for p in ps:
                n = p.numel()
                p.grad = bucket[at:at + n].view_as(p).clone()
                at += n
