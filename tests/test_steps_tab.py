"""The "Decoding step by step" tab (webapp/tabs/steps.py): each step's candidates and cross-attention labelled by
the tokens (in both precisions the app runs the model in), the next-token distribution at two temperatures, the beam
at each step, attribution beside cross-attention, and the handlers that draw a step and compute the attribution only
once per sentence and method."""

import html
import re
from dataclasses import replace

import numpy as np
import pytest

from interpretability import beam_trace, inspect
from interpretability.attribution import source_attribution
from interpretability.beam_trace import BeamTrace, TracedHypothesis
from transformer import Translator
from transformer.decoding import BeamStep, Sampling
from web_helpers import PRECISIONS, plain, plotted_ticks, served_translator  # noqa: F401 (fixture: served)
from webapp.plots import ORANGE
from webapp.tabs import steps
from webapp.tokens import decoding_steps, step_tokens

SENTENCE = "I see the cat."
LONG_SENTENCE = "I eat the house the car the water."  # several beam steps, hypotheses ending at different steps


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


@pytest.fixture(scope="module")
def in_each_precision(tiny_model_dir):
    """{precision: the inspection of SENTENCE by the tiny model run in it}."""
    return {dtype: inspect(Translator.load(tiny_model_dir, dtype=dtype), SENTENCE) for dtype in PRECISIONS}


# --- The step view ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", PRECISIONS)
def test_decoding_steps(in_each_precision, dtype):
    inspection = in_each_precision[dtype]
    n = decoding_steps(inspection)
    assert n == len(inspection.top_candidates) == len(inspection.target_tokens)
    assert step_tokens(inspection, 1) == (["<s>"], inspection.target_tokens[1])
    assert step_tokens(inspection, n) == (inspection.target_tokens, "</s>")
    for step in range(1, n + 1):
        fig = steps.top_k_plot(inspection, step)
        (bars,) = fig.data
        candidates = [token for token, _ in inspection.top_candidates[step - 1]]
        assert plotted_ticks(fig.layout.yaxis) == candidates
        assert fig.layout.title.text.startswith(f"Step {step}: top {len(candidates)} next tokens")
        _, chosen = step_tokens(inspection, step)
        orange = [c for c, color in zip(candidates, bars.marker.color) if color == ORANGE]
        assert orange == [chosen]  # greedy: the chosen token is the most probable, marked in orange


@pytest.mark.parametrize("dtype", PRECISIONS)
def test_step_cross_attention(in_each_precision, dtype):
    inspection = in_each_precision[dtype]
    fig = steps.step_attention_plot(inspection, 2)
    assert plotted_ticks(fig.layout.xaxis) == inspection.source_tokens
    assert plotted_ticks(fig.layout.yaxis) == [f"layer {i + 1}" for i in range(len(inspection.cross_attention))]
    assert np.allclose(np.array(fig.data[0].z), inspection.cross_attention[:, :, 1, :].mean(axis=1))
    assert fig.layout.title.text.startswith("Step 2: cross-attention while choosing " +
                                            html.escape(inspection.target_tokens[2], quote=False))


def test_step_view_draws_a_step_and_the_beam_under_beam_search_only(translator, inspection):
    last = decoding_steps(inspection)
    chips, candidates, attention, beam = steps.step_view(inspection, last + 4)  # beyond the end: the last step
    assert f'step {last}</span>' in chips and f'chosen" title="position {last}">&lt;/s&gt;' in chips  # </s> chosen
    assert candidates.layout.title.text.startswith(f"Step {last}:") and not beam.visible
    beamed = inspect(translator, SENTENCE, beam=2)
    *_, beam = steps.step_view(beamed, 1)
    assert beam.visible and "Beam after step 1</b> (" in beam.value
    assert steps.step_view(None, 1)[:3] == ("", None, None)
    assert steps.reset_step(inspection).maximum == max(last, 2) and steps.reset_step(None).maximum == 2


def test_a_new_sentence_resets_the_slider_and_draws_its_first_step(translator, inspection):
    """A translation sets the step slider's value and maximum together and draws step 1 of the new sentence, in one
    answer; a step value of the sentence before (6 of a longer one) is clamped, never refused with an error."""
    short = inspect(translator, "we eat.")
    slider, chips, candidates, attention, beam = steps.new_sentence(short)
    assert (slider.value, slider.maximum) == (1, max(decoding_steps(short), 2))
    assert candidates.layout.title.text.startswith("Step 1:") and 'step 1</span>' in chips
    assert steps.new_sentence(None)[1:4] == ("", None, None)
    step_slider = steps.StepSlider(1, 4, value=1, step=1)
    assert step_slider.preprocess(6) == 6 and step_slider.preprocess(None) == 1  # no "greater than maximum" error
    assert steps.StepSlider.get_block_name(step_slider) == "slider"  # drawn by the browser as a gr.Slider
    _, candidates, _, _ = steps.step_view(short, decoding_steps(short) + 3)  # a step of a longer sentence
    assert candidates.layout.title.text.startswith(f"Step {decoding_steps(short)}:")  # the new sentence's last


