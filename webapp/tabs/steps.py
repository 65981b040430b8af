"""The "Decoding step by step" tab: the decoder writes one token at a time, and this shows each step, the tokens so
far, where the decoder looked in the English sentence, the next-token candidates (at two temperatures when sampled),
the beam under beam search, and, in a panel, a gradient attribution beside the cross-attention ("attention is not
explanation"). The step panel is also the heads tab's view of a run with heads switched off.
"""

import html

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from interpretability.attribution import DEFAULT_METHOD

from ..controls import StepSlider
from ..events import QUIET
from ..plots import BLUE, ORANGE, ROW_PX, escaped, finish, heatmap, token_axis
from ..texts import ATTRIBUTION_HELP, BEAM_HELP, SAMPLING_HELP, STEPS_HELP
from ..tokens import decoding_steps, step_tokens, token_chips

# --- Figures and HTML --------------------------------------------------------------------------------------------


def top_k_plot(inspection, step):
    """Bars of the most probable next tokens at 1-based `step`, the chosen one in orange. With beam search the
    chosen token need not be the most probable one: the beam looks ahead."""
    _, chosen = step_tokens(inspection, step)
    tokens, probs = zip(*inspection.top_candidates[step - 1])
    fig = go.Figure(go.Bar(x=probs, y=list(range(len(tokens))), orientation="h", text=[f"{p:.0%}" for p in probs],
                           textposition="outside", customdata=escaped(tokens),
                           marker_color=[ORANGE if t == chosen else BLUE for t in tokens],
                           hovertemplate="<b>%{customdata}</b>: %{x:.1%}<extra></extra>"))
    fig.update_yaxes(token_axis(tokens, autorange="reversed"))
    fig.update_xaxes(range=[0, 1.18], title=dict(text="probability of the next token"), tickformat=".0%")
    note = "" if chosen in tokens else f" ({escaped([chosen])[0]} is not among them)"
    return finish(fig, f"Step {step}: top {len(tokens)} next tokens, chosen in orange{note}",
                  height=ROW_PX * len(tokens) + 200, plot_bgcolor="white")


def step_attention_plot(inspection, step):
    """Where the decoder looked in the English sentence while choosing the token of 1-based `step`: that query's
    cross-attention row, averaged over heads, one row per decoder layer."""
    weights = inspection.cross_attention[:, :, step - 1, :].mean(axis=1)  # (layers, S)
    sources = inspection.source_tokens
    _, chosen = step_tokens(inspection, step)
    layers = [f"layer {i + 1}" for i in range(len(weights))]
    fig = go.Figure(heatmap(weights, layers, sources, colorbar=dict(title=dict(text="weight"), thickness=14)))
    fig.update_xaxes(token_axis(sources, "Key: English source token (columns)", tickangle=-60))
    fig.update_yaxes(token_axis(layers, "decoder layer (mean over heads)", autorange="reversed"))
    return finish(fig, f"Step {step}: cross-attention while choosing {escaped([chosen])[0]}",
                  height=ROW_PX * len(layers) + 260)


def tempered_plot(inspection, step):
    """The most probable next tokens at 1-based `step`, each with two bars: its probability at temperature 1 and at
    the sampling temperature after top-k (what the sampler drew from). Dividing the logits by a temperature keeps
    their order, so both bars belong to the same tokens: a low temperature sharpens, a high one flattens."""
    _, chosen = step_tokens(inspection, step)
    at_one = dict(inspection.top_candidates[step - 1])
    tempered = dict(inspection.tempered_candidates[step - 1])
    tokens = sorted(set(at_one) | set(tempered), key=lambda t: -at_one.get(t, tempered.get(t, 0.0)))
    y = list(range(len(tokens)))
    sampling = inspection.sampling
    label = f"temperature {sampling.temperature:g}" + (f", top-{sampling.top_k}" if sampling.top_k else "")
    fig = go.Figure([
        go.Bar(x=[at_one.get(t, 0.0) for t in tokens], y=y, orientation="h", name="temperature 1",
               marker_color="#9aa5b1", customdata=escaped(tokens), hovertemplate="<b>%{customdata}</b>: %{x:.1%}"),
        go.Bar(x=[tempered.get(t, 0.0) for t in tokens], y=y, orientation="h", name=f"{label} (drawn from)",
               marker_color=[ORANGE if t == chosen else BLUE for t in tokens], customdata=escaped(tokens),
               text=[f"{tempered.get(t, 0.0):.0%}" for t in tokens], textposition="outside",
               hovertemplate="<b>%{customdata}</b>: %{x:.1%}"),
    ])
    fig.update_yaxes(token_axis(tokens, autorange="reversed"))
    fig.update_xaxes(range=[0, 1.18], title=dict(text="probability of the next token"), tickformat=".0%")
    return finish(fig, f"Step {step}: the next token drawn at {label} (orange: the one drawn)",
                  height=ROW_PX * 2 * len(tokens) + 220, plot_bgcolor="white", barmode="group",
                  legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))


