"""`Translator`: a trained model directory behind two calls, `translate` and `inspect`.

A model directory holds `model.safetensors` (weights in float32, float16 or bfloat16), `config.json` (TransformerConfig),
`tokenizer.json` (BPE), and optionally `metrics.json` (scores and training history) and `notes.md` (what the model
is good and bad at), both shown by the app.
"""

import json
import math
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from .decoding import generate
from .model import Transformer, TransformerConfig, sinusoidal_positional_encoding
from .model_dir import CONFIG, METRICS, NOTES, REQUIRED_FILES, TOKENIZER, WEIGHTS, read_metrics, write_metrics
from .tokenizer import BOS_ID, EOS_ID, decode, encode_batch, load_tokenizer, pad_sequences


# Precisions a model can run in. float16 halves the bytes each decoding step reads, which is what limits a
# one-sentence decoder step on a CPU (its matrix-vector products wait on memory); batched matrix products on a
# CPU without float16 arithmetic are faster in float32. See bench/decode_latency.py.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def fast_cpu_dtype():
    """The faster precision for one-sentence decoding on this CPU: float16 where PyTorch has vectorised float16
    matrix-vector kernels (x86 with AVX2 or AVX-512, 64-bit ARM), float32 elsewhere (there float16 is emulated
    element by element, about twice as slow as float32)."""
    arm = platform.machine().lower() in ("arm64", "aarch64")
    return "float16" if arm or torch.backends.cpu.get_cpu_capability() != "DEFAULT" else "float32"


SHOUTED_WORD = re.compile(r"\b[^\W\d_]{2,}\b")  # words of two or more letters
SENTENCE_START = re.compile(r"(^|[.!?]\s+)(\w)")
ENGLISH_I = re.compile(r"\bi\b")  # the pronoun, also in i'm, i'll, i've, i'd


def unshout(text):
    """Text typed in capitals ("WHERE IS THE BATHROOM?") in sentence case ("Where is the bathroom?"); other text
    unchanged. In capitals, every word is spelled letter by letter by a vocabulary learnt on ordinary text, which
    the model rarely sees; in sentence case it reads words it knows. Names lose their capital, which lower-cased
    training input teaches the model to restore. Shouted: two or more words, two thirds of them in capitals."""
    words = SHOUTED_WORD.findall(text)
    if len(words) < 2 or sum(w.isupper() for w in words) < 2 / 3 * len(words):
        return text
    text = SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text.lower())
    return ENGLISH_I.sub("I", text)


class ModelLoadError(ValueError):
    """A model directory whose files are missing or do not fit together."""


def tied_weight_names(cfg):
    """Parameters that are the same tensor as `src_embed.lut.weight` when embeddings are tied."""
    return {"tgt_embed.lut.weight", "generator.weight"} if cfg.tie_embeddings else set()


def save_model_dir(model, tokenizer, model_dir, dtype=torch.float16, metrics=None):
    """Write a directory that `Translator.load` reads; tied weights are stored once."""
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


def _load_model(model_dir, dtype):
    for name in REQUIRED_FILES:
        if not (model_dir / name).is_file():
            raise ModelLoadError(f"{model_dir}: missing {name} (a model directory needs {', '.join(REQUIRED_FILES)})")
    try:
        cfg = TransformerConfig.from_dict(json.loads((model_dir / CONFIG).read_text(encoding="utf-8")))
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
    return model.to(dtype).eval(), tokenizer


@dataclass
class Inspection:
    """Everything the model saw and produced for one sentence; attention maps are numpy arrays with rows =
    queries and columns = keys: encoder (layers, heads, src, src), decoder (layers, heads, tgt, tgt),
    cross (layers, heads, tgt, src). Target positions are the decoder inputs: <s> then the generated tokens."""

    source_tokens: list
    target_tokens: list
    translation: str
    encoder_attention: np.ndarray
    decoder_attention: np.ndarray
    cross_attention: np.ndarray
    top_candidates: list = field(default_factory=list)  # per generated token: [(token, probability), ...]
    source_truncated: bool = False


# Decoding never repeats an n-gram of this many tokens (0: no such rule). Chosen on dev-news: see README.
NO_REPEAT_NGRAM = 4
# Beam search's GNMT length penalty exponent: larger favours longer outputs. Chosen on dev-news: see README.
BEAM_ALPHA = 0.6


