"""The "Attention" tab: every attention map of the translation, one layer and head (or the mean, or all heads) at a
time, as a heatmap or as bertviz-style lines, with an overview of all layers × heads below: where each token looked
while the model translated. Plotly views drawn in the browser (clicks answered there: `attention.js`); the PNG of the
download button is drawn with matplotlib, after the view.

Rows of the target side can be labelled by the decoder input (`<s>`, then the tokens so far: what the model reads)
or by the token produced at that step (what a beginner expects to line up with the English word).
"""

import io
import json
import threading
from contextlib import contextmanager
from functools import partial

import gradio as gr
import matplotlib
import numpy as np
import plotly.graph_objects as go
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from plotly.subplots import make_subplots

from ..attention_kinds import (ATTENTION_KINDS, attention_maps, chosen_layer, clamp_layer, clamp_layer_on_kind_change,
                              kind_radio, layer_radio)
from ..events import QUIET
from ..page_script import script_beside
from ..plots import BLUE, MASKED, ORANGE, ROW_PX, escaped, finish, heatmap, token_axis
from ..texts import ATTENTION_HELP
from ..tokens import output_tokens

SCRIPT = script_beside(__file__)
SIDE_NAMES = {"source": "English source token", "target": "Italian decoder input",
              "produced": "Italian token produced at that step"}