def beam_html(trace, step):
    """The beam after 1-based `step` (`interpretability.beam_trace`): the hypotheses kept, best first, with their summed
    log-probabilities and the rank their last token had at its step (a rank above 1: kept though not the most probable
    there), those that ended at this step with their length-normalised scores, and the winner. Rows on the winner's
    path are marked."""
    shown = trace.steps[min(step, len(trace.steps)) - 1]
    winner = trace.winner.tokens
    on_path = lambda h: h.tokens == winner[: len(h.tokens)]  # noqa: E731
    rows = "".join(
        f'<tr class="{"on-path" if on_path(h) else ""}"><td>{i}</td><td>{_hypothesis(h.tokens)}</td>'
        f"<td>{h.score:.2f}</td><td>{_rank(h.rank)}</td></tr>"
        for i, h in enumerate(shown.live, start=1))
    ended = "".join(
        f'<tr class="{"winner" if h.tokens == winner else ""}"><td>{_hypothesis(h.tokens)} &lt;/s&gt;</td>'
        f"<td>{h.score:.2f}</td><td>{h.normalised:.3f}</td></tr>" for h in shown.finished)
    finished_table = (f'<table class="beam"><tr><th>ended here</th><th>score</th><th>score ÷ length penalty</th></tr>'
                      f"{ended}</table>" if ended else "<p>No hypothesis ended at this step.</p>")
    return (f'<div class="beam-view"><p><b>Winner</b> (best score ÷ length penalty, α = {trace.alpha:g}): '
            f"{html.escape(trace.winner.text)} — {trace.winner.normalised:.3f}</p>"
            f"<p><b>Beam after step {min(step, len(trace.steps))}</b> ({len(shown.live)} of {trace.beam} kept, best "
            "first; score = sum of the log-probabilities; marked: on the winner's path)</p>"
            f'<table class="beam"><tr><th>#</th><th>hypothesis</th><th>score</th><th>its last token was</th></tr>'
            f"{rows}</table>{finished_table}</div>")


def _hypothesis(tokens):
    if not tokens:
        return "<i>(empty)</i>"
    *prefix, last = [html.escape(t) for t in tokens]
    return " ".join(prefix + [f"<b>{last}</b>"])


def _rank(rank):
    if rank == 1:
        return "the most probable"
    return f'<span class="not-top">number {rank} at its step</span>'


METHOD_NAMES = {"gradient_x_input": "gradient × input", "integrated_gradients": "integrated gradients"}


