"""The plotly pieces every tab's figures share. Why plotly in a `gr.Plot`: Gradio's page already ships plotly.js, so
the server sends numbers and labels (a few kB of JSON) instead of rendering an image, and the browser draws them, with
each cell's numbers on hover, zoom and pan; building a figure takes milliseconds where a matplotlib image took
0.4-0.8 s. Long sentences keep every token's label: the figure grows with the sentence and labels shrink."""

import html

import numpy as np
import plotly.graph_objects as go

ORANGE, BLUE = "#ff9f43", "#1f77b4"  # what is chosen or shown; the rest
MASKED = "#cfcfcf"  # the colour of masked cells (future positions): the background seen through NaN cells
ROW_PX = 24  # height of one token row; the figure grows with the sentence
HOVER = "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>weight %{z:.3f}<extra></extra>"


def escaped(tokens):
    """Tokens as plotly text: "<", ">" and "&" escaped, else plotly reads `<s>` as markup and shows nothing."""
    return [html.escape(t, quote=False) for t in tokens]


def token_axis(tokens, title=None, **kwargs):
    """An axis with one tick per token (all shown, in order; duplicates stay apart since positions are numbers)."""
    size = 13 if len(tokens) <= 20 else 11 if len(tokens) <= 40 else 9
    return dict(title=dict(text=title), tickmode="array", tickvals=list(range(len(tokens))), ticktext=escaped(tokens),
                tickfont=dict(size=size), showgrid=False, zeroline=False, automargin=True,
                showspikes=True, spikemode="across", spikethickness=1, spikecolor=ORANGE, **kwargs)


def finish(fig, title, height, **layout):
    """The layout every figure shares: its title at the top left, its height, a grey background (masked cells)."""
    fig.update_layout({"title": dict(text=title, x=0.0, xanchor="left"), "height": height, "plot_bgcolor": MASKED,
                       "margin": dict(l=10, r=10, t=90, b=10), "hoverlabel": dict(font_size=14), **layout})
    return fig


def heatmap(weights, queries, keys, zmin=0.0, zmax=None, **kwargs):
    """A heatmap of weights, rows `queries` and columns `keys`, whose hover names both tokens of a cell."""
    queries, keys = np.array(escaped(queries), dtype=object), np.array(escaped(keys), dtype=object)
    cells = np.stack(np.broadcast_arrays(queries[:, None], keys), -1)  # (queries, keys, 2)
    return go.Heatmap(z=weights, zmin=zmin, zmax=zmax, colorscale="Viridis", customdata=cells, hovertemplate=HOVER,
                      hoverongaps=False, xgap=0, ygap=0, **kwargs)
