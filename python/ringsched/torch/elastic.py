# SPDX-License-Identifier: GPL-2.0-or-later
"""Elastic state of a PyTorch job under ringrun: checkpoint on ringrun's stop request, restore at
any world size with the same global batch. See ringsched-torch(3).

ringrun(1) asks its workers to stop (a resize, Slurm's time-limit or preemption signal, scancel)
with SIGUSR1 (SIGTERM after a crash of another worker). ElasticState turns the signal into a flag;
at the end of each step the ranks agree on it in one small allreduce, so all stop after the same
step; rank 0 writes the checkpoint through ringrun's own store (atomic, verified by ringrun
before anything restarts), and every rank exits 75, which ringrun reads as "stopped at a
checkpoint". Restarted at another size, the job restores the newest checkpoint that verifies and
goes on with the same global batch: GlobalBatchSampler splits each step's batch over the world by
rank, and a loss summed over the rank's samples and multiplied by ``loss_scale`` makes the
averaged gradient the mean over the global batch at every world size.
"""
import json
import os
import random
import struct
import signal
import sys
import time

import torch
import torch.distributed as dist

from . import _ringrt

EXIT_STOPPED = 75  # ringrun(1): stopped at a checkpoint on request
FORMAT = "ringsched.torch.ElasticState 1"
CheckpointError = _ringrt.CheckpointError


def _world():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def write_timing(world, global_batch, steps, seconds, path=None):
    """Report measured steady-state iterations to ringrun (RINGRUN_TIMING_FILE): one line
    'world,global_batch,steps,seconds' that ringrun checks against the job's profile and appends
    to its --report CSV (ringrun(1)). Rank 0 calls it; nothing happens outside ringrun."""
    path = path or os.environ.get("RINGRUN_TIMING_FILE")
    if not path or steps < 1 or not seconds > 0:
        return False
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d,%d,%d,%.9g\n" % (world, global_batch, steps, seconds))
    os.replace(tmp, path)
    return True