def attribution_plot(attribution, source_tokens, step):
    """For the token chosen at 1-based `step`: the cross-attention row (mean over layers and heads) above the gradient
    attribution row over the same source tokens, each row summing to 1, with their rank agreement."""
    row = min(step, len(attribution.output_tokens)) - 1
    method = METHOD_NAMES[attribution.method]
    names = ["cross-attention (mean)", method]
    weights = np.stack([attribution.attention[row], attribution.scores[row]])  # (2, S)
    fig = go.Figure(go.Heatmap(
        z=weights, zmin=0.0, colorscale="Viridis", x=list(range(len(source_tokens))), y=[0, 1],
        customdata=np.stack(np.broadcast_arrays(np.array(names, dtype=object)[:, None],
                                                np.array(escaped(source_tokens), dtype=object)), -1),
        hovertemplate="%{customdata[0]}<br>source <b>%{customdata[1]}</b>: %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="share", side="right"), thickness=14), xgap=1, ygap=4))
    fig.update_xaxes(token_axis(source_tokens, "English source token", tickangle=-60))
    fig.update_yaxes(tickmode="array", tickvals=[0, 1], ticktext=names, autorange="reversed")
    rho = attribution.agreement[row]
    agreement = _agreement(rho) + (" (one source token)" if np.isnan(rho) else "")
    token = escaped([attribution.output_tokens[row]])[0]
    return finish(fig, f"Step {step}: where the decoder looked vs what the choice of {token} depended on<br>"
                       f"<sup>rank agreement (Spearman ρ) {agreement} · over the sentence "
                       f"{_agreement(attribution.mean_agreement)} · {attribution.seconds:.2f} s</sup>",
                  height=330, plot_bgcolor="white")


def _agreement(rho):
    """A Spearman ρ in words: NaN where no order exists to compare (`attribution.spearman`)."""
    return "undefined" if np.isnan(rho) else f"{rho:+.2f}"


# --- Events ----------------------------------------------------------------------------------------------------------


def move_step_js(slider_id, delta):
    """Browser code for ◀/▶: the step slider moves at once, within its ends, with no round trip to the server (Gradio's
    public structure: a gr.Slider holds a native range input, whose max is the slider's)."""
    return (f"(step) => {{ const r = document.querySelector('#{slider_id} input[type=range]'); "
            f"return Math.max(1, Math.min(step + ({delta}), r ? Number(r.max) : step)); }}")


def reset_step(inspection):
    """The step slider of a new translation: at step 1, one stop per decoder step (value and maximum set together)."""
    steps = decoding_steps(inspection) if inspection is not None else 1
    return gr.Slider(value=1, maximum=max(steps, 2))  # a slider needs two ends; step_view clamps


def clamped_step(inspection, step):
    return max(1, min(int(step), decoding_steps(inspection)))


def step_view(inspection, step):
    """One decoding step: the tokens so far, the next-token candidates (at two temperatures when sampled), where the
    decoder looked, and the beam (under beam search)."""
    if inspection is None:
        return "", None, None, gr.HTML(visible=False)
    step = clamped_step(inspection, step)
    prefix, chosen = step_tokens(inspection, step)
    chips = token_chips(prefix + [chosen], f"step {step}", highlight=len(prefix))
    candidates = (tempered_plot if inspection.sampling else top_k_plot)(inspection, step)
    trace = inspection.beam_trace
    beam = gr.HTML(beam_html(trace, step), visible=True) if trace else gr.HTML(visible=False)
    return chips, candidates, step_attention_plot(inspection, step), beam


def new_sentence(inspection):
    """A new translation: the step slider back to step 1 of it (`reset_step`) and that step drawn, in one answer, so
    the panel never shows a step of the sentence before (the slider's old value is not read)."""
    return (reset_step(inspection), *step_view(inspection, 1))


def attribution_view(served, inspection, method, step, panel_open, cached):
    """Gradient attribution beside cross-attention at this step, computed only while its panel is open, once per
    sentence and method (`cached`: (sentence tokens and method, Attribution)); step changes redraw from it."""
    if not panel_open or inspection is None:
        return gr.skip(), gr.skip()
    key = (tuple(inspection.source_tokens), tuple(inspection.target_tokens), method)
    if cached is None or cached[0] != key:
        cached = key, served.attribute(inspection, method)
    return attribution_plot(cached[1], inspection.source_tokens, clamped_step(inspection, step)), cached


def step_panel(name, inspection):
    """The step-by-step view of the translation in the State `inspection`: ◀ slider ▶, the tokens so far, where the
    decoder looked, the next-token candidates and the beam; wired to follow the State. Element ids start `name`.
    Returns the step slider."""
    with gr.Row():
        previous_step = gr.Button("◀ Previous", size="sm", scale=1)
        step = StepSlider(1, 2, value=1, step=1, label="Step (one per generated token)", scale=6, elem_id=name)
        next_step = gr.Button("Next ▶", size="sm", scale=1)
    prefix = gr.HTML()
    attention = gr.Plot(show_label=False, elem_id=f"{name}-attention")  # full width: every token legible
    candidates = gr.Plot(show_label=False, elem_id=f"{name}-candidates")
    beam = gr.HTML(visible=False, elem_id=f"{name}-beam")
    views = [prefix, candidates, attention, beam]
    inspection.change(new_sentence, inspection, [step, *views], **QUIET)
    step.change(step_view, [inspection, step], views, **QUIET)  # moved by hand, by ◀/▶, or back to 1 by a translation
    for button, delta in [(previous_step, -1), (next_step, 1)]:  # moved in the browser; step.change draws
        button.click(None, step, step, js=move_step_js(name, delta), **QUIET)
    return step


def attribution_panel(served, inspection, step):
    """The "Attention is not explanation" panel under the step view, wired to follow the translation and the step
    while it is open (closed, it computes nothing)."""
    with gr.Accordion("Attention is not explanation: compare with a gradient attribution", open=False,
                      elem_id="attribution-panel") as panel:
        gr.Markdown(ATTRIBUTION_HELP)
        method = gr.Radio([(name, m) for m, name in METHOD_NAMES.items()], value=DEFAULT_METHOD,
                          label="Attribution", elem_id="attribution-method")
        figure = gr.Plot(show_label=False, elem_id="attribution")
    panel_open = gr.State(False)
    cached = gr.State(None)  # (what it was computed for, Attribution): step changes reuse it
    draw = dict(fn=served.bind(attribution_view), inputs=[inspection, method, step, panel_open, cached],
                outputs=[figure, cached])
    panel.expand(lambda: True, None, panel_open, api_visibility="private").then(**draw, api_visibility="private")
    panel.collapse(lambda: False, None, panel_open, api_visibility="private")
    gr.on([inspection.change, method.input, step.change], **draw, **QUIET)


def build(served, inspection):
    """The tab: how decoding works, the step panel of the translation in the State `inspection`, and the attribution
    panel."""
    gr.Markdown(STEPS_HELP)
    with gr.Accordion("Sampling and beam search, explained", open=False):
        gr.Markdown(SAMPLING_HELP + "\n\n" + BEAM_HELP)
    attribution_panel(served, inspection, step_panel("step", inspection))
