"""The attention and decoding views the browser draws: plotly figures built from an `Inspection`'s numbers.

Why plotly in a `gr.Plot`: Gradio's page already ships plotly.js, so the server sends numbers and labels (a few kB
of JSON) instead of rendering an image, and the browser draws them: each cell's query, key and weight on hover, a
crosshair along the hovered row and column, zoom and pan. Long sentences keep every token's label (the figure grows
with the sentence, labels shrink, zoom shows them larger). Building a figure takes milliseconds, where a matplotlib
image took 0.4-0.8 s; `figures` (matplotlib) still draws the PNG downloads.

Rows of the target side can be labelled by the decoder input (`<s>`, then the tokens so far: what the model reads)
or by the token produced at that step (what a beginner expects to line up with the English word).
"""

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .views import (ATTENTION_KINDS, MASKED, attention_maps, axis_titles, causal_masked, head_label, query_tokens,
                    step_tokens)

HEAD_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
ROW_PX = 24  # height of one token row; the figure grows with the sentence
HOVER = "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>weight %{z:.3f}<extra></extra>"


def _labels(tokens):
    """Tokens as plotly text: "<", ">" and "&" escaped, else plotly reads `<s>` as markup and shows nothing."""
    return [html.escape(t, quote=False) for t in tokens]


def _font_size(n):
    return 13 if n <= 20 else 11 if n <= 40 else 9


def _token_axis(tokens, title=None, **kwargs):
    """An axis with one tick per token (all shown, in order; duplicates stay apart since positions are numbers)."""
    return dict(title=dict(text=title), tickmode="array", tickvals=list(range(len(tokens))), ticktext=_labels(tokens),
                tickfont=dict(size=_font_size(len(tokens))), showgrid=False, zeroline=False, automargin=True,
                showspikes=True, spikemode="across", spikethickness=1, spikecolor="#ff9f43", **kwargs)


def _finish(fig, title, height, **layout):
    fig.update_layout({"title": dict(text=title, x=0.0, xanchor="left"), "height": height, "plot_bgcolor": MASKED,
                       "margin": dict(l=10, r=10, t=90, b=10), "hoverlabel": dict(font_size=14), **layout})
    return fig


def _cells(queries, keys):
    """(queries, keys, 2) labels of every cell, for the hover text."""
    queries, keys = np.array(_labels(queries), dtype=object), np.array(_labels(keys), dtype=object)
    return np.stack(np.broadcast_arrays(queries[:, None], keys), -1)


def _heatmap_trace(weights, queries, keys, zmin=0.0, zmax=None, **kwargs):
    return go.Heatmap(z=weights, zmin=zmin, zmax=zmax, colorscale="Viridis", customdata=_cells(queries, keys),
                      hovertemplate=HOVER, hoverongaps=False, xgap=0, ygap=0, **kwargs)


