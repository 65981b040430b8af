"""Named training configurations: `--config tiny|cpu|base`, or a JSON file of the same shape
({"model": {...TransformerConfig fields...}, "train": {...TrainConfig fields...}})."""

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from transformer.model import TransformerConfig

from .snapshots import DEFAULT_PROBES


@dataclass
class TrainConfig:
    vocab_size: int = 8000  # BPE vocabulary shared by both languages, its 256 byte tokens included
    max_tokens: int = 4096  # padded tokens per batch (source or target side, whichever is wider)
    lr: float = 1e-3  # peak learning rate, reached at the end of warmup
    warmup_steps: int = 1000
    schedule: str = "inverse_sqrt"  # or "cosine" (decays to min_lr over decay_steps)
    decay_steps: int = 0  # cosine only: step at which the learning rate reaches min_lr (0: at the --max-minutes budget)
    min_lr: float = 1e-5
    weight_decay: float = 0.01
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    eval_every: int = 1000  # steps between dev evaluations (and checkpoints)
    eval_limit: int = 0  # dev pairs used during training (0 = all)
    retype_share: float = 0.0  # share of pairs whose English is lower-cased, capitalised or unpunctuated per epoch
    join_share: float = 0.0  # share of pairs joined with one or two others into a longer pair per epoch
    long_weight: float = 1.0  # pairs with at least long_words English words are seen this many times as often
    long_words: int = 11
    seed: int = 1234
    probes: list = field(default_factory=lambda: list(DEFAULT_PROBES))  # sentences snapshotted at each evaluation


CONFIGS = {
    # Trains in seconds: for tests and smoke runs.
    "tiny": (
        dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.0, max_len=64),
        dict(vocab_size=456, max_tokens=512, lr=3e-3, warmup_steps=10, eval_every=20, min_lr=1e-4),
    ),
    # The shipped model: sized for a couple of hours on 2 CPU cores (see README, "Choosing the cpu config").
    "cpu": (
        dict(d_model=256, n_heads=4, n_encoder_layers=4, n_decoder_layers=3, d_ff=1024, dropout=0.1, max_len=128),
        dict(vocab_size=8256, max_tokens=3000, lr=1.5e-3, warmup_steps=800, schedule="cosine",
             eval_every=1000, eval_limit=1000, retype_share=0.2, join_share=0.1),
    ),
    # The paper's base model (Vaswani et al., 2017, Table 3): for a GPU.
    "base": (
        dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.1, max_len=256),
        dict(vocab_size=16000, max_tokens=12000, lr=7e-4, warmup_steps=4000, eval_every=2000),
    ),
}


def load_config(name_or_file):
    """-> (TransformerConfig without vocab_size settled, TrainConfig)."""
    if name_or_file in CONFIGS:
        model, train = CONFIGS[name_or_file]
    else:
        path = Path(name_or_file)
        if not path.is_file():
            raise ValueError(f"unknown config {name_or_file!r}: use one of {', '.join(CONFIGS)} or a JSON file")
        spec = json.loads(path.read_text(encoding="utf-8"))
        model, train = spec.get("model", {}), spec.get("train", {})
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(train) - known)
    if unknown:
        raise ValueError(f"unknown train config keys: {', '.join(unknown)}")
    train_cfg = TrainConfig(**train)
    model_cfg = TransformerConfig.from_dict({**model, "vocab_size": train_cfg.vocab_size})
    return model_cfg, train_cfg


def config_dict(model_cfg, train_cfg):
    return {"model": asdict(model_cfg), "train": asdict(train_cfg)}
