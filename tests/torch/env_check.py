#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run by test_torch under ringrun: an unmodified torch.distributed script. Rank 0 prints the
torchrun variables of every rank (gathered), then the job uses gloo (env:// rendezvous on
MASTER_ADDR:MASTER_PORT) and the "ringrt" backend (libringrt's own rendezvous) side by side."""
import os

import torch
import torch.distributed as dist

NAMES = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "MASTER_ADDR",
         "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "RINGRT_RANK", "RINGRT_MASTER_PORT"]

dist.init_process_group("gloo")  # exactly as under torchrun: everything from the environment
mine = {n: os.environ.get(n, "") for n in NAMES}
everyone = [None] * dist.get_world_size()
dist.all_gather_object(everyone, mine)
t = torch.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(t)
import ringsched.torch  # noqa: E402,F401 -- registers "ringrt"
ring = dist.new_group(backend="ringrt")
u = torch.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(u, group=ring)
if dist.get_rank() == 0:
    for env in everyone:
        print("env " + " ".join("%s=%s" % (k, env[k]) for k in NAMES))
    print("gloo allreduce %g ringrt allreduce %g" % (t[0].item(), u[0].item()))
dist.destroy_process_group()
