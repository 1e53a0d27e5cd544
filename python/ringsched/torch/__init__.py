# SPDX-License-Identifier: GPL-2.0-or-later
"""ringsched.torch: PyTorch jobs under ringrun (ringsched-torch(3), docs/pytorch.md).

Importing it registers libringrt as the torch.distributed backend "ringrt"::

    import ringsched.torch
    torch.distributed.init_process_group("ringrt")

and provides ElasticState (checkpoint on ringrun's stop request, restore at a new size with the
same global batch), GlobalBatchSampler, StructuredPartialBackprop and write_timing.
"""
from . import _ringrt
from .backend import BACKEND_NAME, create_process_group, register
from .elastic import EXIT_STOPPED, CheckpointError, ElasticState, GlobalBatchSampler, write_timing
from .spb import StructuredPartialBackprop

TORCH_API = _ringrt.TORCH_API


def traffic():
    """Bytes this process handed to libringrt, by kind of call (needs the "ringrt" group)."""
    return _ringrt.traffic()


def transport():
    """libringrt's backend for host buffers in this job: "tcp", "shm" or "hier"."""
    return _ringrt.transport()


register()

__all__ = ["BACKEND_NAME", "CheckpointError", "ElasticState", "EXIT_STOPPED", "GlobalBatchSampler",
           "StructuredPartialBackprop", "TORCH_API", "create_process_group", "register", "traffic",
           "transport", "write_timing"]
