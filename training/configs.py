"""Named training configurations: `--config tiny|cpu|deep|wide|base`, or a JSON file of the same shape
({"model": {...TransformerConfig fields but vocab_size...}, "train": {...TrainConfig fields...}}), and `--set`
overrides of either part.

The model's vocab_size is set in one place: from the tokenizer, once it exists (`model_config`); the training
config only says how large a BPE vocabulary to learn (`bpe_vocab_size`).
"""

import json
import math
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from modeldir.loading import checked_config
from transformer.model import TransformerConfig

from .snapshots import DEFAULT_PROBES


@dataclass
class TrainConfig:
    # Entries of the BPE vocabulary to learn, its 256 byte tokens included; None when none was learnt (the tokenizer
    # is --init-from's). The model's vocab_size is the tokenizer's, whatever this says.
    bpe_vocab_size: int | None = 8000
    max_tokens: int = 4096  # padded tokens per batch (source or target side, whichever is wider)
    lr: float = 1e-3  # peak learning rate, reached at the end of warmup
    warmup_steps: int = 1000
    schedule: str = "inverse_sqrt"  # or "cosine" (decays to min_lr over decay_steps)
    decay_steps: int = 0  # cosine only: step at which the learning rate reaches min_lr (0: at the --max-minutes budget)
    min_lr: float = 1e-5
    weight_decay: float = 0.01
    # Each step pulls every weight towards the --init-from model's by lr * anchor_decay of the gap (L2-SP, decoupled
    # like AdamW's decay): a continued run learns new data while staying near what it knew. 0: no pull.
    anchor_decay: float = 0.0
    # Each step's loss is (1 - teacher_weight) times the references' cross-entropy plus teacher_weight times the KL
    # divergence of the model's next-token distributions from the --init-from model's (word-level distillation, Kim
    # and Rush, 2016, from the model continued: Dakwale and Monz, 2017): a continued run learns new data while it
    # still writes what it wrote where the data does not say otherwise. 0: the references alone.
    teacher_weight: float = 0.0
    # Comma-separated name prefixes of the only weights trained ("decoder", "decoder.layers.*.cross_attention": * is
    # any one part of a name), the rest frozen: fine-tuning one subnetwork on a new domain keeps what the frozen rest
    # knew. "": every weight.
    train_only: str = ""
    # Token ids below this keep their rows of the (tied) embedding: a vocabulary extended with new tokens
    # (`training.recipes.new_vocabulary --add-tokens`) learns its new tokens' rows and leaves the old ones as they
    # were. 0: every row trained.
    frozen_token_rows: int = 0
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    eval_every: int = 1000  # steps between dev evaluations (and checkpoints)
    eval_limit: int = 0  # dev pairs used during training (0 = all)
    retype_share: float = 0.0  # share of pairs whose English is lower-cased, capitalised or unpunctuated per epoch
    join_share: float = 0.0  # share of pairs joined with one or two others into a longer pair per epoch
    long_weight: float = 1.0  # pairs with at least long_words English words are seen this many times as often
    long_words: int = 11
    bpe_dropout: float = 0.0  # probability of skipping each BPE merge when an epoch's pairs are encoded (BPE-dropout)
    seed: int = 1234
    keep_weights: int = 0  # the weights of the last N evaluations kept in OUT/weights/, for `training.recipes.average`
    probes: list = field(default_factory=lambda: list(DEFAULT_PROBES))  # sentences snapshotted at each evaluation


# The settings of each part of a config, with their types: the model's are TransformerConfig's but vocab_size.
SETTINGS = {
    "model": {f.name: f.type for f in fields(TransformerConfig) if f.name != "vocab_size"},
    "train": {f.name: f.type for f in fields(TrainConfig)},
}

CPU_MODEL = dict(d_model=256, n_heads=4, n_encoder_layers=4, n_decoder_layers=3, d_ff=1024, dropout=0.1, max_len=128)
CPU_TRAIN = dict(
    bpe_vocab_size=8256,
    max_tokens=3000,
    lr=1.5e-3,
    warmup_steps=800,
    schedule="cosine",
    eval_every=1000,
    eval_limit=1000,
    retype_share=0.2,
    join_share=0.1,
)