class Translator:
    def __init__(self, model, tokenizer, metrics=None, no_repeat_ngram=NO_REPEAT_NGRAM, notes=""):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.metrics = metrics or {}
        self.no_repeat_ngram = no_repeat_ngram
        self.beam_alpha = BEAM_ALPHA
        self.unshout = True  # read text in capitals in sentence case (`unshout`); False feeds it as typed
        self.notes = notes  # Markdown about this model (its directory's notes.md), "" when it has none

    @classmethod
    def load(cls, model_dir, dtype="float32"):
        """The model of `model_dir`, run in `dtype` (a name in DTYPES) whatever precision its weights are stored in."""
        model_dir = Path(model_dir)
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if not model_dir.is_dir():
            raise ModelLoadError(f"{model_dir}: no such model directory")
        model, tokenizer = _load_model(model_dir, DTYPES[dtype])
        try:
            metrics = read_metrics(model_dir / METRICS)
        except ValueError as e:  # also bad UTF-8
            raise ModelLoadError(f"{model_dir / METRICS}: invalid JSON: {e}") from e
        notes_file = model_dir / NOTES
        notes = notes_file.read_text(encoding="utf-8", errors="replace") if notes_file.is_file() else ""
        return cls(model, tokenizer, metrics, notes=notes)

    @property
    def _device(self):
        return next(self.model.parameters()).device

    @property
    def max_source_tokens(self):
        return self.model.cfg.max_len - 1  # room for EOS

    def encode_source(self, texts):
        """Token ids (with EOS) of each text as the model reads it (`unshout`), truncated to what the model takes;
        and which were truncated."""
        ids = encode_batch(self.tokenizer, [unshout(t) for t in texts] if self.unshout else texts)
        truncated = [len(x) > self.max_source_tokens for x in ids]
        return [x[: self.max_source_tokens] + [EOS_ID] for x in ids], truncated

    def positional_encoding(self, n_positions=None):
        """The sinusoidal table the model adds to its embeddings, (positions, d_model) float32 numpy from the formula
        (a float16 model holds it rounded); `max_len` positions unless `n_positions` says otherwise."""
        cfg = self.model.cfg
        return sinusoidal_positional_encoding(cfg.max_len if n_positions is None else n_positions, cfg.d_model).numpy()

    def _source_ids(self, source):
        """Token ids of `source`: a text as the model reads it (with EOS), or its tokens as ids or strings."""
        if isinstance(source, str):
            return self.encode_source([source])[0][0]
        return [t if isinstance(t, int) else self.tokenizer.token_to_id(t) for t in source]

    @torch.inference_mode()
    def embedding_norms(self, source):
        """(‖token embedding × √d_model‖, ‖positional encoding‖) per token of `source` (a text, or its tokens as ids
        or strings), float32 numpy whatever precision the model runs in: how big the position signal is next to the
        meaning it is added to."""
        ids = self._source_ids(source)
        rows = self.model.src_embed.lut.weight[torch.tensor(ids, device=self._device)].float().cpu()
        embedding = rows.norm(dim=-1) * math.sqrt(self.model.cfg.d_model)
        return embedding.numpy(), np.linalg.norm(self.positional_encoding(len(ids)), axis=-1)

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

    def translate_ids(self, texts, beam=1, use_cache=True, max_tokens=4096):
        """Generated token ids for each text (no BOS/EOS), decoded in length-sorted batches."""
        sources, _ = self.encode_source(texts)
        outputs = [None] * len(sources)
        for batch in self._batches(sources, max_tokens // max(beam, 1)):
            src = pad_sequences([sources[i] for i in batch]).to(self._device)  # the model may be on a GPU (training)
            outs = generate(self.model, src, beam=beam, use_cache=use_cache, no_repeat_ngram=self.no_repeat_ngram,
                            alpha=self.beam_alpha)
            for i, out in zip(batch, outs):
                outputs[i] = out
        return outputs

    def translate(self, text_or_list, beam=1, use_cache=True):
        """English -> Italian: a string for a string, a list for a list."""
        single = isinstance(text_or_list, str)
        texts = [text_or_list] if single else list(text_or_list)
        if not texts:
            return []
        outputs = [decode(self.tokenizer, ids) for ids in self.translate_ids(texts, beam, use_cache)]
        return outputs[0] if single else outputs

    @torch.inference_mode()
    def inspect(self, text, beam=1, top_k=5):
        """Translate `text`, then run one teacher-forced pass over the output with attention weights on, so
        every map's labels are the tokens by construction."""
        (source,), (truncated,) = self.encode_source([text])
        generated = self.translate_ids([text], beam=beam)[0]
        src = torch.tensor([source], device=self._device)
        tgt = torch.tensor([[BOS_ID] + generated], device=self._device)
        memory, src_mask, enc_maps = self.model.encode(src, need_weights=True)
        logits, dec_maps, cross_maps = self.model.decode(tgt, memory, src_mask, need_weights=True)
        probs = torch.softmax(logits[0].float(), dim=-1)  # (T, V)
        top_p, top_i = probs.topk(top_k, dim=-1)
        candidates = [
            [(self.tokenizer.id_to_token(i), p) for i, p in zip(ids, ps)]
            for ids, ps in zip(top_i.tolist(), top_p.tolist())
        ]
        stack = lambda maps: torch.stack([m[0] for m in maps]).float().cpu().numpy()  # (layers, heads, Tq, Tk)
        return Inspection(
            source_tokens=[self.tokenizer.id_to_token(i) for i in source],
            target_tokens=[self.tokenizer.id_to_token(i) for i in [BOS_ID] + generated],
            translation=decode(self.tokenizer, generated),
            encoder_attention=stack(enc_maps),
            decoder_attention=stack(dec_maps),
            cross_attention=stack(cross_maps),
            top_candidates=candidates,
            source_truncated=truncated,
        )
