"""`Translator`: a trained model directory behind two calls, `translate` and `inspect`; and `beam_trace`, beam
search on one sentence step by step.

A model directory holds `model.safetensors` (weights in float32, float16 or bfloat16), `config.json` (TransformerConfig),
`tokenizer.json` (BPE), and optionally `metrics.json` (scores and training history) and `notes.md` (what the model
is good and bad at), both shown by the app.
"""

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from .decoding import (BeamStep, Sampling, beam_search, check_decoding, generate, teacher_forced_logits,
                       tempered_distribution)
from .device import fast_dtype, pick_device
from .head_details import HeadDetails, capture_attention, head_arithmetic, head_attention
from .model import (Transformer, TransformerConfig, causal_mask, padding_mask, recording_attention,
                    sinusoidal_positional_encoding)
from .model_card import write_model_card
from .model_dir import (CONFIG, METRICS, NOTES, REQUIRED_FILES, TOKENIZER, WEIGHTS, hub_snapshot, is_hub_repo_id,
                        read_metrics, write_metrics)
from .tokenizer import BOS_ID, BYTE_TOKEN, EOS, EOS_ID, UNK, decode, encode_batch, load_tokenizer, pad_sequences


# Precisions a model can run in. float16 halves the bytes each decoding step reads, which is what limits a
# one-sentence decoder step on a CPU (its matrix-vector products wait on memory); batched matrix products on a
# CPU without float16 arithmetic are faster in float32. See bench/decode_latency.py.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


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
    """Parameters that are the same tensor as `src_embed.embedding.weight` when embeddings are tied."""
    return {"tgt_embed.embedding.weight", "output_projection.weight"} if cfg.tie_embeddings else set()


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
    write_model_card(model_dir)


def find_model_dir(model_dir):
    """`model_dir` as a local directory: itself, or for a Hub repository id ("user/name") that is not a directory
    here, its snapshot in the Hugging Face cache (fetched the first time)."""
    path = Path(model_dir)
    if path.is_dir():
        return path
    if not is_hub_repo_id(model_dir):
        raise ModelLoadError(f"{model_dir}: no such model directory")
    try:
        return hub_snapshot(str(model_dir))
    except Exception as e:  # huggingface_hub's errors vary: not found, offline and not cached, no network, bad id
        raise ModelLoadError(f"{model_dir}: no such model directory, nor a model repository fetched from the Hugging "
                             f"Face Hub ({type(e).__name__}: {e})") from e


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
    # Per generated token, the most probable next tokens as decoding saw them at temperature 1 (those it never writes
    # at 0, left out): [(token, probability), ...].
    top_candidates: list = field(default_factory=list)
    source_truncated: bool = False
    sampling: Sampling | None = None  # how the translation was sampled (temperature, top-k, seed); None: not sampled
    # Per generated token, like top_candidates, the distribution the sampler drew from (at `sampling.temperature`,
    # after its top-k): [] unless sampling.
    tempered_candidates: list = field(default_factory=list)
    beam_trace: "BeamTrace | None" = None  # beam search step by step, when `inspect` ran it (beam > 1)


@dataclass(frozen=True)
class TracedHypothesis:
    """A hypothesis of a `BeamTrace`, readable: its tokens as strings and its text."""

    tokens: list  # token strings, without <s> and </s>
    text: str
    score: float  # summed log-probabilities of its tokens (and of </s>, once finished)
    normalised: float | None = None  # finished: score / length_penalty(step, alpha), what the winner is chosen by
    rank: int | None = None  # live: its last token's rank among its parent's next tokens (1 = the most probable)


@dataclass(frozen=True)
class BeamTrace:
    """Beam search on one sentence, step by step (`Translator.beam_trace`). steps[i] is the `decoding.BeamStep`
    after step i + 1, its hypotheses TracedHypothesis: `live` those kept, best first, and `finished` those that
    ended at that step."""

    beam: int
    alpha: float  # the length penalty's exponent: normalised = score / ((5 + length) / 6) ** alpha
    steps: list
    winner: TracedHypothesis  # the finished hypothesis beam search chose: translate(text, beam=beam)


# Decoding never repeats an n-gram of this many tokens (0: no such rule). Chosen on dev-news: see README.
NO_REPEAT_NGRAM = 4
# Beam search's GNMT length penalty exponent: larger favours longer outputs. Chosen on dev-news: see README.
BEAM_ALPHA = 1.0
# Inputs longer than this many tokens are far longer than the sentences the shipped model learnt from (Tatoeba's
# English: median 7 tokens, 99% under 17, 99.9% under 35), and it translates them worse (bench/long_inputs.py).
LONG_INPUT_TOKENS = 40


@dataclass(frozen=True)
class InputReport:
    """What of one input the model may not read well; the app turns it into a warning next to the translation."""

    tokens: int  # tokens the model read, without </s>
    unreadable: int  # of them, unknown or spelled byte by byte: characters its vocabulary lacks (emoji, other scripts)
    long: bool  # longer than `Translator.long_input_tokens`
    truncated: bool  # longer than the model takes: only the beginning was read

    @property
    def unreadable_share(self):
        return self.unreadable / max(self.tokens, 1)


