"""The "Inside one head" tab: one attention head's arithmetic for one query token, the model's real numbers for the
sentence in the order the computation runs: q, K and V; per key token the score q·k_j, the score / √d_k, the mask and
the softmax weight, so one number can be followed from score to weight; then the head's output and where it goes
next; beside them, the formula with each symbol tied to a figure. Drawn from a `HeadDetails`
(`interpretability.head_details`: a model pass), so only while the tab is in view.
"""

import gradio as gr
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..attention_kinds import (ATTENTION_KINDS, attention_maps, chosen_layer, clamp_layer_on_kind_change,
                              kind_radio, layer_radio)
from ..controls import NumberRadio
from ..events import QUIET
from ..plots import BLUE, ORANGE, ROW_PX, escaped, finish, token_axis
from ..texts import HEAD_HELP
from ..tokens import output_tokens

HIDDEN = "#b8b8b8"  # a masked key (the key with the most weight: ORANGE, the others: BLUE)


def query_choices(inspection, kind):
    """(token, position) of every query token of one kind: the choices of the token picker."""
    _, queries, _ = attention_maps(inspection, kind)
    return [(token, i) for i, token in enumerate(queries)]


def _key_axis(details, **kwargs):
    """An axis of the key tokens, hidden ones in grey."""
    labels = [f'<span style="color:{HIDDEN}">{label}</span>' if hidden else label
              for label, hidden in zip(escaped(details.key_tokens), details.masked)]
    return {**token_axis(details.key_tokens, **kwargs), "ticktext": labels}


def title(details):
    return (f"{ATTENTION_KINDS[details.kind].title} · layer {details.layer + 1} · head {details.head + 1} · "
            f"query {escaped([details.query_token])[0]}")


def score_columns(details):
    """What the bars show, one value per key token (in `details.key_tokens` order), in the order computed, each under
    a short title of two lines (four titles side by side stay apart on a phone): q·k_j, q·k_j / √d_k, the mask M_j
    (0 for a visible key, -inf for a hidden one), the softmax weight w_j."""
    return {
        "score<br>q·k_j": details.scores,
        f"scaled: ÷ √d_k<br>(÷ {np.sqrt(details.d_k):.3g})": details.scaled,
        "mask<br>M_j": np.where(details.masked, -np.inf, 0.0),
        "softmax<br>weight w_j": details.weights,
    }


def _key_hover(details):
    """Each key's chain from score to weight, shown on hovering any of its bars."""
    return [f"key <b>{token}</b><br>q·k = {score:.2f} → ÷ √d_k = {scaled:.2f}<br>"
            f"+ M = {'−∞' if hidden else 0} → weight {weight:.3f}" for token, score, scaled, hidden, weight in
            zip(escaped(details.key_tokens), details.scores, details.scaled, details.masked, details.weights)]


def _vector_trace(values, **kwargs):
    return go.Heatmap(z=values, coloraxis="coloraxis", ygap=1, **kwargs)  # one colour scale for q, K and V


def vectors_plot(details):
    """q above K (the same d_k columns: the score q·k_j pairs them column by column), V beside K; rows are the key
    tokens, on one colour scale centred on zero (red positive, blue negative)."""
    keys, d_k = details.key_tokens, details.d_k
    rows = list(range(len(keys)))
    fig = make_subplots(2, 2, row_heights=[1, max(2, len(keys))], shared_xaxes=True, shared_yaxes=False,
                        horizontal_spacing=0.06, vertical_spacing=0.12, specs=[[{}, None], [{}, {}]],
                        subplot_titles=[f"q = x W_Q + b_Q<br>the query's d_k = {d_k} numbers",  # two short lines:
                                        "K = X W_K + b_K<br>a key k_j per token",  # apart on a phone too
                                        "V = X W_V + b_V<br>a value v_j per token"])
    fig.add_trace(_vector_trace(details.q[None], y=[0], hovertemplate=(
        f"query <b>{escaped([details.query_token])[0]}</b> · q[%{{x}}] = %{{z:.3f}}<extra></extra>")), 1, 1)
    for col, (name, values) in enumerate([("k", details.k), ("v", details.v)], start=2):
        tokens = np.array(escaped(details.key_tokens), dtype=object)[:, None].repeat(d_k, 1)  # (keys, d_k)
        fig.add_trace(_vector_trace(values, y=rows, customdata=tokens,
                                    hovertemplate=f"key <b>%{{customdata}}</b> · {name}[%{{x}}] = %{{z:.3f}}"
                                                  "<extra></extra>"), 2, col - 1)
    fig.update_yaxes(token_axis([details.query_token]), row=1, col=1)
    fig.update_yaxes(_key_axis(details, autorange="reversed"), row=2, col=1)
    fig.update_yaxes(token_axis([""] * len(keys), autorange="reversed"), row=2, col=2)
    fig.update_xaxes(title=dict(text=f"dimension of the head (0 … {d_k - 1})"), row=2)
    fig.update_annotations(font_size=13)  # the panels' titles
    top = float(max(np.abs(a).max() for a in (details.q, details.k, details.v))) or 1.0
    coloraxis = dict(colorscale="RdBu", reversescale=True, cmin=-top, cmax=top,
                     colorbar=dict(title=dict(text="value", side="right"), thickness=14))
    return finish(fig, f"① q, K and V<br><sup>{title(details)}</sup>", height=ROW_PX * len(keys) + 320,
                  plot_bgcolor="white", coloraxis=coloraxis, margin=dict(l=10, r=10, t=115, b=10))


