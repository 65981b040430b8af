"""`Translator`: a trained model directory behind two calls, `load` and `translate`.

A model directory holds `model.safetensors` (weights in float32, float16 or bfloat16), `config.json` (the
TransformerConfig) and `tokenizer.json` (BPE); `modeldir` describes the rest of what it may hold (scores,
notes, the training history) and writes it. Looking inside a translation is `interpretability`'s work; checking and
cleaning what people type, `inputs`' (`inputs.text.CheckedTranslator`).
"""

import json
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file

from .decoding import BEAM_ALPHA, generate
from .model import Transformer, TransformerConfig
from .tokenizer import EOS_ID, decode, encode_batch, load_tokenizer, pad_sequences

# What a model directory must hold (modeldir.files names the optional files beside them).
WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"
REQUIRED_FILES = (WEIGHTS, CONFIG, TOKENIZER)

# Precisions a model can run in. float16 halves the bytes each decoding step reads, which is what limits a
# one-sentence decoder step on a CPU (its matrix-vector products wait on memory); batched matrix products on a
# CPU without float16 arithmetic are faster in float32. See bench/decode_latency.py.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class ModelLoadError(ValueError):
    """A model directory whose files are missing or do not fit together."""


def tied_weight_names(cfg):
    """Parameters that are the same tensor as `src_embed.embedding.weight` when embeddings are tied."""
    return {"tgt_embed.embedding.weight", "output_projection.weight"} if cfg.tie_embeddings else set()


def _load_model(model_dir, dtype):
    for name in REQUIRED_FILES:
        try:
            with open(model_dir / name, "rb"):  # opened, so that a missing file and an unreadable one differ
                pass
        except FileNotFoundError:
            raise ModelLoadError(f"{model_dir}: missing {name} (a model directory needs "
                                 f"{', '.join(REQUIRED_FILES)})") from None
        except OSError as e:  # permission denied, a directory of that name
            raise ModelLoadError(f"{model_dir / name}: cannot read it ({e.strerror})") from None
    try:
        values = json.loads((model_dir / CONFIG).read_text(encoding="utf-8"))
        if not isinstance(values, dict):
            raise ValueError(f"expected a JSON object, got a {type(values).__name__}")
        cfg = TransformerConfig.from_dict(values)
    except (ValueError, TypeError) as e:
        raise ModelLoadError(f"{model_dir / CONFIG}: invalid config: {e}") from e
    try:
        tokenizer = load_tokenizer(model_dir / TOKENIZER)
    except Exception as e:
        raise ModelLoadError(f"{model_dir / TOKENIZER}: cannot read tokenizer: {e}") from e
    if tokenizer.get_vocab_size() != cfg.vocab_size:
        raise ModelLoadError(
            f"{model_dir}: tokenizer has {tokenizer.get_vocab_size()} tokens but config.json says "
            f"vocab_size={cfg.vocab_size}"
        )
    try:
        weights = load_file(str(model_dir / WEIGHTS))
    except Exception as e:
        raise ModelLoadError(f"{model_dir / WEIGHTS}: cannot read weights: {e}") from e
    try:
        model = Transformer(cfg)
    except (ValueError, TypeError, RuntimeError) as e:  # e.g. dropout outside [0, 1]
        raise ModelLoadError(f"{model_dir / CONFIG}: invalid config: {e}") from e
    expected = {k: v.shape for k, v in model.state_dict().items() if k not in tied_weight_names(cfg)}
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise ModelLoadError(
            f"{model_dir}: weights do not match config.json (missing: {missing[:5]}, unexpected: {unexpected[:5]})"
        )
    for name, shape in expected.items():
        if weights[name].shape != shape:
            raise ModelLoadError(
                f"{model_dir}: weight {name} has shape {tuple(weights[name].shape)}, config.json implies {tuple(shape)}"
            )
    model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    model = model.to(dtype).eval()
    warn_of_non_finite_weights(model, model_dir / WEIGHTS, dtype)
    return model, tokenizer


