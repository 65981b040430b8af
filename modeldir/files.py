"""The files of a model directory, defined once: their names, the shape of `metrics.json`, and how each optional file
is read (a ValueError when it cannot be).

Scores are a list of records, one per (data, decoding, precision, variant, subset), each with the command that
produced it; recording a score again replaces the old record.
"""

import json
import math
import numbers
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from interpretability.kinds import head_grid

from .loading import CONFIG, METRICS, ModelLoadError, read_config  # noqa: F401 (METRICS: files.py names every file)

LOSS_CURVE = "loss_curve.png"
NOTES = "notes.md"
HEAD_IMPORTANCE = "head_importance.json"
MODEL_CARD = "README.md"
SNAPSHOTS = "training_snapshots.json"
# A from-scratch run of the same architecture and data, for a model whose own history does not start at step 0.
REFERENCE_SNAPSHOTS = "from_scratch_snapshots.json"

AS_GIVEN, ALL_LENGTHS = "as given", "all"
# The subset of a multi-reference score: every English sentence once, against all the references the set gives it.
EACH_SENTENCE_ONCE = "each sentence once"
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
    """Put `score` into metrics["scores"]: in the place of the record with the same key (a score measured again
    keeps its line in the model card), or last."""
    records = scores(metrics)
    keys = [s.key for s in records]
    if score.key in keys:
        records[keys.index(score.key)] = score
    else:
        records.append(score)
    metrics["scores"] = [asdict(s) for s in records]
    return metrics


def is_hub_repo_id(name):
    return HUB_REPO_ID.fullmatch(str(name)) is not None


def hub_snapshot(repo_id):
    """The local folder of the Hub model repository `repo_id`: downloaded into the Hugging Face cache the first time
    (HF_HOME, HF_HUB_CACHE say where), read from the cache afterwards, offline too (HF_HUB_OFFLINE=1)."""
    from huggingface_hub import snapshot_download  # only for models from the Hub

    return Path(snapshot_download(repo_id))


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
        raise ModelLoadError(
            f"{model_dir}: no such model directory, nor a model repository fetched from the Hugging "
            f"Face Hub ({type(e).__name__}: {e})"
        ) from e


def read_head_importance(model_dir):
    """The head_importance.json of a model directory (written by `python -m training.head_importance`) as a dict,
    or None when it has none. "drop" holds, per kind, the BLEU lost with each head alone switched off, one list
    of heads per layer. ValueError when the file is malformed or its table does not fit the model's config.json."""
    path = Path(model_dir) / HEAD_IMPORTANCE
    if not path.is_file():
        return None
    try:
        importance = json.loads(path.read_text(encoding="utf-8"))
        cfg = read_config(model_dir)
    except (ValueError, TypeError, OSError) as e:  # bad JSON or UTF-8 (ValueError), an unreadable config
        raise ValueError(f"{path}: cannot read it with the model's {CONFIG}: {e}") from e
    if not isinstance(importance, dict) or not isinstance(importance.get("drop"), dict):
        raise ValueError(f'{path}: expected a JSON object with a "drop" table')
    if not isinstance(importance.get("bleu"), numbers.Real):
        raise ValueError(f'{path}: expected the intact model\'s "bleu" as a number')
    for kind, (n_layers, n_heads) in head_grid(cfg).items():
        table = importance["drop"].get(kind)
        fits = (
            isinstance(table, list)
            and len(table) == n_layers
            and all(
                isinstance(row, list) and len(row) == n_heads and all(isinstance(x, numbers.Real) for x in row)
                for row in table
            )
        )
        if not fits:
            raise ValueError(
                f'{path}: "drop" of {kind} must be {n_layers} x {n_heads} numbers (layers x heads, as in {CONFIG})'
            )
    return importance


def read_history(model_dir, name=SNAPSHOTS):
    """A training history beside a model (`training.snapshots`; `name`: its own, or REFERENCE_SNAPSHOTS): a dict,
    or None when there is none."""
    path = Path(model_dir) / name
    if not path.is_file():
        return None
    history = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(history, dict) or not isinstance(history.get("snapshots"), list) or not history["snapshots"]:
        raise ValueError(f'{path}: expected a JSON object with a non-empty "snapshots" list')
    wrong = history_problem(history)
    if wrong:
        raise ValueError(f"{path}: {wrong}")
    return history


def _number(value, optional=False):
    return (optional and value is None) or (
        isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


def history_problem(history):
    """What in a training history (`training.snapshots`' layout) the page could not draw, as a few words, or None:
    its "probes" (sentences), then each snapshot's whole "step", "minutes", optional "train_loss" and "dev_bleu",
    and one probe record per sentence (tokens, translation, cross-attention); optional "curve" rows and "parts"."""
    probes = history.get("probes")
    if not isinstance(probes, list) or not all(isinstance(p, str) for p in probes):
        return '"probes" must be a list of sentences'
    for i, snapshot in enumerate(history["snapshots"]):
        where = f"snapshot {i + 1}"
        if not isinstance(snapshot, dict):
            return f"{where} is not an object"
        step = snapshot.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            return f'{where}: "step" must be a whole number >= 0'
        if not _number(snapshot.get("minutes")):
            return f'{where}: "minutes" must be a number >= 0'
        if not (_number(snapshot.get("train_loss"), True) and _number(snapshot.get("dev_bleu"), True)):
            return f'{where}: "train_loss" and "dev_bleu" must be numbers or null'
        records = snapshot.get("probes")
        if (
            not isinstance(records, list)
            or len(records) != len(probes)
            or not all(
                isinstance(r, dict)
                and isinstance(r.get("translation"), str)
                and all(isinstance(r.get(key), list) for key in ("source_tokens", "target_tokens", "cross_attention"))
                for r in records
            )
        ):
            return f'{where}: "probes" must hold one record per probe sentence'
    curve, parts = history.get("curve", []), history.get("parts", [])
    if not isinstance(curve, list) or not all(isinstance(row, list) for row in curve):
        return '"curve" must be a list of rows'
    if not isinstance(parts, list) or not all(
        isinstance(part, dict) and isinstance(part.get("command"), str) for part in parts
    ):
        return '"parts" must be a list of objects, each with its "command"'
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
