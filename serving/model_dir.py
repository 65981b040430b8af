"""What a model directory holds, defined once: its file names and the shape of its `metrics.json`.

    model.safetensors  weights (float16/bfloat16/float32; tied matrices stored once)
    config.json        the TransformerConfig
    tokenizer.json     the BPE tokenizer
    metrics.json       parameters, training (minutes, steps, data, hardware, commands), history, scores
    loss_curve.png     train loss and dev BLEU against training minutes (optional)
    notes.md           what this model is good and bad at, and its data credits, in Markdown (optional)
    head_importance.json  BLEU lost with each attention head switched off (training.head_importance; optional)
    training_snapshots.json  how it learned: probe sentences' translations and cross-attention at each evaluation
                       (training.snapshots; optional), and from_scratch_snapshots.json, those of a from-scratch run
                       of the same architecture, for a model whose own history does not start at step 0
    README.md          the Hugging Face Hub's model card, written from the files above (serving.model_card)

A model directory may also be a model repository on the Hugging Face Hub ("user/name"): `hub_snapshot` fetches it.

Scores are a list of records, one per (data, decoding, precision, variant, subset), each with the command that
produced it; recording a score again replaces the old record.
"""

import json
import logging
import math
import numbers
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
from safetensors.torch import save_file

from interpretability.ablation import head_grid
from transformer.model import TransformerConfig
from transformer.translator import CONFIG, DTYPES, TOKENIZER, WEIGHTS, ModelLoadError, Translator, \
    tied_weight_names

from .device import fast_dtype, pick_device

METRICS = "metrics.json"
LOSS_CURVE = "loss_curve.png"
NOTES = "notes.md"
HEAD_IMPORTANCE = "head_importance.json"
MODEL_CARD = "README.md"
SNAPSHOTS = "training_snapshots.json"
# A from-scratch run of the same architecture and data, for a model whose own history does not start at step 0.
REFERENCE_SNAPSHOTS = "from_scratch_snapshots.json"

AS_GIVEN, ALL_LENGTHS = "as given", "all"
HUB_REPO_ID = re.compile(r"[\w.-]+/[\w.-]+")  # "user/name", as the Hugging Face Hub names repositories


