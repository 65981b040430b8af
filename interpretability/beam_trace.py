"""Beam search on one sentence, step by step: the hypotheses kept at each step with their scores, and those that
finished, in words (token strings and text), for a learner to watch beam search choose."""

from dataclasses import dataclass

import torch

from transformer.decoding import BeamStep, beam_search, check_decoding
from transformer.tokenizer import decode, pad_sequences
from transformer.translator import check_text

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
    """Beam search on one sentence, step by step (`beam_trace`). steps[i] is the `decoding.BeamStep`
    after step i + 1, its hypotheses TracedHypothesis: `live` those kept, best first, and `finished` those that
    ended at that step."""

    beam: int
    alpha: float  # the length penalty's exponent: normalised = score / ((5 + length) / 6) ** alpha
    steps: list
    winner: TracedHypothesis  # the finished hypothesis beam search chose: translator.translate(text, beam=beam)


@torch.inference_mode()
def beam_trace(translator, text, beam=4):
    """Beam search on `text` with `beam` hypotheses, step by step (see `BeamTrace`), with the settings of
    `translator.translate(text, beam=beam)`, whose translation is the trace's winner."""
    check_text(text)
    check_decoding(beam, None)
    src = pad_sequences(translator.encode_source([text])[0]).to(translator._device)  # (1, S)
    steps, tok = [], translator.tokenizer
    (output,) = beam_search(translator.model, src, beam=beam, alpha=translator.beam_alpha,
                            no_repeat_ngram=translator.no_repeat_ngram, trace=steps)
    readable = [
        BeamStep(live=[traced(tok, h.tokens, h.score, rank=h.rank) for h in step.live],
                 finished=[traced(tok, h.tokens, h.score, normalised=h.normalised) for h in step.finished])
        for step in steps
    ]
    winner = next(h for step in steps for h in step.finished if h.tokens == output)  # the one beam search chose
    return BeamTrace(beam, translator.beam_alpha, readable, traced(tok, winner.tokens, winner.score, winner.normalised))


def traced(tokenizer, ids, score, normalised=None, rank=None):
    tokens = [tokenizer.id_to_token(i) for i in ids]
    return TracedHypothesis(tokens, decode(tokenizer, ids), score, normalised, rank)