def score_plot(details):
    """Four panels sharing the key tokens as rows, read left to right: each key's score, scaled score, mask and
    softmax weight. Hidden keys are grey and end at weight 0; the key with the most weight is orange. Each number is
    written right of its bar's end (of zero, for a negative bar), in room kept for it inside its own panel, so it
    never runs into the token labels or the next panel."""
    keys, masked = details.key_tokens, details.masked
    rows = list(range(len(keys)))
    top = int(np.argmax(details.weights))
    columns = score_columns(details)
    fig = make_subplots(1, 4, shared_yaxes=True, horizontal_spacing=0.03, subplot_titles=list(columns),
                        column_widths=[0.3, 0.3, 0.14, 0.26])
    hover = _key_hover(details)
    for col, values in enumerate(columns.values(), start=1):
        if col == 3:  # the mask: a column of 0 and −∞
            fig.add_scatter(x=[0.0] * len(keys), y=rows, mode="text", hovertext=hover, hoverinfo="text",
                            text=["−∞" if m else "0" for m in masked], showlegend=False,
                            textfont=dict(color=[HIDDEN if m else "black" for m in masked], size=14), row=1, col=col)
            fig.update_xaxes(visible=False, range=[-1, 1], row=1, col=col)
            continue
        weight = col == 4
        colours = [HIDDEN if m else ORANGE if weight and j == top else BLUE for j, m in enumerate(masked)]
        fig.add_bar(x=values, y=rows, orientation="h", marker_color=colours, showlegend=False, hovertext=hover,
                    hoverinfo="text", row=1, col=col)
        fig.add_scatter(x=np.maximum(values, 0.0), y=rows, mode="text", text=[f" {v:.2f}" for v in values],
                        textposition="middle right", textfont=dict(size=12), hovertext=hover, hoverinfo="text",
                        showlegend=False, cliponaxis=False, row=1, col=col)
        low, high = (0.0, 1.0) if weight else (min(0.0, values.min()), max(0.0, values.max()))
        span = high - low or 1e-3
        fig.update_xaxes(range=[low - 0.04 * span, high + 0.6 * span], zeroline=True, zerolinecolor="black",
                         row=1, col=col)  # the right 37 %: room for the numbers
        if weight:
            fig.update_xaxes(tickvals=[0, 0.5, 1], row=1, col=col)
    fig.update_annotations(font_size=13)  # the panels' titles
    # A fixed margin for the token labels: plotly's automargin keeps growing it when labels overhang the axes.
    fig.update_yaxes({**_key_axis(details, title="key token", autorange="reversed"), "automargin": False}, row=1, col=1)
    return finish(fig, f"② From score to weight, one row per key<br><sup>{title(details)}</sup>",
                  height=ROW_PX * len(keys) + 240, plot_bgcolor="white",
                  margin=dict(l=9 * max(map(len, keys)) + 60, r=20, t=110, b=30))


def output_plot(details):
    """The head's output in its slot of the concatenated heads, that slot's share through W_O, and the sub-layer's
    output: one strip each, d_model wide (each on its own colour scale centred on zero)."""
    d_k, width = details.d_k, len(details.concat)
    start = details.head * d_k
    strips = [
        (details.output, np.arange(start, start + d_k), f"head output Σ_j w_j v_j: {d_k} numbers, in its slot"),
        (details.concat, None, f"Concat(head_1 … head_{width // d_k}): the {width} numbers W_O reads"),
        (details.contribution, None, f"this head's share: its output × its {d_k} rows of W_O"),
        (details.attention_output, None, "attention output = Concat · W_O + b_O: added to the residual stream"),
    ]
    fig = make_subplots(len(strips), 1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=[name for _, _, name in strips])
    for row, (values, x, _) in enumerate(strips, start=1):
        top = float(np.abs(values).max()) or 1.0
        fig.add_trace(go.Heatmap(z=values[None], x=x, colorscale="RdBu", reversescale=True, zmin=-top, zmax=top,
                                 showscale=False, hovertemplate="dimension %{x}: %{z:.3f}<extra></extra>"), row, 1)
    for edge in range(d_k, width, d_k):
        fig.add_vline(x=edge - 0.5, line=dict(color="black", width=1), row=2, col=1)
    fig.add_shape(type="rect", x0=start - 0.5, x1=start + d_k - 0.5, y0=-0.5, y1=0.5,
                  line=dict(color=ORANGE, width=3), row=2, col=1)
    fig.update_xaxes(range=[-0.5, width - 0.5])
    fig.update_xaxes(title=dict(text="dimension of the model (d_model)"), row=len(strips))
    fig.update_yaxes(visible=False)
    return finish(fig, f"③ Where the output goes<br><sup>{title(details)}</sup>", height=440, plot_bgcolor="white")


