"""What a model directory holds, defined once: its file names and the shape of its `metrics.json`.

    model.safetensors  weights (float16/bfloat16/float32; tied matrices stored once)
    config.json        the TransformerConfig
    tokenizer.json     the BPE tokenizer
    metrics.json       parameters, training (minutes, steps, data, hardware, commands), history, scores
    loss_curve.png     train loss and dev BLEU against training minutes (optional)
    notes.md           what this model is good and bad at, and its data credits, in Markdown (optional)
    head_importance.json  BLEU lost with each attention head switched off (training.head_importance; optional)
    README.md          the Hugging Face Hub's model card, written from the files above (transformer.model_card)

A model directory may also be a model repository on the Hugging Face Hub ("user/name"): `hub_snapshot` fetches it.

Scores are a list of records, one per (data, decoding, precision, variant, subset), each with the command that
produced it; recording a score again replaces the old record.
"""

import json
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
TOKENIZER = "tokenizer.json"
METRICS = "metrics.json"
LOSS_CURVE = "loss_curve.png"
NOTES = "notes.md"
HEAD_IMPORTANCE = "head_importance.json"
MODEL_CARD = "README.md"
REQUIRED_FILES = (WEIGHTS, CONFIG, TOKENIZER)

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


def write_metrics(path, metrics):
    Path(path).write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


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