CONFIGS = {
    # Trains in seconds: for tests and smoke runs.
    "tiny": (
        dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.0, max_len=64),
        dict(bpe_vocab_size=456, max_tokens=512, lr=3e-3, warmup_steps=10, eval_every=20, min_lr=1e-4),
    ),
    # The shipped model: sized for a couple of hours on 2 CPU cores (docs/training-log.md#choosing-the-cpu-config).
    "cpu": (CPU_MODEL, CPU_TRAIN),
    # The shipped model grown to 8 encoder layers (`training.recipes.deepen`) goes on training in this one.
    "deep": (dict(CPU_MODEL, n_encoder_layers=8), CPU_TRAIN),
    # The widest shape within the shipped model's budget (60 MB, cached greedy float16 p50 20 ms on 2 cores;
    # docs/benchmarks.md#model-shapes): six encoder layers, two decoder layers. Its batches are sized for a GPU, where
    # a step of this size waits on launching kernels more than on arithmetic, so larger batches are nearly free.
    "wide": (
        dict(CPU_MODEL, d_model=384, n_heads=6, n_encoder_layers=6, n_decoder_layers=2, d_ff=1536),
        dict(CPU_TRAIN, max_tokens=32000, warmup_steps=1000, eval_every=2000, join_share=0.3, long_weight=3),
    ),
    # The paper's base model (Vaswani et al., 2017, Table 3): for a GPU.
    "base": (
        dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.1, max_len=256),
        dict(bpe_vocab_size=16000, max_tokens=12000, lr=7e-4, warmup_steps=4000, eval_every=2000),
    ),
}


def _check_keys(part, keys):
    """A ValueError naming the keys that are no setting of `part` ("model" or "train"), and those that are."""
    unknown = sorted(set(keys) - set(SETTINGS[part]))
    if not unknown:
        return
    hint = ""
    if "vocab_size" in unknown:
        hint = " (the model's vocab_size is the tokenizer's; train.bpe_vocab_size is how many BPE tokens to learn)"
    other = "train" if part == "model" else "model"
    misplaced = [key for key in unknown if key in SETTINGS[other]]
    if misplaced:
        hint = f" (the {other} settings hold {', '.join(misplaced)})"
    raise ValueError(
        f"unknown {part} config keys: {', '.join(unknown)}{hint}; the {part} settings are {', '.join(SETTINGS[part])}"
    )


def model_settings(values):
    """Every TransformerConfig field but vocab_size, from `values` (the others at their defaults), checked now so
    that a bad config fails before any data is read. vocab_size is the tokenizer's: `model_config` adds it."""
    _check_keys("model", values)
    settings = {f.name: values.get(f.name, f.default) for f in fields(TransformerConfig) if f.name in SETTINGS["model"]}
    model_config(settings, vocab_size=1)  # the config's checks; any vocabulary size passes them
    return settings


def model_config(settings, vocab_size):
    """The TransformerConfig of these model settings with the tokenizer's `vocab_size`, checked
    (`modeldir.loading.checked_config`: the lesson's dataclass takes whatever it is given)."""
    return checked_config(dict(settings, vocab_size=vocab_size))


def train_config(values):
    """A TrainConfig from a dict of its fields (a JSON config file's, or a checkpoint's), checked."""
    _check_keys("train", values)
    return TrainConfig(**values)


def load_config(name_or_file):
    """-> (model settings: `model_settings`, TrainConfig) of a named config or a JSON file."""
    if name_or_file in CONFIGS:
        model, train = CONFIGS[name_or_file]
    else:
        path = Path(name_or_file)
        if not path.is_file():
            raise ValueError(f"unknown config {name_or_file!r}: use one of {', '.join(CONFIGS)} or a JSON file")
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:  # not JSON, or not UTF-8
            raise ValueError(f"{path}: not a JSON config: {e}") from None
        if (
            not isinstance(spec, dict)
            or set(spec) - {"model", "train"}
            or not all(isinstance(part, dict) for part in spec.values())
        ):
            raise ValueError(f'{path}: a config is a JSON object {{"model": {{...}}, "train": {{...}}}}')
        model, train = spec.get("model", {}), spec.get("train", {})
    return model_settings(model), train_config(train)


def parse_overrides(items):
    """`--set` items -> (model changes, train changes), each {setting: value} with the value parsed by the
    setting's type: "model.KEY=VALUE" changes a model setting, "train.KEY=VALUE" or plain "KEY=VALUE" a training
    one."""
    changes = {"model": {}, "train": {}}
    for item in items:
        key, equals, text = item.partition("=")
        part, _, name = key.rpartition(".")
        part = part or "train"
        if not equals or part not in changes:
            raise ValueError(f"--set {item}: write KEY=VALUE (a train setting), train.KEY=VALUE or model.KEY=VALUE")
        try:
            _check_keys(part, [name])
            changes[part][name] = parse_setting(SETTINGS[part][name], text)
        except ValueError as e:
            raise ValueError(f"--set {item}: {e}") from None
    return changes["model"], changes["train"]


def parse_setting(kind, text):
    """The value of a setting of type `kind` (bool, int, float, str, or one of them or None) written as `text`."""
    kind = next((k for k in typing.get_args(kind) if k is not type(None)), kind)  # int | None: an int
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected a whole number, got {text!r}") from None
    if kind is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {text!r}")
        return value
    if kind is str:
        return text
    raise ValueError(
        f"a {kind.__name__} cannot be set on the command line: write it in a JSON config file (--config FILE)"
    )


def config_dict(model_cfg, train_cfg):
    return {"model": asdict(model_cfg), "train": asdict(train_cfg)}
