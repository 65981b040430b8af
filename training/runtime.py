"""Where and how a training process runs: its process group (one process, or several under torchrun), bf16
autocast where the hardware has it, its random state (saved and restored for exact resumes), and atomic saves."""

import os
import platform
import random
from pathlib import Path

import torch
import torch.distributed as dist


class Distributed:
    """Rank/world of this process; under torchrun (WORLD_SIZE > 1) it sets up the process group."""

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", 1))
        self.rank = int(os.environ.get("RANK", 0))
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            self.device = torch.device("cuda", local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")

    @property
    def main(self):
        return self.rank == 0

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def all_reduce_sum(self, value):
        if self.world == 1:
            return value
        t = torch.tensor(float(value), dtype=torch.float64, device=self.device)  # NCCL needs GPU tensors
        dist.all_reduce(t)
        return t.item()

    def all_gather_object(self, obj):
        """Every rank's `obj`, in rank order, on every rank."""
        if self.world == 1:
            return [obj]
        gathered = [None] * self.world
        dist.all_gather_object(gathered, obj)
        return gathered

    def broadcast_object(self, obj):
        """Rank 0's `obj` on every rank."""
        if self.world == 1:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]

    def broadcast_flag(self, flag):
        """Rank 0 decides (e.g. the time budget is spent); every rank follows."""
        if self.world == 1:
            return flag
        t = torch.tensor(int(flag), device=self.device)
        dist.broadcast(t, 0)
        return bool(t.item())

    def close(self):
        """Every rank leaves together: a rank that tore its group down while rank 0 still wrote the model was seen
        to abort at exit (gloo's "terminate called without an active exception")."""
        if self.world > 1:
            dist.barrier()
            dist.destroy_process_group()


def autocast_context(device, precision):
    """bfloat16 autocast where the hardware runs it natively (recent x86 CPUs with AVX512-BF16/AMX, Ampere+ GPUs);
    `precision` is "bfloat16" or "float32"."""
    if precision == "bfloat16":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cpu" and torch.backends.mkldnn.is_available() and _cpu_has_bf16():
            return torch.autocast("cpu", dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def _cpu_has_bf16():
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def hardware_description(device, world):
    if device.type == "cuda":
        return f"{world} x {torch.cuda.get_device_name(device)}"
    return f"{world} process(es) x {torch.get_num_threads()} CPU threads ({platform.processor() or platform.machine()})"


def rng_state(device):
    """This process's random generators: dropout draws from torch's (CUDA's on a GPU)."""
    return {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }


def set_rng_state(state, device):
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and state["cuda"] is not None:
        torch.cuda.set_rng_state(state["cuda"], device)


def save_atomic(obj, path):
    """torch.save through a temporary file: a crash mid-write never leaves a truncated checkpoint."""
    tmp = Path(str(path) + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)
