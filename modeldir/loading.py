"""Opening a model directory that may be broken: every file checked before `Translator.load` (the lesson's
from_pretrained, which trusts what it reads) loads it, so that a missing file, a config.json that is not a model, a
tokenizer of another size or weights of another shape is one line naming the file, never a traceback from deep in
PyTorch. The checks read the safetensors header only: the shapes, not the tensors."""

import hashlib
import json
import numbers
import warnings
from dataclasses import fields
from pathlib import Path

import torch
from safetensors import safe_open

from inputs.checks import echo
from transformer.model import Transformer, TransformerConfig
from transformer.tokenizer import load_tokenizer

# What a model directory must hold (files.py names the optional files beside them), and the optional metrics.json,
# whose `weights_sha256` the weights are checked against.
WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"
METRICS = "metrics.json"
WEIGHTS_SHA256 = "weights_sha256"
REQUIRED_FILES = (WEIGHTS, CONFIG, TOKENIZER)

# Precisions a model can run in. float16 halves the bytes each decoding step reads, which is what limits a
# one-sentence decoder step on a CPU (its matrix-vector products wait on memory); batched matrix products on a
# CPU without float16 arithmetic are faster in float32. See bench/decode_latency.py.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def dtype_name(model):
    """The name in DTYPES of the precision `model`'s weights are in."""
    return str(next(model.parameters()).dtype).removeprefix("torch.")


class ModelLoadError(ValueError):
    """A model directory whose files are missing or do not fit together."""


# The weights with a row per token, (V, d_model): one matrix where the embeddings are tied.
TOKEN_ROWS = ("src_embed.embedding.weight", "tgt_embed.embedding.weight", "output_projection.weight")


def tied_weight_names(cfg):
    """Parameters that are the same tensor as `src_embed.embedding.weight` when embeddings are tied: stored once."""
    return {"tgt_embed.embedding.weight", "output_projection.weight"} if cfg.tie_embeddings else set()


