"""The "Positional encoding" tab: attention itself ignores word order, so a sinusoidal positional encoding is added
to each token's embedding. This shows the encoding's table, the sine and cosine waves of chosen dimensions, how alike
the encodings of nearby positions are, and the size of each token's meaning next to its position signal. Drawn only
while the tab is in view (the table is 100 kB, the norms a model pass), once per sentence.
"""

import gradio as gr
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interpretability import positional_encoding

from ..plots import ROW_PX, finish, heatmap, token_axis
from ..texts import POSITION_HELP


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
    return finish(fig, title, height=480)


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
    return finish(fig, "Sine and cosine waves of the chosen dimensions", height=420, plot_bgcolor="white")


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
    fig.add_trace(heatmap(similarity[:n, :n], tokens[:n], tokens[:n], **scale,
                          colorbar=dict(title=dict(text="PE(i) · PE(j)"), thickness=14)), 1, 2)
    fig.data[1].hovertemplate = "PE(%{customdata[0]}) · PE(%{customdata[1]}) = %{z}<extra></extra>"
    fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=-0.5, y1=n - 0.5, line=dict(color="red", width=2),
                  row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(token_axis(tokens[:n], tickangle=-60), row=1, col=2)
    fig.update_yaxes(token_axis(tokens[:n], autorange="reversed"), row=1, col=2)
    return finish(fig, "Position similarity: nearby positions have similar encodings",
                  height=max(480, ROW_PX * n + 220))


def embedding_norms_plot(tokens, embedding, position):
    """Bars of `interpretability.embedding_norms` per token: the position signal next to the meaning it is added to."""
    fig = go.Figure([go.Bar(x=list(range(len(tokens))), y=embedding, name="‖embedding × √d_model‖"),
                     go.Bar(x=list(range(len(tokens))), y=position, name="‖positional encoding‖")])
    fig.update_xaxes(token_axis(tokens, tickangle=-60))
    fig.update_yaxes(title=dict(text="vector length (L2 norm)"))
    return finish(fig, "What goes into the encoder: token meaning + position", height=440, plot_bgcolor="white",
                  barmode="group", legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))


def draw(served, inspection, drawn):
    """The tab's figures and what they were drawn for (the sentence's tokens); nothing is redrawn when they are
    already drawn for these tokens."""
    tokens = tuple(inspection.source_tokens) if inspection is not None else ()
    if tokens == drawn:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    pe = positional_encoding(served.translator.model)
    if not tokens:
        return positional_table_plot(pe), None, None, tokens
    return (
        positional_table_plot(pe, len(tokens)),
        position_similarity_plot(pe, list(tokens)),
        embedding_norms_plot(list(tokens), *served.embedding_norms(list(tokens))),
        tokens,
    )


def curves(served, dims):
    return positional_curves_plot(positional_encoding(served.translator.model), sorted(dims))


def build(served, inspection, draw_in_view):
    """The tab's figures, drawn for the translation in the State `inspection` while in view (`draw_in_view`:
    `TabsInView.tab`'s); the waves of the dimensions chosen, drawn when chosen."""
    gr.Markdown(POSITION_HELP)
    table = gr.Plot(show_label=False, elem_id="positional-table")
    d_model = served.cfg.d_model
    default_dims = [0, d_model // 8, d_model // 4, d_model // 4 + 1]  # fast to slow waves
    dims = gr.Dropdown(list(range(d_model)), value=default_dims, multiselect=True, label="Dimensions to plot")
    waves = gr.Plot(curves(served, default_dims), show_label=False, elem_id="positional-curves")
    similarity = gr.Plot(show_label=False, elem_id="position-similarity")
    norms = gr.Plot(show_label=False, elem_id="embedding-norms")
    drawn = gr.State(None)  # the tokens the figures show
    draw_in_view(served.bind(draw), [inspection, drawn], [table, similarity, norms, drawn])
    dims.input(served.bind(curves), dims, waves, api_visibility="private", trigger_mode="always_last")