def attention_plot(inspection, kind, layer, head, rows="input", style="heatmap"):
    """One layer's attention (`layer` 0-based; `head` 0-based, "mean" or "all") as a heatmap (rows = queries,
    columns = keys) or as lines between the tokens (`style="lines"`)."""
    maps, _, keys = attention_maps(inspection, kind)
    queries = query_tokens(inspection, kind, rows)
    weights = causal_masked(maps[layer], kind)  # (heads, Tq, Tk)
    title = f"{ATTENTION_KINDS[kind].title} · layer {layer + 1} · {head_label(head)}"
    if style == "lines":
        return _lines(weights, queries, keys, head, title)
    x_title, y_title = axis_titles(kind, rows)
    if kind == "decoder":
        title += "<br><sup>grey: future positions, hidden by the causal mask</sup>"
    if head == "all":
        return _head_grid(weights, queries, keys, title, x_title, y_title)
    shown = weights.mean(axis=0) if head == "mean" else weights[head]
    fig = go.Figure(_heatmap_trace(shown, queries, keys,
                                   colorbar=dict(title=dict(text="weight", side="right"), thickness=14)))
    fig.update_xaxes(_token_axis(keys, x_title, tickangle=-60))
    fig.update_yaxes(_token_axis(queries, y_title, autorange="reversed"))
    return _finish(fig, title, height=max(420, ROW_PX * len(queries) + 200))  # room for the axis title


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
        fig.add_trace(_heatmap_trace(weights[h], queries, keys, zmax=zmax, showscale=h == 0,
                                     colorbar=dict(title=dict(text="weight"), thickness=12)), row, col)
        fig.update_xaxes(_token_axis(keys, tickangle=-60), row=row, col=col)
        fig.update_yaxes(_token_axis(queries if col == 1 else [""] * len(queries), autorange="reversed"),
                         row=row, col=col)
    fig.add_annotation(text=f"{y_title} · {x_title}", showarrow=False, xref="paper", yref="paper", x=0, y=-0.02,
                       xanchor="left", yanchor="top")
    return _finish(fig, title, height=n_rows * (ROW_PX * len(queries) // 2 + 180) + 80)


def _lines(weights, queries, keys, head, title):
    """bertviz-style: queries in the left column, keys in the right one, a line per pair, as opaque as its weight
    (one colour per head with "all"). Lines are grouped by opacity in tenths, so a long sentence is a few traces."""
    shown = {"mean": [("mean", weights.mean(axis=0), "#1f77b4")],
             "all": [(f"head {h + 1}", w, HEAD_COLORS[h % len(HEAD_COLORS)]) for h, w in enumerate(weights)]}
    fig = go.Figure()
    for name, w, color in shown.get(head) or [(f"head {head + 1}", weights[head], "#1f77b4")]:
        tenths = np.round(np.nan_to_num(w) * 10)
        for i, level in enumerate(np.unique(tenths[tenths >= 1])):
            q, k = np.nonzero(tenths == level)
            xs = np.tile([0.0, 1.0, np.nan], len(q))
            ys = np.stack([q, k, np.full(len(q), np.nan)], axis=1).ravel()
            fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=2), opacity=float(level) / 10,
                            hoverinfo="skip", showlegend=i == 0, legendgroup=name, name=name)
    mean = np.nan_to_num(weights.mean(axis=0))
    queries, keys = _labels(queries), _labels(keys)
    top = [", ".join(f"{keys[j]} {mean[i, j]:.2f}" for j in np.argsort(-mean[i])[:3]) for i in range(len(queries))]
    fig.add_scatter(x=[0.0] * len(queries), y=list(range(len(queries))), mode="text", text=queries,
                    textposition="middle left", customdata=top, showlegend=False, textfont=dict(size=13),
                    hovertemplate="query <b>%{text}</b> looks most at: %{customdata}<extra></extra>")
    fig.add_scatter(x=[1.0] * len(keys), y=list(range(len(keys))), mode="text", text=keys,
                    textposition="middle right", showlegend=False, hovertemplate="key <b>%{text}</b><extra></extra>",
                    textfont=dict(size=13))
    fig.update_xaxes(range=[-0.6, 1.6], tickvals=[0, 1], ticktext=["query", "key"], showgrid=False, zeroline=False)
    fig.update_yaxes(autorange="reversed", visible=False)
    return _finish(fig, f"{title}<br><sup>lines as opaque as their weight (shown from 0.05)</sup>",
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
                                     name=f"{i + 1},{h + 1}", hoverongaps=False,  # page.js: a click chooses it
                                     hovertemplate=f"layer {i + 1} · head {h + 1} (click to show)<extra></extra>"),
                          i + 1, h + 1)
            if i == layer and head in ("mean", "all", h):
                fig.add_shape(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1,
                              line=dict(color="#ff9f43", width=4), row=i + 1, col=h + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return _finish(fig, f"{ATTENTION_KINDS[kind].title}: all layers × heads (outlined: shown above)",
                   height=110 * n_layers + 90)


def top_k_plot(inspection, step):
    """Bars of the most probable next tokens at 1-based `step`, the chosen one in orange. With beam search the
    chosen token need not be the most probable one: the beam looks ahead."""
    _, chosen = step_tokens(inspection, step)
    tokens, probs = zip(*inspection.top_candidates[step - 1])
    fig = go.Figure(go.Bar(x=probs, y=list(range(len(tokens))), orientation="h", text=[f"{p:.0%}" for p in probs],
                           textposition="outside", customdata=_labels(tokens),
                           marker_color=["#ff9f43" if t == chosen else "#1f77b4" for t in tokens],
                           hovertemplate="<b>%{customdata}</b>: %{x:.1%}<extra></extra>"))
    fig.update_yaxes(_token_axis(tokens, autorange="reversed"))
    fig.update_xaxes(range=[0, 1.18], title=dict(text="probability of the next token"), tickformat=".0%")
    note = "" if chosen in tokens else f" ({_labels([chosen])[0]} is not among them)"
    return _finish(fig, f"Step {step}: top {len(tokens)} next tokens, chosen in orange{note}",
                   height=ROW_PX * len(tokens) + 200, plot_bgcolor="white")


def step_attention_plot(inspection, step):
    """Where the decoder looked in the English sentence while choosing the token of 1-based `step`: that query's
    cross-attention row, averaged over heads, one row per decoder layer."""
    weights = inspection.cross_attention[:, :, step - 1, :].mean(axis=1)  # (layers, S)
    sources = inspection.source_tokens
    _, chosen = step_tokens(inspection, step)
    layers = [f"layer {i + 1}" for i in range(len(weights))]
    fig = go.Figure(_heatmap_trace(weights, layers, sources, colorbar=dict(title=dict(text="weight"), thickness=14)))
    fig.update_xaxes(_token_axis(sources, "Key: English source token (columns)", tickangle=-60))
    fig.update_yaxes(_token_axis(layers, "decoder layer (mean over heads)", autorange="reversed"))
    return _finish(fig, f"Step {step}: cross-attention while choosing {_labels([chosen])[0]}",
                   height=ROW_PX * len(layers) + 260)


# --- Positional encoding ------------------------------------------------------------------------------------


def positional_table_plot(pe, n_tokens=0):
    """The sinusoidal table (positions × dimensions), the sentence's positions above a black line."""
    pe = np.round(np.asarray(pe, dtype=np.float64), 3)  # 3 decimals: the page gets a third of the bytes
    fig = go.Figure(go.Heatmap(z=pe, zmin=-1, zmax=1, colorscale="RdBu", reversescale=True,
                               colorbar=dict(title=dict(text="value"), thickness=14),
                               hovertemplate="position %{y}, dimension %{x}: %{z:.3f}<extra></extra>"))
    title = f"Positional encoding PE (max_len {pe.shape[0]} × d_model {pe.shape[1]})"
    if n_tokens:
        fig.add_hline(y=n_tokens - 0.5, line=dict(color="black", width=3))
        title += f"<br><sup>your sentence uses the {n_tokens} rows above the black line</sup>"
    fig.update_xaxes(title=dict(text="dimension (even: sin, odd: cos; frequency falls to the right)"))
    fig.update_yaxes(title=dict(text="position in the sentence"), autorange="reversed")
    return _finish(fig, title, height=480)


def positional_curves_plot(pe, dims):
    """PE values of the chosen dimensions along the positions: each pair of dimensions is a sin/cos wave of its own
    wavelength, from 2π (dimension 0) to 10000·2π (the last)."""
    pe = np.asarray(pe)
    d_model = pe.shape[1]
    fig = go.Figure()
    for d in dims:
        wavelength = 2 * np.pi * 10000 ** ((d - d % 2) / d_model)
        fig.add_scatter(y=pe[:, d], mode="lines", line=dict(width=2),
                        name=f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}, wavelength {wavelength:,.1f})")
    fig.update_xaxes(title=dict(text="position"))
    fig.update_yaxes(title=dict(text="PE value"), range=[-1.15, 1.15])
    return _finish(fig, "Sine and cosine waves of the chosen dimensions", height=420, plot_bgcolor="white")


