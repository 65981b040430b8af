"""Looking inside one translation: `inspect` translates a sentence and returns what the model saw and produced —
tokens, every attention map, the candidates of each decoding step, everything else its forward computes (`internals`)
— as an `Inspection`; `input_report` says what of the input the model may not read well; `embedding_norms` and
`positional_encoding` show the two signals the model adds at its input.
"""

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from inputs.checks import check_decoding, check_text, check_whole_number, echo
from transformer.decoding import Sampling, apply_decoding_rules, tempered_distribution
from transformer.model import recording_attention, sinusoidal_positional_encoding
from transformer.tokenizer import BOS_ID, BYTE_TOKEN, EOS, UNK

from .beam_trace import BeamTrace, beam_trace
from .internals import Internals, recording_internals
from .kinds import ATTENTION_KINDS

# Inputs longer than this many tokens are far longer than the sentences the shipped model learnt from (Tatoeba's
# English: median 7 tokens, 99% under 17, 99.9% under 35), and it translates them worse (bench/long_inputs.py).
LONG_INPUT_TOKENS = 40
# The most candidates `inspect` keeps per generated token: a chart shows a handful, and each costs a tuple per step.
MAX_CANDIDATES = 100


@dataclass(frozen=True)
class InputReport:
    """What of one input the model may not read well; the app turns it into a warning next to the translation."""

    tokens: int  # tokens the model read, without </s>
    unreadable: int  # of them, unknown or spelled byte by byte: characters its vocabulary lacks (emoji, other scripts)
    long: bool  # longer than `long_input_tokens` (LONG_INPUT_TOKENS)
    truncated: bool  # longer than the model takes: only the beginning was read

    @property
    def unreadable_share(self):
        return self.unreadable / max(self.tokens, 1)


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
    beam_trace: BeamTrace | None = None  # beam search step by step, when `inspect` ran it (beam > 1)
    # Embeddings, residual stream, layer norms, feed-forward units and logits of the same pass (the model map's).
    internals: Internals | None = None
    # The steps where the translator's rule (`Translator.rule`: digits, a century's numerals and names the model never
    # met as the English writes them, words as its training pairs translate them) forbade the token the model alone
    # ranked first: [(step, the model's first choice, the token written), ...].
    overruled: list = field(default_factory=list)

    def attention(self, kind):
        """(maps (layers, heads, queries, keys), query tokens, key tokens) of one of the ATTENTION_KINDS."""
        tokens = {"source": self.source_tokens, "target": self.target_tokens}
        query_side, key_side = ATTENTION_KINDS[kind]
        return getattr(self, f"{kind}_attention"), tokens[query_side], tokens[key_side]


@torch.inference_mode()
def inspect(translator, text, beam=1, top_k=5, generated=None, sampling=None):
    """Translate `text`, then run one teacher-forced pass over the output with attention weights and the model's
    internals recorded (`internals.recording_internals`), so every map's labels are the tokens by construction and
    every view of the translation comes from one forward. `generated`: the output's token ids when they are
    already decoded (`Translator.translate_ids`, batched with other sentences: `serving.batching`); else beam search
    (beam > 1) is traced step by step (`beam_trace`). `top_k`: how many candidates per step (1..MAX_CANDIDATES);
    `sampling` (a `decoding.Sampling`, beam 1): translate by sampling, and keep each step's distribution at its
    temperature and top-k (`tempered_candidates`) beside the one at temperature 1."""
    check_text(text)
    check_decoding(beam, sampling)
    check_whole_number("top_k", top_k, 1, MAX_CANDIDATES)
    (source,), (truncated,) = translator.encode_source([text])
    trace = None
    if generated is None and beam > 1:
        trace = beam_trace(translator, text, beam)
        generated = token_ids(translator.tokenizer, trace.winner.tokens)
    elif generated is None:
        generated = translator.translate_ids([text], beam=beam, sampling=sampling)[0]
    target = [BOS_ID] + generated
    src = torch.tensor([source], device=translator.device)
    tgt = torch.tensor([target], device=translator.device)
    with recording_attention(translator.model) as recorded, recording_internals(translator.model) as internals_seen:
        memory, src_mask = translator.model.encode(src)
        logits = translator.model.decode(tgt, memory, src_mask)
    # (T, V): what the model alone ranked under the other rules, when the translator has a rule of its own
    alone = None if translator.rule is None else teacher_forced_logits(logits.clone(), tgt, translator.no_repeat_ngram)
    # (T, V): what decoding chose from, under the translator's rules
    logits = teacher_forced_logits(logits, tgt, translator.no_repeat_ngram, translator.rule, src)
    tempered = (
        []
        if sampling is None
        else candidates(
            translator.tokenizer, tempered_distribution(logits, sampling.temperature, sampling.top_k), top_k
        )
    )

    def stack(kind):
        return torch.stack([m[0] for m in recorded.maps(kind)]).float().cpu().numpy()  # (layers, heads, Tq, Tk)

    return Inspection(
        source_tokens=[translator.tokenizer.id_to_token(i) for i in source],
        target_tokens=[translator.tokenizer.id_to_token(i) for i in target],
        translation=translator.target_text(text, generated),
        encoder_attention=stack("encoder"),
        decoder_attention=stack("decoder"),
        cross_attention=stack("cross"),
        top_candidates=candidates(translator.tokenizer, F.softmax(logits, dim=-1), top_k),
        source_truncated=truncated,
        sampling=sampling,
        tempered_candidates=tempered,
        beam_trace=trace,
        internals=internals_seen.internals(translator.tokenizer, source, target, logits),
        overruled=[] if alone is None else overruled_steps(translator.tokenizer, alone, logits, generated),
    )


