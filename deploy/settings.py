"""The app's settings, read from its environment once at start (app.py), each checked: a value the app cannot run with
stops it with one line naming the variable, what it takes and what it got (`SettingError`; `settings_or_exit` exits
with code 2), never with a traceback from deep inside torch or Gradio."""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from inputs.checks import echo
from modeldir.device import fast_dtype, pick_device
from modeldir.loading import DTYPES

MEGABYTE = 1024 * 1024
# Gradio drops a session even while its event is queued or running, whose caller then gets no answer: keep at least
# as many as the queue holds events (app.py: 128 waiting) and runs at once.
MIN_SESSIONS = 200


class SettingError(ValueError):
    """An environment variable the app cannot run with (its message: one line)."""


def serving_dtype(device, batch_size):
    """The precision to serve in on `device` (`modeldir.loading.DTYPES`' names). On a CPU that decodes concurrent
    requests together (`batch_size` > 1), float32: batched float16 is no faster per sentence there (no float16
    arithmetic) and a batch's answer may differ from the lone call's, while batched float32 is several times faster per
    sentence than alone, every answer the lone call's (docs/benchmarks.md, Serving under load). Otherwise the precision
    that decodes one sentence fastest (`modeldir.device.fast_dtype`: float16 on most CPUs, bfloat16 or float16 on a
    GPU)."""
    device = torch.device(device)
    return "float32" if device.type == "cpu" and batch_size > 1 else fast_dtype(device)


def _read(environ, name, default, parse, accepted, takes):
    """The variable `name` of `environ` parsed, `default` when unset or empty; a SettingError saying what it `takes`
    unless `parse` reads it and `accepted` the value."""
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = parse(raw)
    except ValueError:
        value = None
    if value is None or not accepted(value):
        raise SettingError(f"{name} must be {takes}, got {echo(raw)}")
    return value


def _whole(environ, name, default, low):
    return _read(environ, name, default, int, lambda value: value >= low, f"a whole number >= {low}")


def _switch(environ, name, default):
    return _read(environ, name, default, {"1": True, "0": False}.get, lambda value: True, "1 or 0")


def decodes_apart(environ, device, batch_size):
    """Whether light batches are best decoded in a process of their own (`serving.decoding_process`): on a CPU that
    decodes concurrent requests together, where a batch's Python and Gradio's event loop would share one interpreter
    lock; not on a GPU, nor on a ZeroGPU Space (SPACES_ZERO_GPU), whose GPU is lent to the server's process."""
    zero_gpu = environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")
    return torch.device(device).type == "cpu" and batch_size > 1 and not zero_gpu


def _seconds(environ, name, default):
    return _read(environ, name, default, float, lambda value: 0 < value < float("inf"), "a positive number of seconds")


@dataclass(frozen=True)
class Settings:
    """What app.py serves and how (docs/app.md#settings, docs/deployment.md#limits-of-a-public-space)."""

    model_dir: Path | str  # a directory, or a Hub id user/name
    device: object  # a torch.device
    batch_size: int  # concurrent light translations decoded together
    dtype: str  # the model's precision, a name of modeldir.loading.DTYPES
    threads: int  # torch threads per operation
    heavy_slots: int  # heavy computations at once
    heavy_budget: float  # seconds a heavy request may take from its arrival, its wait included
    heavy_waiting: int  # heavy requests that may wait for a slot; more are refused at once as busy
    sessions: int  # sessions Gradio keeps (its state_session_capacity), the oldest dropped first
    inspections_mb: int  # memory of the recent translations kept for the experiments (`webapp.served`)
    payloads_mb: int  # memory of the translations' payloads kept until their pages fetch them (gzip JSON)
    body_mb: int  # the largest request body accepted
    decode_process: bool  # light batches decoded in a process of their own (serving.decoding_process)

    def serving(self):
        """The arguments of `webapp.served.ServedModel` these settings give."""
        return dict(
            batch_size=self.batch_size,
            heavy_slots=self.heavy_slots,
            heavy_budget=self.heavy_budget,
            heavy_waiting=self.heavy_waiting,
            inspections_bytes=self.inspections_mb * MEGABYTE,
            payloads_bytes=self.payloads_mb * MEGABYTE,
            decode_process=self.decode_process,
            threads=self.threads,
        )

    @classmethod
    def from_environment(cls, environ=None, default_model_dir=None):
        environ = os.environ if environ is None else environ
        try:
            device = pick_device(environ.get("MODEL_DEVICE"))
        except ValueError as e:
            raise SettingError(f"MODEL_DEVICE: {e}") from None
        batch_size = _whole(environ, "BATCH_SIZE", 16, 1)
        dtype = environ.get("MODEL_DTYPE") or serving_dtype(device, batch_size)
        if dtype not in DTYPES:
            raise SettingError(f"MODEL_DTYPE must be one of {', '.join(DTYPES)}, got {echo(dtype)}")
        threads = _whole(environ, "MODEL_THREADS", 0, 1) or _whole(environ, "OMP_NUM_THREADS", 1, 1)
        heavy_slots = _whole(environ, "HEAVY_SLOTS", 1, 1)
        return cls(
            model_dir=environ.get("MODEL_DIR") or default_model_dir,
            device=device,
            batch_size=batch_size,
            dtype=dtype,
            threads=threads,
            heavy_slots=heavy_slots,
            heavy_budget=_seconds(environ, "HEAVY_BUDGET_S", 30.0),
            heavy_waiting=_whole(environ, "HEAVY_WAITING", 4 * heavy_slots, 0),
            sessions=_whole(environ, "MAX_SESSIONS", 256, MIN_SESSIONS),
            inspections_mb=_whole(environ, "INSPECTIONS_MB", 32, 1),
            payloads_mb=_whole(environ, "PAYLOADS_MB", 8, 1),
            body_mb=_whole(environ, "MAX_BODY_MB", 1, 1),
            decode_process=_switch(environ, "DECODE_PROCESS", decodes_apart(environ, device, batch_size)),
        )


def settings_or_exit(default_model_dir, program="app.py"):
    """The `Settings` of this process's environment, or one line naming the wrong one on stderr and exit code 2: read
    before Gradio is imported (seconds), so a wrong setting is said at once."""
    try:
        return Settings.from_environment(default_model_dir=default_model_dir)
    except SettingError as e:
        print(f"{program}: {e}", file=sys.stderr)
        sys.exit(2)