class Translator:
    def __init__(self, model, tokenizer, metrics=None, no_repeat_ngram=NO_REPEAT_NGRAM, notes=""):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.metrics = metrics or {}
        self.no_repeat_ngram = no_repeat_ngram
        self.beam_alpha = BEAM_ALPHA
        self.unshout = True  # read text in capitals in sentence case (`unshout`); False feeds it as typed
        self.notes = notes  # Markdown about this model (its directory's notes.md), "" when it has none
        self.model_dir = None  # the local directory `load` read it from (a Hub model's is in the Hugging Face cache)
        self.long_input_tokens = LONG_INPUT_TOKENS  # longer inputs get a warning (`input_report`)

    @classmethod
    def load(cls, model_dir, dtype=None, device=None):
        """The model of `model_dir` (a directory, or a model repository on the Hugging Face Hub: "user/name") on
        `device` (default: a CUDA GPU when there is one, else the CPU; `device.pick_device`), run in `dtype` (a name
        in DTYPES; default: float32 on a CPU, the fastest precision on a GPU) whatever precision its weights are
        stored in."""
        device = pick_device(device)
        dtype = dtype or ("float32" if device.type == "cpu" else fast_dtype(device))
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        model_dir = find_model_dir(model_dir)
        model, tokenizer = _load_model(model_dir, DTYPES[dtype])
        try:
            metrics = read_metrics(model_dir / METRICS)
        except ValueError as e:  # also bad UTF-8
            raise ModelLoadError(f"{model_dir / METRICS}: invalid JSON: {e}") from e
        notes_file = model_dir / NOTES
        notes = notes_file.read_text(encoding="utf-8", errors="replace") if notes_file.is_file() else ""
        translator = cls(model.to(device), tokenizer, metrics, notes=notes)
        translator.model_dir = model_dir
        return translator

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
        return self._token_ids(source)

    def _token_ids(self, tokens):
        return [t if isinstance(t, int) else self.tokenizer.token_to_id(t) for t in tokens]

    @torch.inference_mode()
    def embedding_norms(self, source):
        """(‖token embedding × √d_model‖, ‖positional encoding‖) per token of `source` (a text, or its tokens as ids
        or strings), float32 numpy whatever precision the model runs in: how big the position signal is next to the
        meaning it is added to."""
        ids = self._source_ids(source)
        rows = self.model.src_embed.embedding.weight[torch.tensor(ids, device=self._device)].float().cpu()
        embedding = rows.norm(dim=-1) * math.sqrt(self.model.cfg.d_model)
        return embedding.numpy(), np.linalg.norm(self.positional_encoding(len(ids)), axis=-1)

    def input_report(self, inspection):
        """How well the model could read the input of `inspection` (see `InputReport`)."""
        tokens = [t for t in inspection.source_tokens if t != EOS]
        unreadable = sum(t == UNK or BYTE_TOKEN.fullmatch(t) is not None for t in tokens)
        return InputReport(len(tokens), unreadable, len(tokens) > self.long_input_tokens, inspection.source_truncated)

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
        for batch in self._batches(sources, max_tokens // max(beam, 1)):
            src = pad_sequences([sources[i] for i in batch]).to(self._device)  # the model may be on a GPU (training)
            outs = generate(self.model, src, beam=beam, use_cache=use_cache, no_repeat_ngram=self.no_repeat_ngram,
                            alpha=self.beam_alpha, sampling=sampling)
            for i, out in zip(batch, outs):
                outputs[i] = out
        return outputs

    def translate(self, text_or_list, beam=1, use_cache=True, sampling=None):
        """English -> Italian: a string for a string, a list for a list (`sampling`: see `translate_ids`)."""
        single = isinstance(text_or_list, str)
        texts = [text_or_list] if single else list(text_or_list)
        if not texts:
            return []
        outputs = [decode(self.tokenizer, ids) for ids in self.translate_ids(texts, beam, use_cache, sampling=sampling)]
        return outputs[0] if single else outputs

    @torch.inference_mode()
    def inspect(self, text, beam=1, top_k=5, generated=None, sampling=None):
        """Translate `text`, then run one teacher-forced pass over the output with attention weights on, so
        every map's labels are the tokens by construction. `generated`: the output's token ids when they are
        already decoded (`translate_ids`, batched with other sentences: `transformer.batching`); else beam search
        (beam > 1) is traced step by step (`beam_trace`). `top_k`: how many candidates per step; `sampling` (a
        `decoding.Sampling`, beam 1): translate by sampling, and keep each step's distribution at its temperature
        and top-k (`tempered_candidates`) beside the one at temperature 1."""
        check_decoding(beam, sampling)
        (source,), (truncated,) = self.encode_source([text])
        trace = None
        if generated is None and beam > 1:
            trace = self.beam_trace(text, beam)
            generated = self._token_ids(trace.winner.tokens)
        elif generated is None:
            generated = self.translate_ids([text], beam=beam, sampling=sampling)[0]
        src = torch.tensor([source], device=self._device)
        tgt = torch.tensor([[BOS_ID] + generated], device=self._device)
        with recording_attention(self.model) as recorded:
            memory, src_mask = self.model.encode(src)
            logits = self.model.decode(tgt, memory, src_mask)
        logits = teacher_forced_logits(logits, tgt, self.no_repeat_ngram)  # (T, V): what decoding chose from
        tempered = [] if sampling is None else self._candidates(
            tempered_distribution(logits, sampling.temperature, sampling.top_k), top_k)
        stack = lambda kind: torch.stack([m[0] for m in recorded.maps(kind)]).float().cpu().numpy()  # (layers, heads, Tq, Tk)
        return Inspection(
            source_tokens=[self.tokenizer.id_to_token(i) for i in source],
            target_tokens=[self.tokenizer.id_to_token(i) for i in [BOS_ID] + generated],
            translation=decode(self.tokenizer, generated),
            encoder_attention=stack("encoder"),
            decoder_attention=stack("decoder"),
            cross_attention=stack("cross"),
            top_candidates=self._candidates(F.softmax(logits, dim=-1), top_k),
            source_truncated=truncated,
            sampling=sampling,
            tempered_candidates=tempered,
            beam_trace=trace,
        )

    def _candidates(self, probs, top_k):
        """Per row of `probs` (T, V), its `top_k` most probable tokens as [(token, probability)], best first; tokens
        of probability 0 (cut by a sampling top-k, or never written) left out."""
        top_p, top_i = probs.topk(min(top_k, probs.size(-1)), dim=-1)  # (T, top_k)
        return [
            [(self.tokenizer.id_to_token(i), p) for i, p in zip(ids, ps) if p > 0]
            for ids, ps in zip(top_i.tolist(), top_p.tolist())
        ]

    @torch.inference_mode()
    def beam_trace(self, text, beam=4):
        """Beam search on `text` with `beam` hypotheses, step by step (see `BeamTrace`), with the settings of
        `translate(text, beam=beam)`, whose translation is the trace's winner."""
        if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
            raise ValueError(f"beam must be an integer >= 1, got {beam!r}")
        src = pad_sequences(self.encode_source([text])[0]).to(self._device)  # (1, S)
        steps = []
        (output,) = beam_search(self.model, src, beam=beam, alpha=self.beam_alpha,
                                no_repeat_ngram=self.no_repeat_ngram, trace=steps)
        readable = [
            BeamStep(live=[self._traced(h.tokens, h.score, rank=h.rank) for h in step.live],
                     finished=[self._traced(h.tokens, h.score, normalised=h.normalised) for h in step.finished])
            for step in steps
        ]
        winner = next(h for step in steps for h in step.finished if h.tokens == output)  # the one beam search chose
        return BeamTrace(beam, self.beam_alpha, readable, self._traced(winner.tokens, winner.score, winner.normalised))

    def _traced(self, ids, score, normalised=None, rank=None):
        tokens = [self.tokenizer.id_to_token(i) for i in ids]
        return TracedHypothesis(tokens, decode(self.tokenizer, ids), score, normalised, rank)

    @torch.inference_mode()
    def head_details(self, inspection, kind, layer, head, query):
        """Inside one attention head (`kind` "encoder", "decoder" or "cross"; 0-based layer, head and query
        position) for the sentence of `inspection`: q, K, V, scores, mask, softmax weights, output and its share
        of the sub-layer's output, recomputed from the model's weights and the inputs x the sub-layer read in a
        teacher-forced pass over the inspected tokens (`inspect` itself captures nothing, so it stays as fast)."""
        attn = head_attention(self.model, kind, layer, head)
        queries = inspection.source_tokens if kind == "encoder" else inspection.target_tokens
        keys = inspection.target_tokens if kind == "decoder" else inspection.source_tokens
        if not 0 <= query < len(queries):
            raise ValueError(f"query must be in 0..{len(queries) - 1}, got {query}")
        src = torch.tensor([self._token_ids(inspection.source_tokens)], device=self._device)  # (1, S)
        tgt = torch.tensor([self._token_ids(inspection.target_tokens)], device=self._device)  # (1, T)
        with capture_attention(attn) as seen:
            memory, src_mask = self.model.encode(src)
            if kind != "encoder":
                self.model.decode(tgt, memory, src_mask)
        if kind == "decoder":  # the future is hidden
            masked = ~causal_mask(len(keys), src.device)[0, 0, query]  # (T,)
        else:  # padding is hidden (none in one sentence, but the model's rule all the same)
            masked = ~padding_mask(src, self.model.cfg.pad_id)[0, 0, 0]  # (S,)
        numbers = head_arithmetic(attn, seen[attn.w_q][0][0, query], seen[attn.w_k][0][0], masked, head)
        return HeadDetails(
            kind=kind, layer=layer, head=head, query=query, query_token=queries[query], key_tokens=list(keys),
            masked=masked.cpu().numpy(), attention_output=seen[attn.w_o][1][0, query].float().cpu().numpy(),
            **numbers,
        )