def position_similarity(pe):
    """Dot products of PE rows: (max_len, max_len), largest on the diagonal and falling off with distance."""
    pe = np.asarray(pe, dtype=np.float64)
    return pe @ pe.T


def position_similarity_plot(pe, tokens):
    """The full similarity matrix with the sentence's span outlined, and that span zoomed in with its tokens."""
    similarity = np.round(position_similarity(pe), 2)
    n = min(len(tokens), len(similarity))
    fig = make_subplots(1, 2, column_widths=[0.45, 0.55], horizontal_spacing=0.12, subplot_titles=[
        f"All {len(similarity)} positions (your sentence in red)", "Your sentence's positions, labelled by token"])
    scale = dict(zmin=float(similarity.min()), zmax=float(similarity.max()))
    fig.add_trace(go.Heatmap(z=similarity, **scale, colorscale="Viridis", showscale=False,
                             hovertemplate="PE(%{y}) · PE(%{x}) = %{z}<extra></extra>"), 1, 1)
    fig.add_trace(_heatmap_trace(similarity[:n, :n], tokens[:n], tokens[:n], **scale,
                                 colorbar=dict(title=dict(text="PE(i) · PE(j)"), thickness=14)), 1, 2)
    fig.data[1].hovertemplate = "PE(%{customdata[0]}) · PE(%{customdata[1]}) = %{z}<extra></extra>"
    fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=-0.5, y1=n - 0.5, line=dict(color="red", width=2),
                  row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(_token_axis(tokens[:n], tickangle=-60), row=1, col=2)
    fig.update_yaxes(_token_axis(tokens[:n], autorange="reversed"), row=1, col=2)
    return _finish(fig, "Position similarity: nearby positions have similar encodings",
                   height=max(480, ROW_PX * n + 220))


def embedding_norms_plot(tokens, embedding, position):
    """Bars of `interpretability.embedding_norms` per token: the position signal next to the meaning it is added to."""
    fig = go.Figure([go.Bar(x=list(range(len(tokens))), y=embedding, name="‖embedding × √d_model‖"),
                     go.Bar(x=list(range(len(tokens))), y=position, name="‖positional encoding‖")])
    fig.update_xaxes(_token_axis(tokens, tickangle=-60))
    fig.update_yaxes(title=dict(text="vector length (L2 norm)"))
    return _finish(fig, "What goes into the encoder: token meaning + position", height=440, plot_bgcolor="white",
                   barmode="group", legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
