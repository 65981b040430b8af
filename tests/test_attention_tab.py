"""The "Attention" tab (webapp/tabs/attention.py): plotly views that show the model's numbers under every token's
label, PNG figures (matplotlib) with the right titles and labels and no figures left behind, the raw weights as JSON,
and the handlers that answer the controls and the download buttons; in both precisions the app runs the model in."""

import gc
import html
import io
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from web_helpers import (inspection_in_each_precision, plotted_ticks, served_translator,  # noqa: F401
                         translator_in_each_precision)
from webapp.attention_kinds import ATTENTION_KINDS, NumberRadio, attention_maps, chosen_layer, clamp_layer_js
from webapp.downloads import Downloads
from webapp.tabs import attention
from webapp.tokens import output_tokens


def tick_labels(axis):
    return [t.get_text() for t in axis.get_ticklabels()]


def heatmap_axes(fig):
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def assert_renders(fig):
    image = Image.open(io.BytesIO(attention.to_png(fig)))
    width, height = fig.get_size_inches() * fig.dpi
    assert image.format == "PNG" and image.size == (round(width), round(height))
    assert np.asarray(image.convert("RGB")).std() > 0  # something was drawn


@pytest.mark.parametrize("kind, head", [("encoder", 0), ("decoder", 1), ("cross", "mean")])
def test_attention_heatmap_labels_are_the_tokens(inspection, kind, head):
    fig = attention.attention_figure(inspection, kind, 0, head)
    maps, queries, keys = attention_maps(inspection, kind)
    (ax,) = heatmap_axes(fig)
    assert ax.get_title() == f"{ATTENTION_KINDS[kind].title} · layer 1 · {attention.head_label(head)}"
    assert tick_labels(ax.xaxis) == keys and tick_labels(ax.yaxis) == queries
    assert "Key" in ax.get_xlabel() and "(columns)" in ax.get_xlabel()
    assert "Query" in ax.get_ylabel() and "(rows)" in ax.get_ylabel()
    shown = np.ma.filled(ax.images[0].get_array(), np.nan)
    masked = attention.causal_masked(maps[0], kind)  # decoder self-attention: future positions NaN, drawn grey
    assert np.allclose(shown, masked.mean(axis=0) if head == "mean" else masked[head], equal_nan=True)
    assert np.isnan(shown).any() == (kind == "decoder")
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert_renders(fig)


def test_attention_sides_and_languages(inspection):
    _, queries, keys = attention_maps(inspection, "cross")
    assert queries == inspection.target_tokens and keys == inspection.source_tokens
    ax = heatmap_axes(attention.attention_figure(inspection, "cross", 0, "mean"))[0]
    assert "English" in ax.get_xlabel() and "Italian" in ax.get_ylabel()


def test_all_heads_grid(inspection, translator):
    fig = attention.attention_figure(inspection, "encoder", 0, "all")
    axes = heatmap_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"head {h + 1}" for h in range(translator.model.cfg.n_heads)]
    assert tick_labels(axes[0].yaxis) == inspection.source_tokens
    assert tick_labels(axes[-1].xaxis) == inspection.source_tokens
    assert fig.get_suptitle() == "Encoder self-attention · layer 1 · all heads"
    assert_renders(fig)


@pytest.mark.parametrize("kind, head", [("encoder", 0), ("decoder", 1), ("cross", "mean")])
def test_interactive_heatmap_is_the_weights_labelled_by_the_tokens(inspection, kind, head):
    fig = attention.attention_plot(inspection, kind, 0, head)
    maps, queries, keys = attention_maps(inspection, kind)
    (trace,) = fig.data
    assert fig.layout.title.text.startswith(
        f"{ATTENTION_KINDS[kind].title} · layer 1 · {attention.head_label(head)}")
    assert plotted_ticks(fig.layout.xaxis) == keys and plotted_ticks(fig.layout.yaxis) == queries  # every token
    assert list(fig.layout.xaxis.tickvals) == list(range(len(keys)))  # by position: repeated tokens stay apart
    expected = maps[0].mean(axis=0) if head == "mean" else maps[0, head]
    shown = np.array(trace.z, dtype=np.float64)
    future = np.triu(np.ones_like(shown, dtype=bool), k=1)
    if kind == "decoder":  # masked keys: zero weight in the model, grey (NaN) on the page
        assert np.allclose(expected[future], 0.0, atol=1e-3) and np.isnan(shown[future]).all()
        assert "grey" in fig.layout.title.text
    else:
        assert not np.isnan(shown).any()
    assert np.allclose(shown[~future | (kind != "decoder")], expected[~future | (kind != "decoder")])
    i, j = len(queries) - 1, 0
    assert [html.unescape(c) for c in trace.customdata[i][j]] == [queries[i], keys[j]]  # the hover names both
    assert "weight" in trace.hovertemplate


def test_interactive_labels_are_escaped_and_rows_can_be_the_produced_tokens(inspection):
    fig = attention.attention_plot(inspection, "cross", 0, "mean", rows="produced")
    assert plotted_ticks(fig.layout.yaxis) == output_tokens(inspection)  # row i: the token chosen there
    assert "&lt;/s&gt;" in fig.layout.yaxis.ticktext  # plotly would read "</s>" as markup and show nothing
    assert "produced" in fig.layout.yaxis.title.text
    assert plotted_ticks(attention.attention_plot(inspection, "cross", 0, "mean").layout.yaxis) == \
        inspection.target_tokens