def checked_config(values):
    """A TransformerConfig from a dict (config.json's, or a training config's model part), or a ValueError that
    says which value is wrong: the lesson's dataclass takes whatever it is given."""
    if not isinstance(values, dict):
        raise ValueError(f"expected a JSON object, got a {type(values).__name__}")
    unknown = sorted(set(values) - {f.name for f in fields(TransformerConfig)})
    if unknown:
        raise ValueError(f"unknown config keys: {', '.join(unknown)}")
    cfg = TransformerConfig(**values)
    for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    for name in ("n_encoder_layers", "n_decoder_layers"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a whole number, got {value!r}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    if cfg.d_model % 2:
        raise ValueError(f"d_model ({cfg.d_model}) must be even: the positional encoding pairs sin and cos")
    if isinstance(cfg.dropout, bool) or not isinstance(cfg.dropout, numbers.Real) or not 0 <= cfg.dropout <= 1:
        raise ValueError(f"dropout must be a probability between 0 and 1, got {cfg.dropout!r}")
    return cfg


def read_config(model_dir):
    """The checked TransformerConfig of a model directory's config.json; ModelLoadError naming the file."""
    path = Path(model_dir) / CONFIG
    try:
        return checked_config(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as e:  # bad JSON or UTF-8 is a ValueError too
        raise ModelLoadError(f"{path}: invalid config: {e}") from e


def read_tokenizer(model_dir):
    """The tokenizer of the model directory `model_dir`; ModelLoadError (one line, naming the file) if it cannot be
    read."""
    path = Path(model_dir) / TOKENIZER
    try:
        return load_tokenizer(path)
    except Exception as e:
        raise ModelLoadError(f"{path}: cannot read tokenizer: {e}") from e


def check_model_dir(model_dir):
    """Raise ModelLoadError (one line, naming the file) unless `model_dir` holds a config, a tokenizer of its
    vocabulary size and weights of exactly its parameters' names and shapes."""
    model_dir = Path(model_dir)
    try:
        if not model_dir.is_dir():
            raise ModelLoadError(f"{model_dir}: no such model directory")
    except PermissionError as e:
        raise ModelLoadError(f"{model_dir}: cannot read it ({e.strerror})") from None
    for name in REQUIRED_FILES:
        try:
            with open(model_dir / name, "rb"):  # opened, so that a missing file and an unreadable one differ
                pass
        except FileNotFoundError:
            raise ModelLoadError(
                f"{model_dir}: missing {name} (a model directory needs {', '.join(REQUIRED_FILES)})"
            ) from None
        except OSError as e:  # permission denied, a directory of that name
            raise ModelLoadError(f"{model_dir / name}: cannot read it ({e.strerror})") from None
    cfg = read_config(model_dir)
    vocab_size = read_tokenizer(model_dir).get_vocab_size()
    if vocab_size != cfg.vocab_size:
        raise ModelLoadError(
            f"{model_dir}: tokenizer has {vocab_size} tokens but config.json says vocab_size={cfg.vocab_size}"
        )
    try:
        with safe_open(str(model_dir / WEIGHTS), framework="pt") as f:
            stored = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    except Exception as e:
        raise ModelLoadError(f"{model_dir / WEIGHTS}: cannot read weights: {e}") from e
    # Built on the CPU, not under torch.device("meta"): the meta device's random init imports torch._dynamo, which
    # costs every load far more than the CPU's init (docs/benchmarks.md, "The app's start").
    shapes = {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}
    expected = {k: shape for k, shape in shapes.items() if k not in tied_weight_names(cfg)}
    missing, unexpected = sorted(set(expected) - set(stored)), sorted(set(stored) - set(expected))
    if missing or unexpected:
        raise ModelLoadError(
            f"{model_dir}: weights do not match config.json (missing: {missing[:5]}, unexpected: {unexpected[:5]})"
        )
    for name, shape in expected.items():
        if stored[name] != shape:
            raise ModelLoadError(f"{model_dir}: weight {name} has shape {stored[name]}, config.json implies {shape}")


def weights_sha256(model_dir):
    """The sha256 of the directory's weights file, hex."""
    digest = hashlib.sha256()
    with open(Path(model_dir) / WEIGHTS, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_weights_sha256(model_dir):
    """Raise ModelLoadError when metrics.json records a sha256 of the weights and the file has another: a flipped
    byte in a tensor loads without a complaint from safetensors, and translates wrongly. A directory whose
    metrics.json records none (made before the exporter wrote it) is not checked."""
    path = Path(model_dir) / METRICS
    try:
        recorded = json.loads(path.read_text(encoding="utf-8")).get(WEIGHTS_SHA256)
    except (OSError, ValueError, AttributeError):
        return  # no metrics.json, or one the model card reports as unreadable: nothing recorded to check against
    if isinstance(recorded, str) and recorded != weights_sha256(model_dir):
        raise ModelLoadError(
            f"{Path(model_dir) / WEIGHTS}: its sha256 differs from the one metrics.json records "
            f"({recorded[:12]}...): the file was damaged or replaced after export"
        )


def check_dtype(dtype):
    """A ValueError unless `dtype` names one of DTYPES."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {echo(dtype)}")


def load_checked(translator_class, model_dir, dtype="float32", device="cpu"):
    """`translator_class.load(model_dir, dtype, device)` once `check_model_dir` and `check_weights_sha256` pass, with a
    warning when the weights hold NaN or infinity in `dtype`."""
    check_dtype(dtype)
    check_model_dir(model_dir)
    check_weights_sha256(model_dir)
    translator = translator_class.load(model_dir, dtype, device)
    warn_of_non_finite_weights(translator.model, Path(model_dir) / WEIGHTS, dtype)
    return translator


def warn_of_non_finite_weights(model, path, dtype):
    """A warning naming the parameters that hold NaN or infinity, as the model runs (`dtype`): weights of a run
    that diverged, or too large for float16. Such a model loads, and translates every sentence into nothing."""
    broken = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if broken:
        shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        warnings.warn(
            f"{path}: {len(broken)} weight tensors hold NaN or infinite values in {dtype} ({shown}): "
            f"its translations will be empty or meaningless",
            RuntimeWarning,
            stacklevel=3,
        )