def overruled_steps(tokenizer, alone, ruled, generated):
    """`Inspection.overruled`: the steps of `generated` where the model `alone` (T, V: under the other decoding rules)
    ranked first a token that the translator's rule forbids (-inf in `ruled`, T, V: under every rule)."""
    firsts = alone.argmax(dim=-1).tolist()
    token = tokenizer.id_to_token
    return [
        (step, token(first), token(written))
        for step, (first, written) in enumerate(zip(firsts, generated))
        if first != written and torch.isinf(ruled[step, first])
    ]


def teacher_forced_logits(logits, tgt, no_repeat_ngram=0, rule=None, src=None):
    """The logits (1, T, V) of one teacher-forced pass over `tgt` (1, T) as decoding sees them: (T, V) float32,
    row t with the rules of `apply_decoding_rules` for the prefix tgt[:, :t + 1], so that its distribution is the
    one a decoder that wrote that prefix chose from."""
    logits = logits[0].float()  # (T, V)
    for t in range(logits.size(0)):
        apply_decoding_rules(logits[t : t + 1], tgt[:, : t + 1], no_repeat_ngram, rule, src)
    return logits


def candidates(tokenizer, probs, top_k):
    """Per row of `probs` (T, V), its `top_k` most probable tokens as [(token, probability)], best first; tokens
    of probability 0 (cut by a sampling top-k, or never written) left out."""
    top_p, top_i = probs.topk(min(top_k, probs.size(-1)), dim=-1)  # (T, top_k)
    return [
        [(tokenizer.id_to_token(i), p) for i, p in zip(ids, ps) if p > 0]
        for ids, ps in zip(top_i.tolist(), top_p.tolist())
    ]


def positional_encoding(model, n_positions=None):
    """The sinusoidal table the model adds to its embeddings, (positions, d_model) float32 numpy from the formula
    (a float16 model holds it rounded); `max_len` positions unless `n_positions` says otherwise."""
    cfg = model.cfg
    return sinusoidal_positional_encoding(cfg.max_len if n_positions is None else n_positions, cfg.d_model).numpy()


def source_ids(translator, source):
    """Token ids of `source`: a text as the model reads it (with EOS), or its tokens as ids or strings; a
    ValueError for a token the vocabulary lacks (a negative id would silently pick a row from the end)."""
    if isinstance(source, str):
        return translator.encode_source([source])[0][0]
    if not isinstance(source, (list, tuple)):
        raise ValueError(f"source must be a text or a list of token ids or strings, got {type(source).__name__}")
    ids = token_ids(translator.tokenizer, source)
    vocab_size = translator.model.cfg.vocab_size
    for token, token_id in zip(source, ids):
        if not isinstance(token_id, numbers.Integral) or isinstance(token_id, bool) or not 0 <= token_id < vocab_size:
            raise ValueError(
                f"source token {echo(token)} is not in the vocabulary (ids 0..{vocab_size - 1}, or their token strings)"
            )
    return ids


def token_ids(tokenizer, tokens):
    """Ids of tokens given as ids or strings; None for a string the vocabulary lacks."""
    return [tokenizer.token_to_id(t) if isinstance(t, str) else t for t in tokens]


@torch.inference_mode()
def embedding_norms(translator, source):
    """(‖token embedding × √d_model‖, ‖positional encoding‖) per token of `source` (a text, or its tokens as ids
    or strings), float32 numpy whatever precision the model runs in: how big the position signal is next to the
    meaning it is added to."""
    ids = source_ids(translator, source)
    rows = translator.model.src_embed.embedding.weight[torch.tensor(ids, device=translator.device)].float().cpu()
    embedding = rows.norm(dim=-1) * math.sqrt(translator.model.cfg.d_model)
    return embedding.numpy(), np.linalg.norm(positional_encoding(translator.model, len(ids)), axis=-1)


def input_report(inspection, long_input_tokens=LONG_INPUT_TOKENS):
    """How well the model could read the input of `inspection` (see `InputReport`)."""
    tokens = [t for t in inspection.source_tokens if t != EOS]
    unreadable = sum(t == UNK or BYTE_TOKEN.fullmatch(t) is not None for t in tokens)
    return InputReport(len(tokens), unreadable, len(tokens) > long_input_tokens, inspection.source_truncated)