def test_move_step_js_stays_within_the_slider():
    script = steps.move_step_js("step", -1)
    assert script == ("(step) => { const r = document.querySelector('#step input[type=range]'); "
                      "return Math.max(1, Math.min(step + (-1), r ? Number(r.max) : step)); }")


def test_attribution_is_computed_once_per_sentence_and_method(served, inspection, monkeypatch):
    """Closed, the panel computes nothing; open, a step change reuses what was computed for the sentence."""
    assert steps.attribution_view(served, inspection, "gradient_x_input", 1, False, None) == (steps.gr.skip(),) * 2
    figure, cached = steps.attribution_view(served, inspection, "gradient_x_input", 1, True, None)
    assert figure.layout.title.text.startswith("Step 1:")
    monkeypatch.setattr(served, "attribute", lambda *args: pytest.fail("computed again"))
    figure, again = steps.attribution_view(served, inspection, "gradient_x_input", 99, True, cached)
    assert again is cached and figure.layout.title.text.startswith(f"Step {decoding_steps(inspection)}:")


# --- Sampling: two temperatures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sampled(translator):
    return inspect(translator, SENTENCE, sampling=Sampling(temperature=2.5, top_k=3, seed=4))


def test_tempered_plot_shows_both_distributions_of_the_same_tokens(sampled):
    assert sampled.tempered_candidates and len(sampled.tempered_candidates) == decoding_steps(sampled)
    for step in range(1, decoding_steps(sampled) + 1):
        fig = steps.tempered_plot(sampled, step)
        at_one, tempered = fig.data
        candidates = sampled.top_candidates[step - 1]
        drawn_from = dict(sampled.tempered_candidates[step - 1])
        tokens = [token for token, _ in candidates]  # top-3 of the top-5 at temperature 1: the same order
        assert set(drawn_from) <= set(tokens) and len(drawn_from) <= 3
        assert [html.unescape(t) for t in fig.layout.yaxis.ticktext] == tokens
        assert np.allclose(at_one.x, [p for _, p in candidates])
        assert np.allclose(tempered.x, [drawn_from.get(t, 0.0) for t in tokens])
        assert list(at_one.y) == list(tempered.y) == list(range(len(tokens)))  # two bars a token
        _, chosen = step_tokens(sampled, step)
        assert [t for t, c in zip(tokens, tempered.marker.color) if c == "#ff9f43"] == [chosen]  # drawn: top-3
        assert fig.layout.title.text.startswith(f"Step {step}: the next token drawn at temperature 2.5, top-3")
        assert tempered.name == "temperature 2.5, top-3 (drawn from)" and at_one.name == "temperature 1"


def test_tempered_plot_without_top_k_names_only_the_temperature(translator):
    sampled = inspect(translator, SENTENCE, sampling=Sampling(temperature=0.5, seed=1))
    fig = steps.tempered_plot(sampled, 1)
    assert "temperature 0.5 (orange" in fig.layout.title.text and "top-" not in fig.layout.title.text
    at_one, tempered = fig.data
    assert sum(tempered.x) > sum(at_one.x) - 1e-6  # a low temperature sharpens: more weight on the top tokens


# --- Beam search step by step ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trace(translator):
    return beam_trace(translator, LONG_SENTENCE, beam=3)


def beam_tables(page):
    """(live rows, finished rows) of beam_html: each row (class, [cell texts])."""
    tables = re.findall(r'<table class="beam">(.*?)</table>', page)
    rows = [[(cls, [plain(c) for c in re.findall(r"<td>(.*?)</td>", row)])
             for cls, row in re.findall(r'<tr class="([^"]*)">(.*?)</tr>', table)] for table in tables]
    return rows[0], rows[1] if len(rows) > 1 else []


def test_beam_html_lists_each_steps_hypotheses_with_their_scores(trace):
    assert len(trace.steps) > 2
    for number, step in enumerate(trace.steps, start=1):
        page = steps.beam_html(trace, number)
        live, finished = beam_tables(page)
        assert [cells[0] for _, cells in live] == [str(i) for i in range(1, len(step.live) + 1)]
        assert [cells[1] for _, cells in live] == [" ".join(h.tokens) for h in step.live]  # best first
        assert [cells[2] for _, cells in live] == [f"{h.score:.2f}" for h in step.live]
        assert [cells[3] == "the most probable" for _, cells in live] == [h.rank == 1 for h in step.live]
        for (_, cells), h in zip(live, step.live):
            assert h.rank == 1 or cells[3] == f"number {h.rank} at its step"
        assert [(cells[0], cells[2]) for _, cells in finished] == [
            (f"{' '.join(h.tokens) or '(empty)'} </s>", f"{h.normalised:.3f}") for h in step.finished]
        assert page.count('class="not-top"') == sum(h.rank > 1 for h in step.live)
        assert ("No hypothesis ended at this step." in page) == (not step.finished)
        assert f"Beam after step {number}</b> ({len(step.live)} of 3 kept" in page
        assert f"{html.escape(trace.winner.text)} — {trace.winner.normalised:.3f}" in page