ROW_LABELS = {"input": "decoder input", "produced": "token produced"}  # the two namings of Italian rows
HEAD_COLORS = [BLUE, "#d62728", "#2ca02c", ORANGE, "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def causal_masked(weights, kind):
    """Decoder self-attention with the future positions (keys after the query) as NaN, to be drawn grey, not as
    zeros; other kinds unchanged."""
    if kind != "decoder":
        return weights
    weights = np.array(weights, dtype=np.float64)
    weights[..., np.triu(np.ones(weights.shape[-2:], dtype=bool), k=1)] = np.nan
    return weights


def query_tokens(inspection, kind, rows="input"):
    """The row labels of one kind: with `rows="produced"`, Italian rows are named by the token chosen at that step
    (row `▁amo` of "ti amo." becomes `.`), so a beginner sees "amo" line up with "love"."""
    _, queries, _ = attention_maps(inspection, kind)
    return output_tokens(inspection) if rows == "produced" and ATTENTION_KINDS[kind].query_side == "target" else queries


def axis_titles(kind, rows="input"):
    """(column title, row title) of a heatmap of one kind."""
    spec = ATTENTION_KINDS[kind]
    query_side = "produced" if rows == "produced" and spec.query_side == "target" else spec.query_side
    return f"Key: {SIDE_NAMES[spec.key_side]} (columns)", f"Query: {SIDE_NAMES[query_side]} (rows)"


def head_label(head):
    """Words for a head choice: "mean", "all" or a 0-based index."""
    return {"mean": "mean over heads", "all": "all heads"}.get(head) or f"head {head + 1}"


def figure_title(kind, layer, head):
    return f"{ATTENTION_KINDS[kind].title} · layer {layer + 1} · {head_label(head)}"


def attention_json(inspection, kind):
    """The raw weights of one kind with their tokens, as a self-describing JSON document."""
    maps, queries, keys = attention_maps(inspection, kind)
    return json.dumps({
        "kind": ATTENTION_KINDS[kind].title,
        "shape": "layers x heads x queries x keys (each row sums to 1)",
        "query_tokens": queries,
        "key_tokens": keys,
        "translation": inspection.translation,
        "attention": np.round(maps.astype(np.float64), 6).tolist(),
    }, ensure_ascii=False)


# --- The views on the page (plotly) ------------------------------------------------------------------------------


def attention_plot(inspection, kind, layer, head, rows="input", style="heatmap"):
    """One layer's attention (`layer` 0-based; `head` 0-based, "mean" or "all") as a heatmap (rows = queries,
    columns = keys) or as lines between the tokens (`style="lines"`)."""
    maps, _, keys = attention_maps(inspection, kind)
    queries = query_tokens(inspection, kind, rows)
    weights = causal_masked(maps[layer], kind)  # (heads, Tq, Tk)
    title = figure_title(kind, layer, head)
    if style == "lines":
        return _lines(weights, queries, keys, head, title)
    x_title, y_title = axis_titles(kind, rows)
    if kind == "decoder":
        title += "<br><sup>grey: future positions, hidden by the causal mask</sup>"
    if head == "all":
        return _head_grid(weights, queries, keys, title, x_title, y_title)
    shown = weights.mean(axis=0) if head == "mean" else weights[head]
    fig = go.Figure(heatmap(shown, queries, keys, colorbar=dict(title=dict(text="weight", side="right"), thickness=14)))
    fig.update_xaxes(token_axis(keys, x_title, tickangle=-60))
    fig.update_yaxes(token_axis(queries, y_title, autorange="reversed"))
    return finish(fig, title, height=max(420, ROW_PX * len(queries) + 200),  # room for the axis title
                  margin=dict(l=10, r=10, t=50 + 25 * title.count("<br>"), b=10))  # cells high on a projector


def _head_grid(weights, queries, keys, title, x_title, y_title):
    """One heatmap per head, side by side (two rows beyond four heads), on one colour scale."""
    n_heads = len(weights)
    cols = min(n_heads, 4)
    n_rows = -(-n_heads // cols)
    fig = make_subplots(n_rows, cols, subplot_titles=[f"head {h + 1}" for h in range(n_heads)],
                        horizontal_spacing=0.03, vertical_spacing=0.12)
    zmax = float(np.nanmax(weights))
    for h in range(n_heads):
        row, col = h // cols + 1, h % cols + 1
        fig.add_trace(heatmap(weights[h], queries, keys, zmax=zmax, showscale=h == 0,
                              colorbar=dict(title=dict(text="weight"), thickness=12)), row, col)
        fig.update_xaxes(token_axis(keys, tickangle=-60), row=row, col=col)
        fig.update_yaxes(token_axis(queries if col == 1 else [""] * len(queries), autorange="reversed"),
                         row=row, col=col)
    # The axes are named in the title, not under the grid, where the first head's rotated token labels would run
    # into them.
    title = f"{title}<br><sup>{y_title} · {x_title}</sup>"
    return finish(fig, title, height=n_rows * (ROW_PX * len(queries) // 2 + 180) + 80,
                  margin=dict(l=10, r=10, t=70 + 20 * title.count("<br>"), b=10))


def _lines(weights, queries, keys, head, title):
    """bertviz-style: queries in the left column, keys in the right one, a line per pair, as opaque as its weight
    (one colour per head with "all"). Lines are grouped by opacity in tenths, so a long sentence is a few traces."""
    shown = {"mean": [("mean", weights.mean(axis=0), BLUE)],
             "all": [(f"head {h + 1}", w, HEAD_COLORS[h % len(HEAD_COLORS)]) for h, w in enumerate(weights)]}
    fig = go.Figure()
    for name, w, color in shown.get(head) or [(f"head {head + 1}", weights[head], BLUE)]:
        tenths = np.round(np.nan_to_num(w) * 10)
        for i, level in enumerate(np.unique(tenths[tenths >= 1])):
            q, k = np.nonzero(tenths == level)
            xs = np.tile([0.0, 1.0, np.nan], len(q))
            ys = np.stack([q, k, np.full(len(q), np.nan)], axis=1).ravel()
            fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=2), opacity=float(level) / 10,
                            hoverinfo="skip", showlegend=i == 0, legendgroup=name, name=name)
    mean = np.nan_to_num(weights.mean(axis=0))
    queries, keys = escaped(queries), escaped(keys)
    top = [", ".join(f"{keys[j]} {mean[i, j]:.2f}" for j in np.argsort(-mean[i])[:3]) for i in range(len(queries))]
    fig.add_scatter(x=[0.0] * len(queries), y=list(range(len(queries))), mode="text", text=queries,
                    textposition="middle left", customdata=top, showlegend=False, textfont=dict(size=13),
                    hovertemplate="query <b>%{text}</b> looks most at: %{customdata}<extra></extra>")
    fig.add_scatter(x=[1.0] * len(keys), y=list(range(len(keys))), mode="text", text=keys,
                    textposition="middle right", showlegend=False, hovertemplate="key <b>%{text}</b><extra></extra>",
                    textfont=dict(size=13))
    fig.update_xaxes(range=[-0.6, 1.6], tickvals=[0, 1], ticktext=["query", "key"], showgrid=False, zeroline=False)
    fig.update_yaxes(autorange="reversed", visible=False)
    return finish(fig, f"{title}<br><sup>lines as opaque as their weight (shown from 0.05)</sup>",
                  height=ROW_PX * max(len(queries), len(keys)) + 180, plot_bgcolor="white",
                  legend=dict(orientation="h", y=-0.02))


def attention_overview(inspection, kind, layer, head):
    """Every layer (rows) × head (columns) of one kind, small, the shown layer and head outlined in orange."""
    maps, _, _ = attention_maps(inspection, kind)
    maps = causal_masked(maps, kind)
    n_layers, n_heads = maps.shape[:2]
    fig = make_subplots(n_layers, n_heads, horizontal_spacing=0.02, vertical_spacing=0.03,
                        column_titles=[f"head {h + 1}" for h in range(n_heads)],
                        row_titles=[f"layer {i + 1}" for i in range(n_layers)])
    for i in range(n_layers):
        for h in range(n_heads):
            fig.add_trace(go.Heatmap(z=maps[i, h], zmin=0.0, colorscale="Viridis", showscale=False,
                                     name=f"{i + 1},{h + 1}", hoverongaps=False,  # attention.js: a click chooses it
                                     hovertemplate=f"layer {i + 1} · head {h + 1} (click to show)<extra></extra>"),
                          i + 1, h + 1)
            if i == layer and head in ("mean", "all", h):
                fig.add_shape(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1,
                              line=dict(color=ORANGE, width=4), row=i + 1, col=h + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return finish(fig, f"{ATTENTION_KINDS[kind].title}: all layers × heads (outlined: shown above)",
                  height=110 * n_layers + 90)


# --- The PNG download (matplotlib) ---------------------------------------------------------------------------------
# Figures are `matplotlib.figure.Figure` objects made without pyplot, so no global figure registry fills up, nothing
# needs closing, and concurrent requests do not share state. Fonts are sized for a projector.

STYLE = {
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.labelsize": 14,
    "figure.titlesize": 17,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 12,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "image.cmap": "viridis",
}
_style_lock = threading.Lock()  # rc_context changes global settings: one figure is built at a time


@contextmanager
def _styled():
    with _style_lock, matplotlib.rc_context(STYLE):
        yield


def to_png(fig):
    """PNG bytes of a figure."""
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def _tick_size(n):
    """Smaller labels for longer sentences, so every token keeps its own tick."""
    return 13 if n <= 16 else 11 if n <= 32 else 8 if n <= 64 else 5


def _side(n, lo=6.0, hi=12.0):
    """Figure inches for n tokens: roomy for short sentences, bounded for long ones."""
    return min(hi, max(lo, 2.5 + 0.32 * n))


def _label_axes(ax, x_tokens, y_tokens, show_x=True, show_y=True):
    ax.set_xticks(range(len(x_tokens)), x_tokens if show_x else [""] * len(x_tokens),
                  rotation=60, ha="right", rotation_mode="anchor", fontsize=_tick_size(len(x_tokens)))
    ax.set_yticks(range(len(y_tokens)), y_tokens if show_y else [""] * len(y_tokens),
                  fontsize=_tick_size(len(y_tokens)))


def attention_figure(inspection, kind, layer, head):
    """Heatmap of one layer's attention (layer 0-based); `head` is a 0-based index, "mean" or "all" (a grid)."""
    maps, queries, keys = attention_maps(inspection, kind)
    layer_maps = causal_masked(maps[layer], kind)  # (heads, Tq, Tk), future positions NaN: grey
    title = figure_title(kind, layer, head)
    x_title, y_title = axis_titles(kind)
    if head == "all":
        return _figure_grid(layer_maps, queries, keys, title, x_title, y_title)
    weights = layer_maps.mean(axis=0) if head == "mean" else layer_maps[head]
    with _styled():
        w, h = _side(len(keys)), _side(len(queries))
        fig = Figure(figsize=(w + 1.6, h + 1.0), layout="constrained")
        ax = fig.add_subplot()
        ax.set_facecolor(MASKED)  # seen through the masked (NaN) cells
        image = ax.imshow(weights, vmin=0.0, aspect="auto")
        _label_axes(ax, keys, queries)
        ax.set_xlabel(x_title)
        ax.set_ylabel(y_title)
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="attention weight (each row sums to 1)", shrink=0.8)
    return fig


def _figure_grid(layer_maps, queries, keys, title, x_title, y_title):
    n_heads = layer_maps.shape[0]
    cols = min(n_heads, 4)
    rows = -(-n_heads // cols)
    size = min(6.0, _side(max(len(keys), len(queries)), lo=3.5, hi=6.0))
    with _styled():
        fig = Figure(figsize=(cols * size + 1.5, rows * size + 1.2), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        vmax = float(np.nanmax(layer_maps))
        for i, ax in enumerate(axes.flat):
            if i >= n_heads:
                ax.set_axis_off()
                continue
            ax.set_facecolor(MASKED)
            image = ax.imshow(layer_maps[i], vmin=0.0, vmax=vmax, aspect="auto")
            _label_axes(ax, keys, queries, show_x=i // cols == rows - 1 or i + cols >= n_heads, show_y=i % cols == 0)
            ax.set_title(f"head {i + 1}")
        fig.supxlabel(x_title)
        fig.supylabel(y_title)
        fig.suptitle(title)
        fig.colorbar(image, ax=axes, label="attention weight", shrink=0.6)
    return fig


# --- Events ----------------------------------------------------------------------------------------------------------


def chosen_head(head):
    """The head radio's value as `attention_plot` takes it: "mean", "all" or a 0-based index."""
    return head if head in ("mean", "all") else int(head) - 1


def view(served, inspection, kind, layer, head, rows, style):
    """The tab for all its controls read at once (one event, always the latest): the layer radio, the view (heatmap
    or lines) and the overview with the shown layer and head outlined."""
    layer, radio = chosen_layer(served, kind, layer)
    if inspection is None:
        return radio, None, None
    head = chosen_head(head)
    return (radio, attention_plot(inspection, kind, layer, head, rows, style),
            attention_overview(inspection, kind, layer, head))


def download_files(downloads, inspection, kind, layer, head):
    """The PNG (matplotlib) of the shown layer and head, and the raw weights of the kind (JSON), as files of
    `downloads` (a `Downloads`); drawn after the view, so the view never waits on them. Disabled until there is a
    translation."""
    if inspection is None:
        return gr.DownloadButton(value=None, interactive=False), gr.DownloadButton(value=None, interactive=False)
    layer = clamp_layer(len(attention_maps(inspection, kind)[0]), layer) - 1
    head = chosen_head(head)
    png = to_png(attention_figure(inspection, kind, layer, head))
    name = f"attention-{kind}-layer{layer + 1}-{head_label(head).replace(' ', '-')}.png"
    data = attention_json(inspection, kind).encode("utf-8")
    return (gr.DownloadButton(value=downloads.file(png, name), interactive=True),
            gr.DownloadButton(value=downloads.file(data, f"attention-{kind}.json"), interactive=True))


def build(served, inspection, downloads):
    """The tab's controls, views and download buttons, wired to follow the translation in the State `inspection`
    (a few kB of numbers the browser draws, so drawn after every translation, shown or not)."""
    with gr.Row(elem_id="attention-controls"):
        kind = kind_radio("kind")
        layer = layer_radio(served, "layer")
        head = gr.Radio([("mean", "mean"), ("all (grid)", "all")] + [str(h) for h in range(1, served.cfg.n_heads + 1)],
                        value="mean", label="Head", scale=2, elem_id="head")
        rows = gr.Radio([(label, value) for value, label in ROW_LABELS.items()], value="input", label="Italian rows",
                        scale=2, elem_id="rows")
        style = gr.Radio([("heatmap", "heatmap"), ("lines", "lines")], value="heatmap", label="View", scale=1,
                         elem_id="style")
    plot = gr.Plot(show_label=False, elem_id="attention-heatmap")
    with gr.Row():
        png_button = gr.DownloadButton("⬇️ Figure (PNG)", size="sm", interactive=False)
        json_button = gr.DownloadButton("⬇️ Attention weights, this kind, all layers and heads (JSON)", size="sm",
                                        interactive=False)
    gr.Markdown(ATTENTION_HELP)
    overview = gr.Plot(show_label=False, elem_id="attention-overview")
    controls = [kind, layer, head, rows, style]
    gr.on([control.input for control in controls] + [inspection.change], served.bind(view), [inspection, *controls],
          [layer, plot, overview], **QUIET).then(
        partial(download_files, downloads), [inspection, kind, layer, head], [png_button, json_button], **QUIET)
    clamp_layer_on_kind_change(served, kind, layer, **QUIET)