def head_markdown(details, inspection):
    """The formula beside the figures, each symbol tied to the figure that shows it, with this query's numbers."""
    top = int(np.argmax(details.weights))
    d_k, n_hidden = details.d_k, int(details.masked.sum())
    chosen = "" if details.kind == "encoder" else (
        f" From this position the decoder chose `{output_tokens(inspection)[details.query]}`.")
    why_hidden = ": later positions, not yet written at this one" if details.kind == "decoder" else ""
    return f"""### softmax(q·Kᵀ / √d_k + M) · V
Query `{details.query_token}` (position {details.query + 1}).{chosen}

- **x**: the query token's {len(details.x)} numbers after layer normalisation, what this sub-layer reads; the
  keys' x_j are the rows of **X** (the English sentence's, in cross-attention).
- **q = x W_Q + b_Q**: the top strip of ①, d_k = {d_k} numbers (W_Q: this head's d_model × d_k slice).
- **K = X W_K + b_K**, **V = X W_V + b_V**: the two heatmaps of ①, one row per key token.
- **q·Kᵀ**: first bars of ②, one score per key, large where q and k_j point the same way.
- **/ √d_k** (÷ {np.sqrt(d_k):.3g}): second bars; keeps the scores from growing with d_k and saturating the softmax.
- **M**: third column, 0 for a visible key, −∞ for a hidden one ({n_hidden} hidden here{why_hidden}).
- **softmax**: last bars, the weights w_j: ≥ 0, summing to 1, exactly 0 for hidden keys.
- **· V**: the head's output Σ_j w_j v_j, {d_k} numbers: top strip of ③.
- Then: side by side with the other heads' outputs (Concat), × W_O (+ b_O), and added to the residual stream.

Most weight here: `{details.key_tokens[top]}`, score {details.scores[top]:.2f} → ÷ √d_k {details.scaled[top]:.2f}
→ weight {details.weights[top]:.2f}."""


def draw(served, inspection, kind, layer, head, query):
    """The tab for all its controls at once: the layer and query-token radios (the query tokens of this kind; the
    value is set only when the chosen one does not exist, so a click made meanwhile stays), q, K and V, the bars from
    score to weight, the output, and the formula with this query's numbers."""
    layer, layer_radio_update = chosen_layer(served, kind, layer)
    if inspection is None:
        return layer_radio_update, gr.Radio(choices=[]), None, None, None, ""
    choices = query_choices(inspection, kind)
    if query is None or not 0 <= query < len(choices):  # none yet, a shorter sentence, or the other side's tokens
        query, query_radio = 0, gr.Radio(choices=choices, value=0)
    else:
        query_radio = gr.Radio(choices=choices)
    details = served.head_details(inspection, kind, layer, int(head) - 1, query)
    return (layer_radio_update, query_radio, vectors_plot(details), score_plot(details), output_plot(details),
            head_markdown(details, inspection))


def build(served, inspection, draw_in_view):
    """The tab's controls and figures, drawn for the translation in the State `inspection` while in view
    (`draw_in_view`: `TabsInView.tab`'s) and whenever a control changes."""
    gr.Markdown(HEAD_HELP)
    with gr.Row():
        kind = kind_radio("head-kind")
        layer = layer_radio(served, "head-layer")
        head = gr.Radio([str(h) for h in range(1, served.cfg.n_heads + 1)], value="1", label="Head", scale=1,
                        elem_id="head-number")
    query = NumberRadio([], label="Query token (click one)", elem_id="query")  # its tokens change with the kind
    with gr.Row():
        with gr.Column(scale=3):
            vectors = gr.Plot(show_label=False, elem_id="head-vectors")
            scores = gr.Plot(show_label=False, elem_id="head-scores")
            output = gr.Plot(show_label=False, elem_id="head-output")
        formula = gr.Markdown(elem_id="head-formula")
    controls = [kind, layer, head, query]
    outputs = [layer, query, vectors, scores, output, formula]
    draw_in_view(served.bind(draw), [inspection, *controls], outputs)
    gr.on([control.input for control in controls], served.bind(draw), [inspection, *controls], outputs, **QUIET)
    clamp_layer_on_kind_change(served, kind, layer, **QUIET)