def warn_of_non_finite_weights(model, path, dtype):
    """A warning naming the parameters that hold NaN or infinity, as the model runs (`dtype`): weights of a run
    that diverged, or too large for float16. Such a model loads, and translates every sentence into nothing."""
    broken = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if broken:
        shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        warnings.warn(f"{path}: {len(broken)} weight tensors hold NaN or infinite values in {dtype} ({shown}): "
                      f"its translations will be empty or meaningless", RuntimeWarning, stacklevel=4)


# Decoding never repeats an n-gram of this many tokens (0: no such rule). Chosen on dev-news:
# docs/training-log.md#decoding-long-unfamiliar-inputs.
NO_REPEAT_NGRAM = 4


class Translator:
    def __init__(self, model, tokenizer, no_repeat_ngram=NO_REPEAT_NGRAM):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.no_repeat_ngram = no_repeat_ngram
        self.beam_alpha = BEAM_ALPHA

    @classmethod
    def load(cls, model_dir, dtype="float32", device="cpu"):
        """The model of the local directory `model_dir` on `device`, run in `dtype` (a name in DTYPES) whatever
        precision its weights are stored in. `modeldir.directory.open_model` also takes a Hub repository id, picks
        the device and reads the directory's optional files."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        try:
            if not Path(model_dir).is_dir():
                raise ModelLoadError(f"{model_dir}: no such model directory")
        except PermissionError as e:
            raise ModelLoadError(f"{model_dir}: cannot read it ({e.strerror})") from None
        model, tokenizer = _load_model(Path(model_dir), DTYPES[dtype])
        return cls(model.to(device), tokenizer)

    @property
    def device(self):
        """Where the model runs: the inputs of its passes go there."""
        return next(self.model.parameters()).device

    @property
    def max_source_tokens(self):
        return self.model.cfg.max_len - 1  # room for EOS

    def encode_source(self, texts):
        """Token ids (with EOS) of each text of the list `texts`, truncated to what the model takes; and which were
        truncated."""
        ids = encode_batch(self.tokenizer, list(texts))
        truncated = [len(x) > self.max_source_tokens for x in ids]
        return [x[: self.max_source_tokens] + [EOS_ID] for x in ids], truncated

    def _batches(self, sequences, max_tokens):
        """Indices grouped by similar length so little padding is computed."""
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        batch = []
        for i in order:
            if batch and (len(batch) + 1) * len(sequences[i]) > max_tokens:
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch

    def translate_ids(self, texts, beam=1, use_cache=True, max_tokens=4096, sampling=None):
        """Generated token ids for each text (no BOS/EOS), decoded in length-sorted batches; drawn at random when
        `sampling` (a `decoding.Sampling`) is given, each sentence with its own generator seeded `sampling.seed`."""
        sources, _ = self.encode_source(texts)
        outputs = [None] * len(sources)
        for batch in self._batches(sources, max_tokens // beam):
            src = pad_sequences([sources[i] for i in batch]).to(self.device)  # the model may be on a GPU (training)
            outs = generate(self.model, src, beam=beam, use_cache=use_cache, no_repeat_ngram=self.no_repeat_ngram,
                            alpha=self.beam_alpha, sampling=sampling)
            for i, out in zip(batch, outs):
                outputs[i] = out
        return outputs

    def translate(self, text_or_list, beam=1, use_cache=True, sampling=None):
        """English -> Italian: a string for a string, a list (or tuple) of strings for a list (`beam`, `sampling`:
        see `translate_ids`)."""
        single = isinstance(text_or_list, str)
        texts = [text_or_list] if single else list(text_or_list)
        if not texts:
            return []
        outputs = [decode(self.tokenizer, ids) for ids in self.translate_ids(texts, beam, use_cache, sampling=sampling)]
        return outputs[0] if single else outputs

