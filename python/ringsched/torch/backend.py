# SPDX-License-Identifier: GPL-2.0-or-later
"""The "ringrt" torch.distributed backend: registration and the creator torch calls.

libringrt reads its rendezvous settings from RINGRT_* (libringrt(3)); ringrun(1) sets them for
its workers (rank, world size, master address, a port of its own distinct from torch's
MASTER_PORT, and the job secret in a 0600 file). Started some other way (torchrun, a test), the
missing ones are agreed through torch's store: rank 0 picks a free port and a random secret and
the others read them. The environment is completed only while libringrt joins its world, then
put back as it was.
"""
import os
import secrets
import socket
from contextlib import contextmanager
from datetime import timedelta

import torch.distributed as dist

from . import _ringrt

BACKEND_NAME = "ringrt"


def _store_get(store, key):
    value = store.get(key)
    return value.decode() if isinstance(value, bytes) else str(value)


def _free_port(addr):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr if addr not in ("", "localhost") else "127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(store, rank, size, timeout):
    """The RINGRT_* values to add to the environment for ringrt_init()."""
    env = {}
    for var, value in (("RINGRT_RANK", rank), ("RINGRT_WORLD_SIZE", size)):
        have = os.environ.get(var)
        if have is not None and have != str(value):
            raise RuntimeError("ringrt backend: %s=%s in the environment but torch's %s is %d "
                               "(init_process_group's rank/world_size must match ringrun's)"
                               % (var, have, "rank" if var == "RINGRT_RANK" else "world size", value))
        env[var] = str(value)
    if "RINGRT_MASTER_ADDR" not in os.environ:
        env["RINGRT_MASTER_ADDR"] = os.environ.get("MASTER_ADDR", "127.0.0.1")
    addr = os.environ.get("RINGRT_MASTER_ADDR", env.get("RINGRT_MASTER_ADDR"))
    # In a Slurm job libringrt derives its port from the job id (libringrt(3)); elsewhere rank 0
    # chooses one and publishes it.
    if "RINGRT_MASTER_PORT" not in os.environ and "SLURM_JOB_ID" not in os.environ:
        if rank == 0:
            store.set("ringrt/port", str(_free_port(addr)))
        env["RINGRT_MASTER_PORT"] = _store_get(store, "ringrt/port")
    if "RINGRT_SECRET_FILE" not in os.environ and "RINGRT_SECRET" not in os.environ:
        if rank == 0:
            store.set("ringrt/secret", secrets.token_hex(32))
        env["RINGRT_SECRET"] = _store_get(store, "ringrt/secret")
    if "RINGRT_TIMEOUT_MS" not in os.environ and timeout is not None:
        ms = int(timeout.total_seconds() * 1000) if isinstance(timeout, timedelta) else int(timeout * 1000)
        env["RINGRT_TIMEOUT_MS"] = str(max(1000, min(ms, 3600000)))
    return env


@contextmanager
def _environment(extra):
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def create_process_group(store, rank, size, timeout):
    """The creator torch.distributed calls for init_process_group("ringrt")."""
    with _environment(_settings(store, rank, size, timeout)):
        return _ringrt.ProcessGroupRingrt(rank, size)


def register():
    """Registers "ringrt" with torch.distributed (once; importing ringsched.torch does it)."""
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    try:
        # torch 2.x: the backend serves CPU tensors only (this build passes host buffers).
        dist.Backend.register_backend(BACKEND_NAME, create_process_group, devices=["cpu"])
    except TypeError:
        # torch 1.13: register_backend(name, func, extended_api=False)
        dist.Backend.register_backend(BACKEND_NAME, create_process_group)