class GlobalBatchSampler:
    """Indices of each step's global batch, split over the world by rank.

    The dataset is shuffled once per epoch with a generator seeded by (seed, epoch); step s takes
    positions [s*B, (s+1)*B) of the epoch's order (B = global_batch; the last partial batch of an
    epoch is dropped). Rank r of w gets the slice [r*B//w, (r+1)*B//w): the shards depend only on
    the step, B and w, so a restart at another size continues with the same batches. With
    micro_batch, a rank's slice comes in chunks of at most that many samples (gradient
    accumulation: the rank back-propagates each and synchronises after the last).
    """

    def __init__(self, dataset_size, global_batch, seed=0, shuffle=True, micro_batch=None):
        if global_batch < 1 or dataset_size < global_batch:
            raise ValueError("GlobalBatchSampler: global_batch %d must be in 1..dataset size %d"
                             % (global_batch, dataset_size))
        if micro_batch is not None and micro_batch < 1:
            raise ValueError("GlobalBatchSampler: micro_batch must be >= 1")
        self.dataset_size = int(dataset_size)
        self.global_batch = int(global_batch)
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.micro_batch = micro_batch
        self.steps_per_epoch = self.dataset_size // self.global_batch
        self._order = (None, None)

    def _epoch_order(self, epoch):
        if self._order[0] != epoch:
            if self.shuffle:
                g = torch.Generator()
                g.manual_seed(self.seed * 1000003 + epoch)
                self._order = (epoch, torch.randperm(self.dataset_size, generator=g))
            else:
                self._order = (epoch, torch.arange(self.dataset_size))
        return self._order[1]

    def shard(self, step, rank=None, world=None):
        """This rank's indices of step's global batch."""
        if rank is None or world is None:
            rank, world = _world()
        if world > self.global_batch:
            raise ValueError("GlobalBatchSampler: world size %d exceeds the global batch %d" % (world, self.global_batch))
        epoch, k = divmod(int(step), self.steps_per_epoch)
        order = self._epoch_order(epoch)
        first = k * self.global_batch
        return order[first + rank * self.global_batch // world: first + (rank + 1) * self.global_batch // world]

    def micro_batches(self, step, rank=None, world=None):
        """(indices, is_last) for each micro-batch of this rank at step."""
        idx = self.shard(step, rank, world)
        size = self.micro_batch or max(1, len(idx))
        chunks = [idx[i:i + size] for i in range(0, len(idx), size)] or [idx]
        return [(c, i == len(chunks) - 1) for i, c in enumerate(chunks)]

    def loss_scale(self, world=None):
        """Factor for a loss summed over the rank's samples: averaged over the world (DDP) it
        gives the mean over the global batch."""
        if world is None:
            world = _world()[1]
        return float(world) / self.global_batch

    def state_dict(self):
        return {"dataset_size": self.dataset_size, "global_batch": self.global_batch, "seed": self.seed,
                "shuffle": self.shuffle}


class ElasticState:
    """Everything a restart needs: model, optimizer, LR scheduler, sampler, RNG states, step.

    Typical loop (docs/pytorch.md has the whole script)::

        state = ElasticState(model, optimizer, scheduler, sampler, checkpoint_every=100)
        state.restore()                      # newest verified checkpoint, if any
        ddp = DistributedDataParallel(model)
        while state.step < total_steps:
            ...                              # forward/backward/optimizer.step()
            state.step_done(loss)            # may checkpoint and exit 75 (ringrun's stop)
        state.finish()
    """

    def __init__(self, model, optimizer, scheduler=None, sampler=None, *, ckpt_dir=None, checkpoint_every=0,
                 fingerprint=None, on_step=None, log=None):
        self.model = model.module if hasattr(model, "module") else model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.sampler = sampler
        self.ckpt_dir = ckpt_dir or os.environ.get("RINGRUN_CKPT_DIR") or "ringrun-local"
        self.checkpoint_every = int(checkpoint_every)
        self.fingerprint = dict(fingerprint or {})
        self.on_step = on_step  # called (step, mean loss, world) after each step, a stopping one too
        self.step = 0
        self.restored_from = None
        self.last_loss = None
        self._log = log or (lambda msg: sys.stderr.write(msg + "\n"))
        self._stop_requested = False
        self._iterations_this_run = 0
        self._measured_steps = 0
        self._measured_s = 0.0
        self._last_mark = None
        for sig in (signal.SIGUSR1, signal.SIGTERM):
            signal.signal(sig, self._on_stop_signal)
        # ringrun starts workers with SIGUSR1 blocked until their handler is in place
        # (ringrun(1)); a request that came early is delivered now.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})

    # --- the stop request ---
    def _on_stop_signal(self, signum, frame):
        self._stop_requested = True

    @property
    def stop_requested(self):
        """This process has been asked to stop (not yet agreed with the others)."""
        return self._stop_requested

    # --- what a checkpoint holds ---
    def _full_fingerprint(self):
        fp = {"format": FORMAT}
        fp.update({"param_shapes": [[k, list(v.shape)] for k, v in self.model.state_dict().items()]})
        if self.sampler is not None:
            fp["sampler"] = self.sampler.state_dict()
        fp["user"] = self.fingerprint
        return fp

    def state_dict(self):
        rank, world = _world()
        return {
            "fingerprint": self._full_fingerprint(),
            "step": self.step,
            "world": world,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "rng": {"torch": torch.get_rng_state(), "python": random.getstate()},
        }

    def _apply(self, state, path):
        if not isinstance(state, dict) or "fingerprint" not in state:
            raise CheckpointError("checkpoint %s: not written by ElasticState" % path)
        want, got = self._full_fingerprint(), state["fingerprint"]
        if got != want:
            diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            raise CheckpointError("checkpoint %s: belongs to another run (differs in %s)" % (path, ", ".join(diff)))
        self.model.load_state_dict(state["model"])
        if self.optimizer is not None and state["optimizer"] is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        self.step = int(state["step"])

    # --- restore ---
    def restore(self):
        """Load the newest checkpoint of ckpt_dir that verifies (ringrun's checksum, then this
        run's fingerprint). A refused file is reported naming it and the reason, and the one
        before it is tried. Returns True when one was loaded, False when there is none; raises
        CheckpointError when there are checkpoints but none is usable (no silent fresh start).
        Collective when a process group is up: all ranks must restore the same step."""
        rank, world = _world()
        files = _ringrt.checkpoint_files(self.ckpt_dir) if os.path.isdir(self.ckpt_dir) else []
        refused = []
        for path in files:
            try:
                step, payload = _ringrt.checkpoint_read(self.ckpt_dir, path)
                state = _decode(payload, path)
                if int(state.get("step", -1)) != step:
                    raise CheckpointError("checkpoint %s: step in payload differs from the header" % path)
                self._apply(state, path)
                self.restored_from = path
                break
            except Exception as e:  # noqa: BLE001 -- every reason to refuse a file is reported
                reason = str(e) if str(e).startswith("checkpoint ") else "checkpoint %s: %s" % (path, e)
                refused.append(reason)
                if rank == 0:
                    self._log("ringsched.torch: refused %s; trying the previous checkpoint" % reason)
        if files and self.restored_from is None:
            raise CheckpointError("every checkpoint in %s is unusable (%s); refusing to start over"
                                  % (self.ckpt_dir, "; ".join(refused)))
        if world > 1:
            steps = torch.tensor([self.step, -self.step], dtype=torch.int64)
            dist.all_reduce(steps, op=dist.ReduceOp.MAX)
            if steps[0].item() != -steps[1].item():
                raise CheckpointError("ranks restored different steps (%d..%d) from %s: is the folder shared?"
                                      % (-steps[1].item(), steps[0].item(), self.ckpt_dir))
        if self.restored_from and rank == 0:
            self._log("ringsched.torch: restored step %d from %s; world size %d" % (self.step, self.restored_from, world))
        return self.restored_from is not None

    # --- save ---
    def save(self):
        """Rank 0 writes the checkpoint of the current step (atomic); then every rank waits for it.
        Returns the file's path on rank 0, None elsewhere."""
        rank, world = _world()
        path = None
        if rank == 0:
            path = _ringrt.checkpoint_write(self.ckpt_dir, self.step, _encode(self.state_dict()))
            self._log("ringsched.torch: checkpoint step %d -> %s" % (self.step, path))
        if world > 1:
            dist.barrier()
        return path

    # --- the loop ---
    def micro_batches(self):
        """The sampler's (indices, is_last) for this rank at the current step."""
        return self.sampler.micro_batches(self.step)

    @property
    def loss_scale(self):
        return self.sampler.loss_scale()

    def step_done(self, loss=None):
        """End of a step: counts it, measures it, and agrees with the other ranks on a stop.
        `loss` is this rank's loss (scaled by loss_scale); the return value is the global mean
        over the ranks. On a stop request: checkpoint, report timing, leave the group and exit
        75. Collective."""
        now = time.monotonic()
        if self._last_mark is not None and self._iterations_this_run > 0:
            # The first iteration of a run includes set-up: not a steady-state sample.
            self._measured_steps += 1
            self._measured_s += now - self._last_mark
        self._iterations_this_run += 1
        self.step += 1
        rank, world = _world()
        value = float(loss.detach().item()) if torch.is_tensor(loss) else float(loss or 0.0)
        ctl = torch.tensor([value, 1.0 if self._stop_requested else 0.0], dtype=torch.float64)
        if world > 1:
            dist.all_reduce(ctl)
        self.last_loss = ctl[0].item() / world
        if self.on_step is not None:
            self.on_step(self.step - 1, self.last_loss, world)
        if ctl[1].item() > 0:
            self.save()
            self._report_timing()
            if world > 1:
                dist.destroy_process_group()
            if rank == 0:
                self._log("ringsched.torch: stopped at step %d on request" % self.step)
            sys.stdout.flush()
            raise SystemExit(EXIT_STOPPED)
        if self.checkpoint_every > 0 and self.step % self.checkpoint_every == 0:
            self.save()
        self._last_mark = time.monotonic()
        return self.last_loss

    def start_timing(self):
        """Marks the start of the first step (otherwise the first step_done does)."""
        self._last_mark = time.monotonic()

    def finish(self):
        """End of training: a final checkpoint and the timing report."""
        self.save()
        self._report_timing()

    def _report_timing(self):
        rank, world = _world()
        if rank == 0:
            batch = self.sampler.global_batch if self.sampler is not None else 0
            write_timing(world, batch, self._measured_steps, self._measured_s)

    @property
    def measured(self):
        """(steps, seconds) of steady-state iterations measured in this run."""
        return self._measured_steps, self._measured_s


# --- the payload: no pickle -------------------------------------------------------------------
# A checkpoint's payload is an 8-byte little-endian header length, a JSON header (the state's
# tree, each tensor replaced by its index, and each tensor's dtype, shape and byte range) and the
# tensors' bytes. Nothing in it can name code to run, so a checkpoint is data only, whoever wrote
# it (ringrun authenticates it besides). torch.load would unpickle, and torch 1.13's weights-only
# loader cannot read the floats that optimizer and scheduler states hold.
_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
    torch.int32, torch.int64, torch.bool)}


