"""Where a model runs, and in which precision that is fastest there.

A CUDA GPU when there is one, else the CPU. On a GPU, bfloat16 where it computes in it natively (compute capability
8.0 and later: Ampere, Hopper), float16 on older GPUs (their tensor cores have float16, and bfloat16 is emulated).
On a CPU, one sentence at a time, float16 where PyTorch has vectorised float16 kernels, else float32
(docs/benchmarks.md#why-float16-helps-on-this-cpu). Precisions are named as in `modeldir.loading.DTYPES`.
"""

import platform

import torch

from inputs.checks import echo

DEVICE_TYPES = ("cpu", "cuda")


def fast_cpu_dtype():
    """The faster precision for one-sentence decoding on this CPU: float16 where PyTorch has vectorised float16
    matrix-vector kernels (x86 with AVX2 or AVX-512, 64-bit ARM), float32 elsewhere (there float16 is emulated
    element by element, about twice as slow as float32)."""
    arm = platform.machine().lower() in ("arm64", "aarch64")
    return "float16" if arm or torch.backends.cpu.get_cpu_capability() != "DEFAULT" else "float32"


def gpu_dtype(device):
    """bfloat16 on a GPU that computes in it natively, float16 on older ones. Reads only the compute capability,
    which Hugging Face's ZeroGPU reports in its main process without starting CUDA there."""
    return "bfloat16" if torch.cuda.get_device_capability(device) >= (8, 0) else "float16"


def pick_device(requested=None):
    """The torch.device to run on: `requested` ("cpu", "cuda", "cuda:1") when given, else a CUDA GPU when there is
    one, else the CPU. Raises ValueError for a device that is not a CPU or CUDA, or CUDA without a GPU."""
    if not requested:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError as e:
        raise ValueError(f"device must be one of {', '.join(DEVICE_TYPES)} (or cuda:N), got {echo(requested)}") from e
    if device.type not in DEVICE_TYPES:
        raise ValueError(f"device must be one of {', '.join(DEVICE_TYPES)} (or cuda:N), got {echo(requested)}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {echo(requested)} asked for, but PyTorch sees no CUDA GPU here")
    return device


def fast_dtype(device):
    """The precision that decodes fastest on `device`: `gpu_dtype` on a GPU, `fast_cpu_dtype` on a CPU."""
    device = torch.device(device)
    return gpu_dtype(device) if device.type == "cuda" else fast_cpu_dtype()
