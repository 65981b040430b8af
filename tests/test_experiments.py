"""The experiments' views (webapp/experiments.py) draw what the library computes: heads named as the page names them
and parsed back within the model's range, head diagnostics and importance as layers × heads heatmaps the page's
clicks can read, the translation with heads switched off marked token by token, the next-token distribution at two
temperatures, the beam at each step, and attribution beside cross-attention; and the small views they use."""

import html
import re
from dataclasses import replace

import numpy as np
import pytest

from helpers import tiny_config
from interpretability.ablation import ablated, every_head, head_grid
from interpretability.attribution import source_attribution
from transformer.decoding import BeamStep, Sampling
from interpretability.diagnostics import HeadStats, head_diagnostics
from interpretability.beam_trace import BeamTrace, TracedHypothesis
from webapp import experiments, views
from webapp.views import ATTENTION_KINDS
from interpretability import beam_trace, inspect

SENTENCE = "I see the cat."
LONG_SENTENCE = "I eat the house the car the water."  # several beam steps, hypotheses ending at different steps


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


@pytest.fixture(scope="module")
def grid(translator):
    return head_grid(translator.model.cfg)


def plain(fragment):
    """The text an HTML fragment shows: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def chips(fragment):
    """[(token, marked changed)] of the token chips in an HTML fragment, in order."""
    return [(html.unescape(text), " changed" in classes)
            for classes, text in re.findall(r'<span class="chip([^"]*)" title="position \d+">(.*?)</span>', fragment)]


def changed_indices(fragment):
    return {i for i, (_, changed) in enumerate(chips(fragment)) if changed}


# --- Head names ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [tiny_config(), tiny_config(n_heads=4, n_encoder_layers=1)])
def test_every_head_name_parses_back_to_its_head(cfg):
    for kind, layer, head in every_head(cfg):
        name = experiments.head_name(kind, layer, head)
        assert re.fullmatch(rf"{kind} L{layer + 1} H{head + 1}", name)  # 1-based, like the radios
        assert experiments.parse_head_name(name, head_grid(cfg)) == (kind, layer, head)
    assert experiments.parse_head_name("  cross L2 H1 ", head_grid(cfg)) == ("cross", 1, 0)


@pytest.mark.parametrize("name", ["cross L1H1", "cross 1 1", "Cross L1 H1", "attention L1 H1", "cross L1 H", "",
                                  "cross L-1 H1", None, "cross L1 H1, decoder L1 H1"])
def test_a_malformed_head_name_is_refused_with_the_format(name):
    with pytest.raises(ValueError, match=r"is not a head: write it as '<kind> L<layer> H<head>'.*cross L2 H3"):
        experiments.parse_head_name(name, head_grid(tiny_config()))


@pytest.mark.parametrize("name, kind_range", [
    ("encoder L3 H1", "encoder heads are L1..L2 H1..H2"),  # the decoder has 3 layers, the encoder 2
    ("cross L4 H1", "cross heads are L1..L3 H1..H2"),
    ("decoder L1 H3", "decoder heads are L1..L3 H1..H2"),
    ("cross L0 H1", "cross heads are L1..L3 H1..H2"),  # 1-based: there is no layer 0
    ("encoder L1 H0", "encoder heads are L1..L2 H1..H2"),
])
def test_a_head_outside_the_model_is_refused_with_its_range(name, kind_range):
    with pytest.raises(ValueError, match=rf"is not a head of this model: its {kind_range}"):
        experiments.parse_head_name(name, head_grid(tiny_config()))
    assert experiments.parse_head_name("decoder L3 H2", head_grid(tiny_config())) == ("decoder", 2, 1)


def test_head_choices_cover_every_head_once():
    cfg = tiny_config()
    for kind, (n_layers, n_heads) in head_grid(cfg).items():
        choices = experiments.head_choices(kind, n_layers, n_heads)
        values = [value for _, value in choices]
        assert len(values) == len(set(values)) == n_layers * n_heads
        assert {experiments.parse_head_name(v, head_grid(cfg)) for v in values} == {
            h for h in every_head(cfg) if h[0] == kind}
        for label, value in choices:  # the label is the name without its kind (page.js finds it as "L<y> H<x>")
            assert value == f"{kind} {label}"


# --- Head diagnostics ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
@pytest.mark.parametrize("measure", ["entropy", "same", "eos", "alignment"])
def test_diagnostics_plot_has_a_cell_per_head_with_the_measure(inspection, grid, kind, measure):
    stats = head_diagnostics(inspection)[kind]
    fig = experiments.diagnostics_plot(stats, kind, measure)
    (trace,) = fig.data
    z = np.array(trace.z, dtype=float)
    assert z.shape == grid[kind]
    assert np.allclose(z, getattr(stats, measure), equal_nan=True)  # NaN where the measure does not apply
    assert list(trace.x) == list(range(1, grid[kind][1] + 1)) and list(trace.y) == list(range(1, grid[kind][0] + 1))
    assert trace.name == ATTENTION_KINDS[kind].title  # page.js clicks the kind radio labelled so
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.title.text.startswith(f"{ATTENTION_KINDS[kind].title}: {experiments.MEASURES[measure]}")
    for i, row in enumerate(trace.text):
        for h, cell in enumerate(row):
            value = getattr(stats, measure)[i, h]
            assert cell.startswith("–" if np.isnan(value) else f"{value:.2f}")
            assert html.unescape(cell.split("<br>", 1)[1]) == stats.labels[i][h]


def test_diagnostics_hover_shows_every_measure_and_labels_show_as_written():
    labels = [["looks at </s>", ""]]  # a label with a token plotly would read as markup
    values = lambda *v: np.array([v], dtype=float)  # noqa: E731
    stats = HeadStats(entropy=values(0.2, 0.9), same=values(0.1, 0.0), previous=values(0.0, 0.3),
                      eos=values(0.8, 0.05), punctuation=values(0.0, 0.1), alignment=values(np.nan, np.nan),
                      labels=labels)
    (trace,) = experiments.diagnostics_plot(stats, "encoder", "eos").data
    assert "</s>" not in "".join(trace.text[0]) and "&lt;/s&gt;" in trace.text[0][0]
    assert [plain(c.split("<br>", 1)[0]) for c in trace.text[0]] == ["0.80", "0.05"]
    hover = trace.customdata[0][0]
    for measure, words in experiments.MEASURES.items():
        shown = "–" if measure == "alignment" else f"{getattr(stats, measure)[0, 0]:.2f}"
        assert f"{words}: {shown}" in hover
    assert "<b>looks at &lt;/s&gt;</b>" in hover and "<b>" not in trace.customdata[0][1]


# --- Head importance -----------------------------------------------------------------------------------------------


def importance_of(grid, bleu=30.0):
    """A head_importance.json-like dict for `grid` with made-up drops, a different one per head, -6.0 the
    largest in size."""
    drop, value = {}, -2.5
    for kind, (n_layers, n_heads) in grid.items():
        drop[kind] = []
        for _ in range(n_layers):
            drop[kind].append([value + h * 0.75 for h in range(n_heads)])
            value += 0.5
    drop["cross"][-1][-1] = -6.0  # the largest in size: a head the translation is better without
    return {"data": "dev", "n": 40, "decoding": "greedy", "bleu": bleu, "drop": drop}


@pytest.mark.parametrize("cfg", ["translator", tiny_config()])
def test_importance_plot_has_a_heatmap_per_kind_on_one_symmetric_scale(translator, cfg):
    grid = head_grid(translator.model.cfg if cfg == "translator" else cfg)
    importance = importance_of(grid)
    fig = experiments.importance_plot(importance)
    assert [trace.name for trace in fig.data] == list(ATTENTION_KINDS)  # page.js ticks #off-<name>
    for trace in fig.data:
        drop = np.array(importance["drop"][trace.name])
        assert np.array(trace.z).shape == grid[trace.name] and np.allclose(trace.z, drop)
        assert (trace.zmin, trace.zmax) == (-6.0, 6.0)  # centred on 0: red worse, blue better
        assert np.allclose(trace.customdata, importance["bleu"] - drop)  # the BLEU without the head
        assert "BLEU 30.0 → %{customdata:.1f} without it" in trace.hovertemplate
        labels = {label for label, _ in experiments.head_choices(trace.name, *grid[trace.name])}
        assert {f"L{y} H{x}" for y in trace.y for x in trace.x} == labels  # a click finds its checkbox
    assert [trace.showscale for trace in fig.data] == [True, False, False]
    assert "dev BLEU 30.0 (40 sentences, greedy)" in fig.layout.title.text


def test_importance_plot_of_no_drop_keeps_a_range():
    importance = importance_of(head_grid(tiny_config()))
    importance["drop"] = {kind: np.zeros_like(table).tolist() for kind, table in importance["drop"].items()}
    for trace in experiments.importance_plot(importance).data:
        assert (trace.zmin, trace.zmax) == (-1.0, 1.0)


# --- Heads switched off --------------------------------------------------------------------------------------------


def with_output(inspection, tokens, translation):
    """`inspection` as if the decoder had written `tokens` (then </s>)."""
    return replace(inspection, target_tokens=["<s>", *tokens], translation=translation)


def test_ablation_marks_exactly_the_changed_tokens(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "▁amo", "▁il", "▁gatto", "▁nero", "."], "io amo il gatto nero.")
    page = experiments.ablation_html(normal, off, ["cross L1 H2", "encoder L1 H1"])
    _, before, after = page.split('<div class="chips">')
    assert [token for token, _ in chips(before)] == views.output_tokens(normal)
    assert [token for token, _ in chips(after)] == views.output_tokens(off)
    assert changed_indices(before) == {1} and changed_indices(after) == {1, 4}  # ▁vedo -> ▁amo, ▁nero added
    assert "1 of the 6 normal tokens and 2 of the 7 with the heads off differ (marked)." in page
    assert "Heads switched off:</b> cross L1 H2, encoder L1 H1." in page
    assert "io vedo il gatto." in page and "io amo il gatto nero." in page


def test_ablation_of_a_shorter_translation_marks_the_removed_tokens(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "."], "io.")
    page = experiments.ablation_html(normal, off, ["decoder L1 H1"])
    _, before, after = page.split('<div class="chips">')
    assert changed_indices(before) == {1, 2, 3} and changed_indices(after) == set()
    assert "3 of the 6 normal tokens and 0 of the 3 with the heads off differ" in page  # not "0 changed"


def test_ablation_of_a_token_replaced_is_a_change(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁cane", "."], "io vedo il cane.")  # as long
    page = experiments.ablation_html(normal, off, ["cross L1 H1"])
    assert "did not change" not in page and "1 of the 6 normal tokens and 1 of the 6" in page
    _, before, after = page.split('<div class="chips">')
    assert changed_indices(before) == changed_indices(after) == {3}


def test_ablation_escapes_translations_and_names(inspection):
    normal = with_output(inspection, ["<b>", "."], "<b>.")
    off = with_output(inspection, ["<script>", "."], "<script>alert(1)</script>")
    page = experiments.ablation_html(normal, off, ["<i>"])
    assert "<script>" not in page and "<b>." not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;i&gt;" in page
    assert [token for token, _ in chips(page)] == ["<b>", ".", "</s>", "<script>", ".", "</s>"]


def test_no_change_is_said_and_nothing_marked(inspection):
    page = experiments.ablation_html(inspection, inspection, [])
    assert "The translation did not change." in page and "Heads switched off:</b> none." in page
    assert chips(page) and not any(changed for _, changed in chips(page))


def test_switching_every_head_off_is_reported_as_marked(translator, inspection):
    heads = every_head(translator.model.cfg)
    off = inspect(ablated(translator, heads), SENTENCE)
    names = [experiments.head_name(*h) for h in heads]
    page = experiments.ablation_html(inspection, off, names)
    _, before, after = page.split('<div class="chips">')
    if off.target_tokens == inspection.target_tokens:
        assert "did not change" in page and not changed_indices(page)
    else:
        assert (f"{len(changed_indices(before))} of the {len(views.output_tokens(inspection))} normal tokens and "
                f"{len(changed_indices(after))} of the {len(views.output_tokens(off))} with the heads off") in page
        assert changed_indices(page)
    assert html.escape(", ".join(names)) in page


# --- Sampling: two temperatures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sampled(translator):
    return inspect(translator, SENTENCE, sampling=Sampling(temperature=2.5, top_k=3, seed=4))


def test_tempered_plot_shows_both_distributions_of_the_same_tokens(sampled):
    assert sampled.tempered_candidates and len(sampled.tempered_candidates) == views.decoding_steps(sampled)
    for step in range(1, views.decoding_steps(sampled) + 1):
        fig = experiments.tempered_plot(sampled, step)
        at_one, tempered = fig.data
        candidates = sampled.top_candidates[step - 1]
        drawn_from = dict(sampled.tempered_candidates[step - 1])
        tokens = [token for token, _ in candidates]  # top-3 of the top-5 at temperature 1: the same order
        assert set(drawn_from) <= set(tokens) and len(drawn_from) <= 3
        assert [html.unescape(t) for t in fig.layout.yaxis.ticktext] == tokens
        assert np.allclose(at_one.x, [p for _, p in candidates])
        assert np.allclose(tempered.x, [drawn_from.get(t, 0.0) for t in tokens])
        assert list(at_one.y) == list(tempered.y) == list(range(len(tokens)))  # two bars a token
        _, chosen = views.step_tokens(sampled, step)
        assert [t for t, c in zip(tokens, tempered.marker.color) if c == "#ff9f43"] == [chosen]  # drawn: top-3
        assert fig.layout.title.text.startswith(f"Step {step}: the next token drawn at temperature 2.5, top-3")
        assert tempered.name == "temperature 2.5, top-3 (drawn from)" and at_one.name == "temperature 1"


def test_tempered_plot_without_top_k_names_only_the_temperature(translator):
    sampled = inspect(translator, SENTENCE, sampling=Sampling(temperature=0.5, seed=1))
    fig = experiments.tempered_plot(sampled, 1)
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
        page = experiments.beam_html(trace, number)
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
        live, finished = beam_tables(experiments.beam_html(trace, number))
        on_path = [cells[1] for cls, cells in live if cls == "on-path"]
        assert on_path == ([" ".join(trace.winner.tokens[:number])] if number <= n else [])
        winners += sum(cls == "winner" for cls, _ in finished)
        if number == n + 1:
            assert ("winner", [" ".join(trace.winner.tokens + ["</s>"]), f"{trace.winner.score:.2f}",
                    f"{trace.winner.normalised:.3f}"]) in finished
    assert winners == 1


def test_beam_html_clamps_steps_beyond_the_trace(trace):
    last = experiments.beam_html(trace, len(trace.steps))
    assert experiments.beam_html(trace, len(trace.steps) + 5) == last
    assert f"Beam after step {len(trace.steps)}<" in last


def test_beam_html_escapes_tokens():
    winner = TracedHypothesis(["<b>", "&"], "<b>&", -1.0, normalised=-0.9)
    step = BeamStep(live=[TracedHypothesis(["<b>"], "<b>", -0.5, rank=1),
                          TracedHypothesis(["<script>"], "<script>", -0.7, rank=2)], finished=[])
    last = BeamStep(live=[], finished=[winner])
    trace = BeamTrace(beam=2, alpha=1.0, steps=[step, last], winner=winner)
    page = experiments.beam_html(trace, 1) + experiments.beam_html(trace, 2)
    assert "<script>" not in page and "&lt;b&gt;&amp; — -0.900" in page  # the winner's text
    live, _ = beam_tables(experiments.beam_html(trace, 1))
    assert [cells[1] for _, cells in live] == ["<b>", "<script>"] and [cls for cls, _ in live] == ["on-path", ""]
    _, finished = beam_tables(experiments.beam_html(trace, 2))
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
        fig = experiments.attribution_plot(attribution, inspection.source_tokens, step)
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
    title = experiments.attribution_plot(undefined, inspection.source_tokens, 2).layout.title.text
    assert "(Spearman ρ) undefined (one source token) · over the sentence undefined ·" in title
    assert "nan" not in title


def test_attribution_plot_clamps_the_step(attribution, inspection):
    last = len(attribution.output_tokens)
    beyond = experiments.attribution_plot(attribution, inspection.source_tokens, last + 3)
    assert np.allclose(beyond.data[0].z, [attribution.attention[-1], attribution.scores[-1]])
    assert "&lt;/s&gt;" in beyond.layout.title.text  # the last row is about </s>, escaped for plotly


def test_attribution_plot_names_integrated_gradients(translator, inspection):
    result = source_attribution(translator, inspection, method="integrated_gradients", steps=2)
    fig = experiments.attribution_plot(result, inspection.source_tokens, 1)
    assert list(fig.layout.yaxis.ticktext) == ["cross-attention (mean)", "integrated gradients"]


# --- views: decoding labels and marked chips -----------------------------------------------------------------------


def test_decoding_label_names_each_decoding():
    assert views.decoding_label(1) == "greedy"
    assert views.decoding_label(4) == "beam search (4 beams)"
    assert views.decoding_label(1, Sampling(temperature=0.7, top_k=5, seed=3)) == \
        "sampling (temperature 0.7, top-5, seed 3)"
    assert views.decoding_label(1, Sampling(temperature=2.0)) == "sampling (temperature 2, seed 0)"


def test_token_chips_mark_exactly_the_changed_indices():
    tokens = ["▁a", "▁b", "▁c", "</s>"]
    marked = views.token_chips(tokens, "x", highlight=1, changed={0, 3})
    assert [changed for _, changed in chips(marked)] == [True, False, False, True]
    assert marked.count(" chosen") == 1 and 'class="chip chosen"' in marked  # highlight stays apart
    assert not changed_indices(views.token_chips(tokens, "x"))