def _encode(state):
    tensors = []

    def tree(x):
        if torch.is_tensor(x):
            tensors.append(x.detach().cpu().contiguous())
            return {"t": len(tensors) - 1}
        if isinstance(x, dict):
            return {"d": [[tree(k), tree(v)] for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return {"l" if isinstance(x, list) else "u": [tree(v) for v in x]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return {"v": x}
        raise TypeError("ElasticState cannot checkpoint a %s (tensors, dicts, lists, tuples, numbers, strings)"
                        % type(x).__name__)

    root = tree(state)
    meta, blobs, offset = [], [], 0
    for t in tensors:
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        meta.append({"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "offset": offset,
                     "nbytes": len(raw)})
        blobs.append(raw)
        offset += len(raw)
    header = json.dumps({"tree": root, "tensors": meta}).encode()
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def _decode(payload, path):
    def bad(why):
        return CheckpointError("checkpoint %s: %s" % (path, why))
    if len(payload) < 8:
        raise bad("payload too short")
    (hlen,) = struct.unpack_from("<Q", payload)
    if hlen > len(payload) - 8:
        raise bad("header length %d beyond the payload" % hlen)
    try:
        header = json.loads(payload[8:8 + hlen].decode())
        data = memoryview(payload)[8 + hlen:]
        tensors = []
        for m in header["tensors"]:
            dtype, shape, off, n = _DTYPES[m["dtype"]], [int(v) for v in m["shape"]], int(m["offset"]), int(m["nbytes"])
            if off < 0 or n < 0 or off + n > len(data):
                raise ValueError("tensor bytes outside the payload")
            if n == 0:
                tensors.append(torch.zeros(shape, dtype=dtype))
                continue
            raw = torch.frombuffer(bytearray(data[off:off + n]), dtype=torch.int16 if dtype == torch.bfloat16 else dtype)
            tensors.append((raw.view(torch.bfloat16) if dtype == torch.bfloat16 else raw).reshape(shape))

        def tree(node):
            (kind, value), = node.items()
            if kind == "t":
                return tensors[value]
            if kind == "d":
                return {tree(k): tree(v) for k, v in value}
            if kind in ("l", "u"):
                items = [tree(v) for v in value]
                return items if kind == "l" else tuple(items)
            if kind == "v":
                return value
            raise ValueError("unknown node %r" % kind)
        return tree(header["tree"])
    except (ValueError, KeyError, TypeError, IndexError, RuntimeError, AttributeError) as e:
        raise bad("malformed payload (%s)" % e) from None
