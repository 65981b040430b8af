"""A model directory written (`save_model_dir`: what training exports) and opened (`open_model`: what the app, the
API and the evaluation scripts load), with what its optional files say about the model (`ModelDirectory`)."""

import logging
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file

from inputs.text import CheckedTranslator

from .card import write_model_card
from .device import fast_dtype, pick_device
from .files import (
    HEAD_IMPORTANCE,
    LOSS_CURVE,
    METRICS,
    NOTES,
    REFERENCE_SNAPSHOTS,
    SNAPSHOTS,
    find_model_dir,
    read_head_importance,
    read_history,
    read_loss_curve,
    read_metrics,
    read_notes,
    write_metrics,
)
from .loading import (
    CONFIG,
    TOKENIZER,
    WEIGHTS,
    WEIGHTS_SHA256,
    check_dtype,
    load_checked,
    tied_weight_names,
    weights_sha256,
)
from .seen import WORD_COUNTS, WordCounts, read_word_counts

# What a directory records of how its weights were trained: a model made from another one's weights (averaged, grown)
# keeps them, so that a run continuing it (--init-from) goes on from them.
TRAINING_RECORDS = (NOTES, SNAPSHOTS, WORD_COUNTS)


def copy_training_records(source_dir, model_dir, skip=()):
    """Copy the TRAINING_RECORDS that `source_dir` has, but those in `skip`, into `model_dir`."""
    for name in TRAINING_RECORDS:
        if name not in skip and (Path(source_dir) / name).is_file():
            shutil.copyfile(Path(source_dir) / name, Path(model_dir) / name)


def save_remade_model(base, model, tokenizer, model_dir, dtype, how):
    """Write `model`, which a recipe made from the opened model directory `base` (grown, given a new vocabulary), to
    `model_dir`. `how` ({name: record}) is recorded with the run `base` came from, so that a run continuing the model
    (--init-from) keeps it in its history; `base`'s scores are dropped (the model is scored anew) and its training
    records kept."""
    metrics = {
        **base.metrics,
        "parameters": model.num_parameters(),
        "config": {**base.metrics.get("config", {}), "model": asdict(model.cfg)},
        "training": {**base.metrics.get("training", {}), **how},
    }
    metrics.pop("scores", None)
    save_model_dir(model, tokenizer, model_dir, dtype=dtype, metrics=metrics)
    copy_training_records(base.path, model_dir)


def save_model_dir(model, tokenizer, model_dir, dtype=torch.float16, metrics=None):
    """Write a directory that `Translator.load` (and `open_model`) reads, with its Hub model card (README.md), so it can
    be uploaded
    to the Hub as it is; tied weights are stored once. `metrics` (metrics.json) records the weights' sha256, which
    `open_model` checks."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    skip = tied_weight_names(model.cfg)
    weights = {
        name: tensor.detach().to("cpu", dtype).contiguous()
        for name, tensor in model.state_dict().items()
        if name not in skip
    }
    save_file(weights, str(model_dir / WEIGHTS))
    model.cfg.to_json(model_dir / CONFIG)
    tokenizer.save(str(model_dir / TOKENIZER))
    if metrics is not None:
        write_metrics(model_dir / METRICS, {**metrics, WEIGHTS_SHA256: weights_sha256(model_dir)})
    write_model_card(model_dir)


@dataclass
class ModelDirectory:
    """A model directory opened for serving: the translator, and what the directory's optional files say about it.
    An optional file that cannot be read is left out with a line in `problems` (also logged): a server starts
    without it and says so."""

    translator: CheckedTranslator
    path: Path
    metrics: dict = field(default_factory=dict)
    notes: str = ""
    head_importance: dict | None = None
    history: dict | None = None  # its own training history (training_snapshots.json)
    reference_history: dict | None = None  # a from-scratch run of the same architecture (from_scratch_snapshots.json)
    loss_curve: Path | None = None
    word_counts: WordCounts | None = None  # how many training pairs held each word (word_counts.json.gz)
    problems: list = field(default_factory=list)

    def read_optional(self, name, reader, empty=None):
        """`reader(path)` of the optional file `name`; `empty`, and a problem said, when it cannot be read."""
        try:
            return reader(self.path)
        except (ValueError, OSError) as e:  # ValueError: bad JSON or UTF-8 too
            problem = f"{name} left out: {e}" if name in str(e) else f"{name} left out: {self.path / name}: {e}"
            self.problems.append(problem)
            logging.getLogger(__name__).warning(problem)
            return empty


def open_for_translation(path, dtype, device):
    """The model directory `path` with only what translating needs: its `CheckedTranslator` (`load_checked`) and its
    word counts, which the translator reads and writes by (`CheckedTranslator.know_words`: a capitalised word they
    say the model barely knows is read in lower case, a name it never met written as the English writes it). A
    process that only decodes opens this, not `open_model`, whose training histories are megabytes of JSON."""
    directory = ModelDirectory(load_checked(CheckedTranslator, path, dtype, device), Path(path))
    directory.word_counts = directory.read_optional(WORD_COUNTS, read_word_counts)
    if directory.word_counts is not None:
        directory.translator.know_words(directory.word_counts)
    return directory


def open_model(name, dtype=None, device=None):
    """The model directory `name` (a local directory, or a Hugging Face Hub repository id "user/name") on `device`
    (default: a CUDA GPU when there is one, else the CPU; `device.pick_device`), run in `dtype` (a name in DTYPES;
    default float32 on a CPU, the fastest precision on a GPU), with its optional files."""
    device = pick_device(device)
    dtype = dtype or ("float32" if device.type == "cpu" else fast_dtype(device))
    check_dtype(dtype)  # before a Hub repository is fetched
    directory = open_for_translation(find_model_dir(name), dtype, device)
    directory.metrics = directory.read_optional(METRICS, lambda path: read_metrics(path / METRICS), {})
    directory.notes = directory.read_optional(NOTES, read_notes, "")
    directory.head_importance = directory.read_optional(HEAD_IMPORTANCE, read_head_importance)
    directory.history = directory.read_optional(SNAPSHOTS, read_history)
    directory.reference_history = directory.read_optional(
        REFERENCE_SNAPSHOTS, lambda path: read_history(path, REFERENCE_SNAPSHOTS)
    )
    directory.loss_curve = directory.read_optional(LOSS_CURVE, read_loss_curve)
    return directory
