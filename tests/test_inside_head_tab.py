"""The "Inside one head" tab (webapp/tabs/inside_head.py): plotly figures whose labels are the tokens, whose numbers
are those of `interpretability.head_details`, with hidden keys grey and at weight 0; the formula that goes with them;
and the handler that keeps the query-token radio to this kind's tokens."""


import numpy as np
import pytest

from interpretability import head_details, inspect
from web_helpers import plain, served_translator  # noqa: F401 (fixture: served)
from webapp.attention_kinds import ATTENTION_KINDS, attention_maps
from webapp.plots import ORANGE
from webapp.tabs import inside_head
from webapp.tokens import output_tokens


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, "we want the water.")


@pytest.fixture(scope="module")
def decoder_head(translator, inspection):
    """Decoder self-attention from the third position: later positions are hidden."""
    return head_details(translator, inspection, "decoder", 0, 1, 2)


def test_query_choices_are_the_query_tokens(inspection):
    for kind in ATTENTION_KINDS:
        _, queries, _ = attention_maps(inspection, kind)
        assert inside_head.query_choices(inspection, kind) == [(token, i) for i, token in enumerate(queries)]


def test_score_columns_go_from_score_to_weight(decoder_head):
    d = decoder_head
    score, scaled, mask, weight = inside_head.score_columns(d).values()
    assert np.array_equal(score, d.scores) and np.allclose(scaled, d.scores / np.sqrt(d.d_k))
    assert np.array_equal(mask == -np.inf, d.masked) and np.all(mask[~d.masked] == 0)
    assert np.all(weight[d.masked] == 0) and weight.sum() == pytest.approx(1, abs=1e-6)
    assert d.masked.tolist() == [j > 2 for j in range(len(d.key_tokens))]


def test_score_plot_labels_are_the_keys_and_hidden_keys_weigh_nothing(decoder_head):
    d = decoder_head
    fig = inside_head.score_plot(d)
    assert [plain(t) for t in fig.layout.yaxis.ticktext] == d.key_tokens
    assert "&lt;s&gt;" in fig.layout.yaxis.ticktext[0]  # escaped: plotly would read `<s>` as strike-through
    score_bars, scaled_bars, weight_bars = [t for t in fig.data if t.type == "bar"]
    score_numbers, scaled_numbers, mask_text, weight_numbers = sorted(
        [t for t in fig.data if t.type == "scatter"], key=lambda t: t.xaxis)  # x, x2, x3, x4: left to right
    assert np.allclose(score_bars.x, d.scores) and np.allclose(scaled_bars.x, d.scaled)
    assert np.allclose(weight_bars.x, d.weights) and all(weight_bars.x[j] == 0 for j in np.flatnonzero(d.masked))
    hidden = [colour == inside_head.HIDDEN for colour in weight_bars.marker.color]
    assert hidden == d.masked.tolist()
    assert list(mask_text.text) == ["−∞" if m else "0" for m in d.masked]
    for numbers, values in [(score_numbers, d.scores), (scaled_numbers, d.scaled), (weight_numbers, d.weights)]:
        assert [float(t) for t in numbers.text] == pytest.approx(values, abs=0.006)
    top = int(np.argmax(d.weights))
    assert weight_bars.marker.color[top] == ORANGE
    assert f"weight {d.weights[top]:.3f}" in weight_bars.hovertext[top]  # hovering a row tells its whole chain


def test_score_plot_keeps_each_number_inside_its_own_panel(decoder_head):
    """Each number is written right of its bar's end (of zero, for a negative bar), with a third of its panel kept
    free for it: a negative score never runs into the token labels, a long bar never into the next panel. The titles
    are two short lines, which stay apart even on a phone."""
    fig = inside_head.score_plot(decoder_head)
    for numbers in [t for t in fig.data if t.type == "scatter" and t.xaxis != "x3"]:
        axis = fig.layout["xaxis" + numbers.xaxis[1:]]
        low, high = axis.range
        x = np.asarray(numbers.x, dtype=float)
        assert numbers.textposition == "middle right" and np.all(x >= 0) and np.all(x >= low)
        assert np.all((high - x) / (high - low) >= 0.35)  # room for " -21.89" right of every number
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == 4 and all(len(line) <= 16 for t in titles for line in t.split("<br>"))


def test_vectors_plot_shows_q_k_and_v(translator, inspection):
    d = head_details(translator, inspection, "cross", 0, 0, 1)
    fig = inside_head.vectors_plot(d)
    q, k, v = fig.data
    assert np.allclose(q.z, d.q[None]) and np.allclose(k.z, d.k) and np.allclose(v.z, d.v)
    assert [plain(t) for t in fig.layout.yaxis2.ticktext] == d.key_tokens == inspection.source_tokens
    assert [plain(t) for t in fig.layout.yaxis.ticktext] == [inspection.target_tokens[1]]
    assert "layer 1 · head 1" in fig.layout.title.text


def test_output_plot_puts_the_head_in_its_slot(decoder_head):
    d = decoder_head
    output, concat, contribution, attention_output = inside_head.output_plot(d).data
    assert list(output.x) == list(range(d.head * d.d_k, (d.head + 1) * d.d_k))
    assert np.allclose(output.z, d.output[None]) and np.allclose(concat.z, d.concat[None])
    assert np.allclose(contribution.z, d.contribution[None])
    assert np.allclose(attention_output.z, d.attention_output[None])


def test_formula_names_this_query_and_its_numbers(decoder_head, inspection):
    d = decoder_head
    text = inside_head.head_markdown(d, inspection)
    assert text.startswith("### softmax(q·Kᵀ / √d_k + M) · V")
    assert f"Query `{d.query_token}` (position 3)" in text
    assert f"the decoder chose `{output_tokens(inspection)[2]}`" in text
    assert f"({int(d.masked.sum())} hidden here: later positions" in text
    top = int(np.argmax(d.weights))
    assert f"`{d.key_tokens[top]}`, score {d.scores[top]:.2f}" in text and f"weight {d.weights[top]:.2f}" in text


def test_draw_keeps_the_query_radio_to_this_kinds_tokens(served, inspection):
    """A query chosen among the Italian tokens stays chosen; one beyond the English tokens (another kind) falls back
    to the first token; before a translation the radio is empty."""
    last = len(inspection.target_tokens) - 1
    layer, query, vectors, scores, output, formula = inside_head.draw(served, inspection, "cross", 1, "2", last)
    assert query.value is None  # no value sent: a click made meanwhile stays
    assert [value for _, value in query.choices] == list(range(len(inspection.target_tokens)))
    title = scores.layout.title.text
    assert f"query {inspection.target_tokens[last]}" in title and "head 2" in title
    assert formula.startswith("### softmax")
    layer, query, *_ = inside_head.draw(served, inspection, "encoder", 1, "1", len(inspection.source_tokens) + 3)
    assert query.value == 0 and [value for _, value in query.choices] == list(range(len(inspection.source_tokens)))
    layer, query, vectors, scores, output, formula = inside_head.draw(served, None, "encoder", 1, "1", None)
    assert query.choices == [] and (vectors, scores, output, formula) == (None, None, None, "")