def test_interactive_head_grid_and_lines(inspection, translator):
    n_heads = translator.model.cfg.n_heads
    grid = attention.attention_plot(inspection, "encoder", 0, "all")
    assert len(grid.data) == n_heads and [a.text for a in grid.layout.annotations] == [
        f"head {h + 1}" for h in range(n_heads)]  # nothing else: no caption under the grid, over head 1's labels
    assert grid.layout.title.text.endswith(
        "<br><sup>Query: English source token (rows) · Key: English source token (columns)</sup>")
    lines = attention.attention_plot(inspection, "cross", 0, "all", style="lines")
    *links, queries, keys = lines.data
    assert [html.unescape(t) for t in queries.text] == inspection.target_tokens
    assert [html.unescape(t) for t in keys.text] == inspection.source_tokens
    weights = inspection.cross_attention[0]
    drawn = sum(np.isfinite(np.asarray(t.x, dtype=float)).sum() // 2 for t in links)  # two ends a line
    assert drawn == (np.round(weights * 10) >= 1).sum()  # a line per pair of weight >= 0.05, every head
    assert {t.opacity for t in links} <= {level / 10 for level in range(1, 11)}


def test_interactive_overview_outlines_the_shown_layer_and_head(inspection, translator):
    cfg = translator.model.cfg
    cells = cfg.n_decoder_layers * cfg.n_heads
    fig = attention.attention_overview(inspection, "decoder", cfg.n_decoder_layers - 1, cfg.n_heads - 1)
    assert len(fig.data) == cells
    assert fig.layout.title.text.startswith("Decoder self-attention")
    (outline,) = fig.layout.shapes
    assert (outline.xref, outline.yref) == (f"x{cells} domain", f"y{cells} domain")  # the last layer and head
    assert len(attention.attention_overview(inspection, "decoder", 0, "mean").layout.shapes) == cfg.n_heads
    assert [trace.name for trace in fig.data[:2]] == ["1,1", "1,2"]  # attention.js: a click chooses "<layer>,<head>"


def test_attention_json_is_the_raw_weights(inspection):
    data = json.loads(attention.attention_json(inspection, "cross"))
    assert data["query_tokens"] == inspection.target_tokens and data["key_tokens"] == inspection.source_tokens
    assert np.allclose(np.array(data["attention"]), inspection.cross_attention, atol=1e-6)


def test_no_figures_left_behind(inspection):
    attention.to_png(attention.attention_figure(inspection, "cross", 0, "all"))
    gc.collect()
    assert plt.get_fignums() == []
    assert not [obj for obj in gc.get_objects() if type(obj) is Figure]


def test_view_follows_the_controls_and_offers_the_kinds_layers(served, inspection):
    """The layer radio offers the layers of the kind shown; a layer beyond them shows the kind's last; before a
    translation only the radio changes."""
    last = served.layers("encoder")
    radio, plot, overview = attention.view(served, inspection, "encoder", last + 2, "2", "input", "lines")
    assert [value for _, value in radio.choices] == list(range(1, last + 1))
    assert radio.value == last  # the radio moves to the layer drawn
    assert plot.layout.title.text.startswith(f"Encoder self-attention · layer {last} · head 2")
    assert overview.layout.title.text.startswith("Encoder self-attention: all layers × heads")
    assert len(overview.layout.shapes) == 1  # head 2 of the last layer outlined
    radio, plot, overview = attention.view(served, None, "decoder", 1, "mean", "input", "heatmap")
    assert [value for _, value in radio.choices] == list(range(1, served.layers("decoder") + 1))
    assert plot is None and overview is None


def test_download_files_are_the_shown_figure_and_the_kinds_weights(inspection):
    downloads = Downloads()
    png, weights = attention.download_files(downloads, None, "cross", 1, "mean")
    assert not png.interactive and not weights.interactive  # nothing to download before a translation
    png, weights = attention.download_files(downloads, inspection, "decoder", 9, "2")
    assert png.interactive and weights.interactive
    last = len(inspection.decoder_attention)  # layer 9 does not exist: the last one is shown
    assert Path(png.value["path"]).name == f"attention-decoder-layer{last}-head-2.png"
    assert Image.open(png.value["path"]).format == "PNG"
    data = json.loads(Path(weights.value["path"]).read_text(encoding="utf-8"))
    assert Path(weights.value["path"]).name == "attention-decoder.json" and data["kind"] == "Decoder self-attention"


def test_clamp_layer_js_names_each_kinds_depth():
    assert clamp_layer_js({"encoder": 2, "cross": 3}) == \
        '(kind, layer) => { const n = {"encoder": 2, "cross": 3}[kind]; return Math.min(layer || n, n); }'


def test_a_layer_the_kind_lacks_is_clamped_never_refused(served):
    """The layer radio takes any layer sent (a click landing while its choices change); the kind's nearest layer is
    drawn and the radio set to it, while a valid layer leaves the radio's value alone (a click made meanwhile stays)."""
    radio = NumberRadio([1, 2, 3], value=1)
    assert radio.preprocess(4) == 4 and radio.preprocess("2") == 2 and radio.preprocess(None) is None
    n = served.layers("decoder")
    shown, update = chosen_layer(served, "decoder", n + 1)
    assert shown == n - 1 and update.value == n and [v for _, v in update.choices] == list(range(1, n + 1))
    shown, update = chosen_layer(served, "decoder", None)  # no layer chosen: the last
    assert shown == n - 1 and update.value == n
    shown, update = chosen_layer(served, "decoder", 1)
    assert shown == 0 and update.value is None
    assert NumberRadio.get_block_name(radio) == "radio"  # drawn by the browser as a gr.Radio