def test_beam_html_marks_the_winners_path(trace):
    n = len(trace.winner.tokens)  # the winner ended at step n + 1: its prefix of k tokens was kept at step k
    winners = 0
    for number in range(1, len(trace.steps) + 1):
        live, finished = beam_tables(steps.beam_html(trace, number))
        on_path = [cells[1] for cls, cells in live if cls == "on-path"]
        assert on_path == ([" ".join(trace.winner.tokens[:number])] if number <= n else [])
        winners += sum(cls == "winner" for cls, _ in finished)
        if number == n + 1:
            assert ("winner", [" ".join(trace.winner.tokens + ["</s>"]), f"{trace.winner.score:.2f}",
                    f"{trace.winner.normalised:.3f}"]) in finished
    assert winners == 1


def test_beam_html_clamps_steps_beyond_the_trace(trace):
    last = steps.beam_html(trace, len(trace.steps))
    assert steps.beam_html(trace, len(trace.steps) + 5) == last
    assert f"Beam after step {len(trace.steps)}<" in last


def test_beam_html_escapes_tokens():
    winner = TracedHypothesis(["<b>", "&"], "<b>&", -1.0, normalised=-0.9)
    step = BeamStep(live=[TracedHypothesis(["<b>"], "<b>", -0.5, rank=1),
                          TracedHypothesis(["<script>"], "<script>", -0.7, rank=2)], finished=[])
    last = BeamStep(live=[], finished=[winner])
    trace = BeamTrace(beam=2, alpha=1.0, steps=[step, last], winner=winner)
    page = steps.beam_html(trace, 1) + steps.beam_html(trace, 2)
    assert "<script>" not in page and "&lt;b&gt;&amp; — -0.900" in page  # the winner's text
    live, _ = beam_tables(steps.beam_html(trace, 1))
    assert [cells[1] for _, cells in live] == ["<b>", "<script>"] and [cls for cls, _ in live] == ["on-path", ""]
    _, finished = beam_tables(steps.beam_html(trace, 2))
    assert finished == [("winner", ["<b> & </s>", "-1.00", "-0.900"])]


def test_inspecting_with_beam_search_keeps_the_trace_the_view_draws(translator):
    inspection = inspect(translator, LONG_SENTENCE, beam=3)
    assert inspection.beam_trace.winner.tokens == inspection.target_tokens[1:]
    assert inspect(translator, LONG_SENTENCE).beam_trace is None  # greedy: no beam to show


# --- Attribution beside attention ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def attribution(translator, inspection):
    return source_attribution(translator, inspection)


def test_attribution_plot_shows_the_steps_two_rows(attribution, inspection):
    for step in range(1, len(attribution.output_tokens) + 1):
        fig = steps.attribution_plot(attribution, inspection.source_tokens, step)
        (trace,) = fig.data
        assert np.allclose(trace.z, [attribution.attention[step - 1], attribution.scores[step - 1]])
        assert list(fig.layout.yaxis.ticktext) == ["cross-attention (mean)", "gradient × input"]
        assert [html.unescape(t) for t in fig.layout.xaxis.ticktext] == inspection.source_tokens
        title = fig.layout.title.text
        token = html.escape(attribution.output_tokens[step - 1], quote=False)
        assert title.startswith(f"Step {step}: where the decoder looked vs what the choice of {token} depended on")
        rho = attribution.agreement[step - 1]
        assert (f"(Spearman ρ) {rho:+.2f}" in title) if not np.isnan(rho) else "undefined" in title
        assert f"over the sentence {attribution.mean_agreement:+.2f}" in title


def test_attribution_plot_says_an_undefined_agreement(attribution, inspection):
    undefined = replace(attribution, agreement=np.full_like(attribution.agreement, np.nan), mean_agreement=np.nan)
    title = steps.attribution_plot(undefined, inspection.source_tokens, 2).layout.title.text
    assert "(Spearman ρ) undefined (one source token) · over the sentence undefined ·" in title
    assert "nan" not in title


def test_attribution_plot_clamps_the_step(attribution, inspection):
    last = len(attribution.output_tokens)
    beyond = steps.attribution_plot(attribution, inspection.source_tokens, last + 3)
    assert np.allclose(beyond.data[0].z, [attribution.attention[-1], attribution.scores[-1]])
    assert "&lt;/s&gt;" in beyond.layout.title.text  # the last row is about </s>, escaped for plotly


def test_attribution_plot_names_integrated_gradients(translator, inspection):
    result = source_attribution(translator, inspection, method="integrated_gradients", steps=2)
    fig = steps.attribution_plot(result, inspection.source_tokens, 1)
    assert list(fig.layout.yaxis.ticktext) == ["cross-attention (mean)", "integrated gradients"]
