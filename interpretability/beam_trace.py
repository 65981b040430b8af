"""Beam search on one sentence, step by step: the hypotheses kept at each step with their scores, and those that
finished, in words (token strings and text), for a learner to watch beam search choose. The steps are the core's
own (`decoding.beam_search_steps`): watching changes nothing of the search."""

from dataclasses import dataclass
from typing import NamedTuple

import torch

from inputs.checks import check_decoding, check_text
from transformer.decoding import beam_search_steps
from transformer.tokenizer import decode, pad_sequences


class Live(NamedTuple):
    """A hypothesis kept after a step of beam search."""

    tokens: list  # token ids, without <s>
    score: float  # summed log-probabilities of its tokens
    rank: int  # its last token's rank by probability among its parent's next tokens: 1 = the most probable


@dataclass
class BeamStep:
    """One step of beam search on one sentence. A live hypothesis of rank > 1 was kept though its last token was not
    its parent's most probable next token: its whole prefix scored better than the alternatives."""

    live: list  # hypotheses kept after this step, best first: at most `beam`
    finished: list  # hypotheses that ended at this step (`decoding.Finished`)


def beam_steps(model, src, beam, alpha=0.6, no_repeat_ngram=0, rule=None):
    """Every step of beam search on one sentence src (1, S), as token ids: a list of BeamStep. Hypotheses of score
    -inf (kept only while fewer than `beam` candidates exist) are left out."""
    if src.size(0) != 1:
        raise ValueError(f"a beam search trace follows one sentence, got a batch of {src.size(0)}")
    steps, finished_before = [], 0
    for state in beam_search_steps(model, src, beam, alpha, no_repeat_ngram=no_repeat_ngram, rule=rule):
        last_token = state.ys[:, -1:]  # (K, 1)
        parents = state.log_probs[state.parents]  # (K, V): each kept hypothesis's parent's next-token log-probs
        ranks = (parents > parents.gather(1, last_token)).sum(dim=1) + 1  # (K,)
        hypotheses = zip(state.ys[:, 1:].tolist(), state.scores[0].tolist(), ranks.tolist())
        live = [Live(tokens, score, rank) for tokens, score, rank in hypotheses if score > float("-inf")]
        steps.append(BeamStep(live, state.finished[0][finished_before:]))
        finished_before = len(state.finished[0])
    return steps


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
    """Beam search on one sentence, step by step (`beam_trace`). steps[i] is the BeamStep after step i + 1, its
    hypotheses TracedHypothesis: `live` those kept, best first, and `finished` those that ended at that step."""

    beam: int
    alpha: float  # the length penalty's exponent: normalised = score / ((5 + length) / 6) ** alpha
    steps: list
    winner: TracedHypothesis  # the finished hypothesis beam search chose: translator.translate(text, beam=beam)


@torch.inference_mode()
def beam_trace(translator, text, beam=4):
    """Beam search on `text` with `beam` hypotheses, step by step (see `BeamTrace`), with the settings of
    `translator.translate(text, beam=beam)`, whose translation is the trace's winner."""
    check_text(text)
    check_decoding(beam)
    src = pad_sequences(translator.encode_source([text])[0]).to(translator.device)  # (1, S)
    tok = translator.tokenizer
    steps = beam_steps(translator.model, src, beam, translator.beam_alpha, translator.no_repeat_ngram, translator.rule)
    readable = [
        BeamStep(
            live=[traced(tok, h.tokens, h.score, rank=h.rank) for h in step.live],
            finished=[traced(tok, h.tokens, h.score, normalised=h.normalised) for h in step.finished],
        )
        for step in steps
    ]
    winner = max((h for step in steps for h in step.finished), key=lambda h: h.normalised)  # beam search's choice
    return BeamTrace(beam, translator.beam_alpha, readable, traced(tok, winner.tokens, winner.score, winner.normalised))


def traced(tokenizer, ids, score, normalised=None, rank=None):
    tokens = [tokenizer.id_to_token(i) for i in ids]
    return TracedHypothesis(tokens, decode(tokenizer, ids), score, normalised, rank)
