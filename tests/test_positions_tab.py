"""The "Positional encoding" tab (webapp/tabs/positions.py): the sinusoidal table, its waves, the similarity of
positions and the size of each token's meaning next to its position, drawn from the model's own numbers in both
precisions the app runs it in; and drawn once per sentence, however often the tab is opened."""

import numpy as np
import pytest

from interpretability import embedding_norms, inspect, positional_encoding
from web_helpers import (inspection_in_each_precision, plotted_ticks, served_translator,  # noqa: F401
                         translator_in_each_precision)
from webapp.tabs import positions


@pytest.fixture(scope="module")
def pe(translator):
    return positional_encoding(translator.model)


def test_positional_encoding_figures(pe, inspection):
    n = len(inspection.source_tokens)
    fig = positions.positional_table_plot(pe, n)
    assert np.allclose(np.array(fig.data[0].z), pe, atol=5e-4)  # to 3 decimals
    assert fig.layout.title.text.startswith("Positional encoding") and f"the {n} rows" in fig.layout.title.text
    assert fig.layout.shapes[0].y0 == n - 0.5  # the line under the sentence's rows

    fig = positions.positional_curves_plot(pe, [0, 1, 5])
    assert [trace.name.split()[:3] for trace in fig.data] == [
        ["dim", "0", "(sin,"], ["dim", "1", "(cos,"], ["dim", "5", "(cos,"]]
    assert np.allclose(fig.data[2].y, pe[:, 5])


def test_position_similarity(pe, inspection):
    similarity = positions.position_similarity(pe)
    d_model = pe.shape[1]
    assert similarity.shape == (len(pe), len(pe))
    assert np.allclose(similarity, similarity.T)
    assert np.allclose(np.diag(similarity), d_model / 2, atol=1e-3)  # sin² + cos² = 1 per pair of dimensions
    assert (similarity.argmax(axis=1) == np.arange(len(pe))).all()

    fig = positions.position_similarity_plot(pe, inspection.source_tokens)
    assert plotted_ticks(fig.layout.xaxis2) == inspection.source_tokens == plotted_ticks(fig.layout.yaxis2)
    n = len(inspection.source_tokens)
    assert np.allclose(np.array(fig.data[1].z), similarity[:n, :n], atol=5e-3)


def test_embedding_norms(translator, inspection, pe):
    tokens = inspection.source_tokens
    embedding, position = embedding_norms(translator, tokens)
    d_model = translator.model.cfg.d_model
    assert np.allclose(position, np.sqrt(d_model / 2), atol=1e-3)
    first = translator.model.src_embed.embedding.weight[translator.tokenizer.token_to_id(tokens[0])]
    assert np.isclose(embedding[0], first.float().norm().item() * np.sqrt(d_model), rtol=1e-3)
    fig = positions.embedding_norms_plot(tokens, embedding, position)
    assert plotted_ticks(fig.layout.xaxis) == tokens
    assert np.allclose(fig.data[0].y, embedding) and np.allclose(fig.data[1].y, position)


def test_positional_tab_is_drawn_once_per_sentence(served, inspection):
    """Reopening the positional tab, or translating the same sentence again, redraws nothing."""
    *figures, drawn = positions.draw(served, inspection, ())
    assert drawn == tuple(inspection.source_tokens) and all(f is not None for f in figures)
    assert positions.draw(served, inspection, drawn) == (positions.gr.skip(),) * 4
    other = inspect(served.translator, "the cat sleeps.")
    *_, drawn_again = positions.draw(served, other, drawn)
    assert drawn_again == tuple(other.source_tokens) != drawn
    table, similarity, norms, drawn = positions.draw(served, None, drawn)  # before a translation: the table alone
    assert table is not None and (similarity, norms, drawn) == (None, None, ())


def test_curves_are_the_chosen_dimensions_in_order(served):
    fig = positions.curves(served, [5, 0])
    assert [trace.name.split()[1] for trace in fig.data] == ["0", "5"]