@dataclass
class Score:
    """One evaluation: `data` scored with `decoding` ("greedy", "beam 4") in `precision`, the English `variant`
    ("as given", "lower-cased, no final punctuation", "capitals"), on a `subset` ("all", "11-20 words")."""

    data: str
    decoding: str
    bleu: float
    chrf: float
    n: int
    precision: str = "float32"
    variant: str = AS_GIVEN
    subset: str = ALL_LENGTHS
    command: str = ""
    seconds: float = 0.0

    @property
    def key(self):
        return self.data, self.decoding, self.precision, self.variant, self.subset

    @classmethod
    def from_dict(cls, values):
        """A record of metrics.json; fields it lacks take their defaults, unknown ones are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def decoding_name(beam):
    return "greedy" if beam <= 1 else f"beam {beam}"


def read_metrics(path):
    """metrics.json as a dict; {} when there is none. Raises ValueError on invalid JSON."""
    path = Path(path)
    if not path.is_file():
        return {}
    metrics = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(metrics, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return metrics


def write_atomic(path, text):
    """Write `text` through a temporary file renamed over `path`: a full disk or a crash mid-write leaves the old
    file whole, never half a new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_metrics(path, metrics):
    write_atomic(path, json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")


def scores(metrics):
    """The score records of a metrics dict, skipping any that lack the fields a score needs."""
    records = metrics.get("scores", [])
    out = []
    for values in records if isinstance(records, list) else []:
        try:
            out.append(Score.from_dict(values))
        except (TypeError, AttributeError):  # a record missing a required field, or not a JSON object
            continue
    return out


def add_score(metrics, score):
    """Put `score` into metrics["scores"], replacing the record with the same key."""
    kept = [s for s in scores(metrics) if s.key != score.key]
    metrics["scores"] = [asdict(s) for s in kept + [score]]
    return metrics


def is_hub_repo_id(name):
    return HUB_REPO_ID.fullmatch(str(name)) is not None


def hub_snapshot(repo_id):
    """The local folder of the Hub model repository `repo_id`: downloaded into the Hugging Face cache the first time
    (HF_HOME, HF_HUB_CACHE say where), read from the cache afterwards, offline too (HF_HUB_OFFLINE=1)."""
    from huggingface_hub import snapshot_download  # only for models from the Hub

    return Path(snapshot_download(repo_id))


def save_model_dir(model, tokenizer, model_dir, dtype=torch.float16, metrics=None):
    """Write a directory that `Translator.load` reads, with its Hub model card (README.md), so it can be uploaded
    to the Hub as it is; tied weights are stored once."""
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
        write_metrics(model_dir / METRICS, metrics)
    from .model_card import write_model_card  # the card reads this module's names: imported when needed

    write_model_card(model_dir)


def find_model_dir(model_dir):
    """`model_dir` as a local directory: itself, or for a Hub repository id ("user/name") that is not a directory
    here, its snapshot in the Hugging Face cache (fetched the first time)."""
    path = Path(model_dir)
    try:
        if path.is_dir():
            return path
    except PermissionError as e:  # a directory above it not readable: not "no such directory"
        raise ModelLoadError(f"{model_dir}: cannot read it ({e.strerror})") from None
    if not is_hub_repo_id(model_dir):
        raise ModelLoadError(f"{model_dir}: no such model directory")
    try:
        return hub_snapshot(str(model_dir))
    except Exception as e:  # huggingface_hub's errors vary: not found, offline and not cached, no network, bad id
        raise ModelLoadError(f"{model_dir}: no such model directory, nor a model repository fetched from the Hugging "
                             f"Face Hub ({type(e).__name__}: {e})") from e


def read_head_importance(model_dir):
    """The head_importance.json of a model directory (written by `python -m training.head_importance`) as a dict,
    or None when it has none. "drop" holds, per kind, the BLEU lost with each head alone switched off, one list
    of heads per layer. ValueError when the file is malformed or its table does not fit the model's config.json."""
    path = Path(model_dir) / HEAD_IMPORTANCE
    if not path.is_file():
        return None
    try:
        importance = json.loads(path.read_text(encoding="utf-8"))
        cfg = TransformerConfig.from_dict(json.loads((Path(model_dir) / CONFIG).read_text(encoding="utf-8")))
    except (ValueError, TypeError, OSError) as e:  # bad JSON or UTF-8 (ValueError), an unreadable config
        raise ValueError(f"{path}: cannot read it with the model's {CONFIG}: {e}") from e
    if not isinstance(importance, dict) or not isinstance(importance.get("drop"), dict):
        raise ValueError(f"{path}: expected a JSON object with a \"drop\" table")
    if not isinstance(importance.get("bleu"), numbers.Real):
        raise ValueError(f"{path}: expected the intact model's \"bleu\" as a number")
    for kind, (n_layers, n_heads) in head_grid(cfg).items():
        table = importance["drop"].get(kind)
        fits = isinstance(table, list) and len(table) == n_layers and all(
            isinstance(row, list) and len(row) == n_heads and all(isinstance(x, numbers.Real) for x in row)
            for row in table)
        if not fits:
            raise ValueError(f"{path}: \"drop\" of {kind} must be {n_layers} x {n_heads} numbers (layers x heads, "
                             f"as in {CONFIG})")
    return importance


def read_history(model_dir, name=SNAPSHOTS):
    """A training history beside a model (`training.snapshots`; `name`: its own, or REFERENCE_SNAPSHOTS): a dict,
    or None when there is none."""
    path = Path(model_dir) / name
    if not path.is_file():
        return None
    history = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(history, dict) or not isinstance(history.get("snapshots"), list) or not history["snapshots"]:
        raise ValueError(f"{path}: expected a JSON object with a non-empty \"snapshots\" list")
    wrong = history_problem(history)
    if wrong:
        raise ValueError(f"{path}: {wrong}")
    return history


def _number(value, optional=False):
    return (optional and value is None) or (isinstance(value, numbers.Real) and not isinstance(value, bool)
                                             and math.isfinite(value) and value >= 0)


def history_problem(history):
    """What in a training history (`training.snapshots`' layout) the page could not draw, as a few words, or None:
    its "probes" (sentences), then each snapshot's whole "step", "minutes", optional "train_loss" and "dev_bleu",
    and one probe record per sentence (tokens, translation, cross-attention); optional "curve" rows and "parts"."""
    probes = history.get("probes")
    if not isinstance(probes, list) or not all(isinstance(p, str) for p in probes):
        return "\"probes\" must be a list of sentences"
    for i, snapshot in enumerate(history["snapshots"]):
        where = f"snapshot {i + 1}"
        if not isinstance(snapshot, dict):
            return f"{where} is not an object"
        step = snapshot.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            return f"{where}: \"step\" must be a whole number >= 0"
        if not _number(snapshot.get("minutes")):
            return f"{where}: \"minutes\" must be a number >= 0"
        if not (_number(snapshot.get("train_loss"), True) and _number(snapshot.get("dev_bleu"), True)):
            return f"{where}: \"train_loss\" and \"dev_bleu\" must be numbers or null"
        records = snapshot.get("probes")
        if not isinstance(records, list) or len(records) != len(probes) or not all(
                isinstance(r, dict) and isinstance(r.get("translation"), str) and all(
                    isinstance(r.get(key), list) for key in ("source_tokens", "target_tokens", "cross_attention"))
                for r in records):
            return f"{where}: \"probes\" must hold one record per probe sentence"
    curve, parts = history.get("curve", []), history.get("parts", [])
    if not isinstance(curve, list) or not all(isinstance(row, list) for row in curve):
        return "\"curve\" must be a list of rows"
    if not isinstance(parts, list) or not all(isinstance(part, dict) and isinstance(part.get("command"), str)
                                              for part in parts):
        return "\"parts\" must be a list of objects, each with its \"command\""
    return None


def read_loss_curve(model_dir):
    """The path of the directory's training-curve image, None when it has none; ValueError when it is no image."""
    from PIL import Image, UnidentifiedImageError

    path = Path(model_dir) / LOSS_CURVE
    if not path.is_file():
        return None
    try:
        with Image.open(path) as image:
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise ValueError(f"{path}: not an image ({e})") from e
    return path


def read_notes(model_dir):
    path = Path(model_dir) / NOTES
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


@dataclass
class ModelDirectory:
    """A model directory opened for serving: the translator, and what the directory's optional files say about it.
    An optional file that cannot be read is left out with a line in `problems` (also logged): a server starts
    without it and says so."""

    translator: Translator
    path: Path
    metrics: dict = field(default_factory=dict)
    notes: str = ""
    head_importance: dict | None = None
    history: dict | None = None  # its own training history (training_snapshots.json)
    reference_history: dict | None = None  # a from-scratch run of the same architecture (from_scratch_snapshots.json)
    loss_curve: Path | None = None
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


def open_model(name, dtype=None, device=None):
    """The model directory `name` (a local directory, or a Hugging Face Hub repository id "user/name") on `device`
    (default: a CUDA GPU when there is one, else the CPU; `device.pick_device`), run in `dtype` (a name in DTYPES;
    default float32 on a CPU, the fastest precision on a GPU), with its optional files."""
    device = pick_device(device)
    dtype = dtype or ("float32" if device.type == "cpu" else fast_dtype(device))
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    path = find_model_dir(name)
    directory = ModelDirectory(Translator.load(path, dtype, device), path)
    directory.metrics = directory.read_optional(METRICS, lambda path: read_metrics(path / METRICS), {})
    directory.notes = directory.read_optional(NOTES, read_notes, "")
    directory.head_importance = directory.read_optional(HEAD_IMPORTANCE, read_head_importance)
    directory.history = directory.read_optional(SNAPSHOTS, read_history)
    directory.reference_history = directory.read_optional(
        REFERENCE_SNAPSHOTS, lambda path: read_history(path, REFERENCE_SNAPSHOTS))
    directory.loss_curve = directory.read_optional(LOSS_CURVE, read_loss_curve)
    return directory
