"""Watching beam search: `interpretability.beam_trace` (and `beam_steps`, from the core's `beam_search_steps`) record
every step's hypotheses with the scores the search used, and the trace's winner is the translation beam search
returns."""

import copy

import pytest
import torch
import torch.nn.functional as F

from helpers import make_model, random_sequences, suppress_eos
from interpretability import beam_trace, inspect
from interpretability.beam_trace import BeamStep, BeamTrace, beam_steps
from transformer.decoding import beam_search, length_penalty
from transformer.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, decode, pad_sequences

SENTENCES = ["I see the cat.", "they want the water.", "the cat and the dog.", "I eat the house the car the water."]


def teacher_forced_log_probs(model, src, tokens):
    """log p(token | source, earlier tokens) (len(tokens),) from one pass over <s> tokens, with decoding's rule
    that padding, <s> and <unk> are never written."""
    memory, src_mask = model.encode(src)
    logits = model.decode(torch.tensor([[BOS_ID] + tokens]), memory, src_mask)
    logits = logits[0].float()
    logits[:, [PAD_ID, BOS_ID, UNK_ID]] = float("-inf")
    log_probs = F.log_softmax(logits, dim=-1)  # (T + 1, V)
    return log_probs, log_probs[:-1].gather(1, torch.tensor(tokens)[:, None])[:, 0]


@pytest.mark.parametrize("beam", [1, 2, 4])
def test_winner_is_the_beam_search_translation(translator, beam):
    for text in SENTENCES:
        trace = beam_trace(translator, text, beam=beam)
        assert isinstance(trace, BeamTrace) and trace.beam == beam and trace.alpha == translator.beam_alpha
        assert trace.winner.text == translator.translate(text, beam=beam)
        (ids,) = translator.translate_ids([text], beam=beam)
        assert trace.winner.tokens == [translator.tokenizer.id_to_token(i) for i in ids]
        assert trace.winner in [h for step in trace.steps for h in step.finished]
        best = max(h.normalised for step in trace.steps for h in step.finished)
        assert trace.winner.normalised == best


def test_steps_keep_at_most_beam_hypotheses_best_first(translator):
    for text in SENTENCES:
        trace = beam_trace(translator, text, beam=3)
        assert all(isinstance(step, BeamStep) for step in trace.steps)
        for number, step in enumerate(trace.steps, start=1):
            assert 1 <= len(step.live) <= 3
            scores = [h.score for h in step.live]
            assert scores == sorted(scores, reverse=True) and max(scores) <= 0
            assert all(len(h.tokens) == number and h.rank >= 1 and h.normalised is None for h in step.live)
            for h in step.live + step.finished:
                assert h.text == decode(translator.tokenizer, [translator.tokenizer.token_to_id(t) for t in h.tokens])


def test_finished_scores_are_normalised_by_the_length_penalty(translator):
    strict = copy.copy(translator)
    for alpha in (translator.beam_alpha, 0.3):
        strict.beam_alpha = alpha
        trace = beam_trace(strict, "I eat the house the car the water.", beam=4)
        assert trace.alpha == alpha
        finished = [(number, h) for number, step in enumerate(trace.steps, start=1) for h in step.finished]
        assert finished
        for number, h in finished:
            assert len(h.tokens) + 1 == number  # ended with </s>, which counts as a token
            assert h.normalised == pytest.approx(h.score / length_penalty(number, alpha), rel=1e-9)
            assert h.rank is None


def test_scores_are_summed_log_probabilities_of_a_teacher_forced_pass(translator):
    model = translator.model
    src = pad_sequences(translator.encode_source(["I eat the house the car the water."])[0])
    steps = beam_steps(model, src, beam=4, alpha=translator.beam_alpha)
    for step in steps[:4]:
        for h in step.live:
            log_probs, chosen = teacher_forced_log_probs(model, src, h.tokens)
            assert h.score == pytest.approx(chosen.sum().item(), abs=1e-4)
            last = log_probs[len(h.tokens) - 1]  # the parent's next-token distribution
            assert h.rank == 1 + (last > chosen[-1]).sum().item()
        for h in step.finished:
            log_probs, chosen = teacher_forced_log_probs(model, src, h.tokens)
            assert h.score == pytest.approx(chosen.sum().item() + log_probs[-1, EOS_ID].item(), abs=1e-4)
    first_tokens = [h.tokens[0] for h in steps[0].live]  # the first step keeps the most probable first tokens
    log_probs, _ = teacher_forced_log_probs(model, src, [])
    best_first = [t for t in log_probs[0].topk(5).indices.tolist() if t != EOS_ID][:4]
    assert first_tokens == best_first


@pytest.mark.parametrize("seed", [0, 3])
def test_tracing_does_not_change_the_search_even_at_the_length_cap(seed):
    for model in (make_model(seed=seed), suppress_eos(make_model(seed=seed))):
        for tokens in random_sequences([2, 6], model.cfg.vocab_size, seed=seed):
            src = pad_sequences([tokens])
            steps = beam_steps(model, src, beam=3, alpha=0.6)
            (searched,) = beam_search(model, src, beam=3, alpha=0.6)
            traced = max((h for step in steps for h in step.finished), key=lambda h: h.normalised).tokens
            assert traced == searched
            winners = [h for step in steps for h in step.finished if h.tokens == traced]
            assert len(winners) == 1
            if not any(step.finished for step in steps[:-1]):  # nothing ended with </s>: the best live one at the cap
                (capped,) = steps[-1].finished
                assert capped.tokens == steps[-1].live[0].tokens and capped.score == steps[-1].live[0].score
                assert capped.normalised == pytest.approx(capped.score / length_penalty(len(steps), 0.6))


def test_a_trace_follows_one_sentence(translator):
    model = make_model()
    src = pad_sequences(random_sequences([3, 5], model.cfg.vocab_size))
    with pytest.raises(ValueError, match="one sentence"):
        beam_steps(model, src, beam=2)
    for beam in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="beam"):
            beam_trace(translator, "I see the cat.", beam=beam)


def test_inspect_with_beam_search_keeps_its_trace(translator):
    """The app's beam view reads the trace from the inspection: same winner, and no trace for greedy decoding."""
    text = "I see the cat."
    inspection = inspect(translator, text, beam=3)
    assert inspection.beam_trace is not None and inspection.beam_trace.beam == 3
    assert inspection.translation == inspection.beam_trace.winner.text == translator.translate(text, beam=3)
    assert inspection.target_tokens[1:] == inspection.beam_trace.winner.tokens
    assert inspect(translator, text).beam_trace is None
