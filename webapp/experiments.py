"""The views of the experiments: head diagnostics and importance (layers × heads heatmaps), the translation with
heads switched off beside the normal one, the next-token distribution at two temperatures, the beam at one step,
and gradient attribution beside cross-attention. Numbers come from the library (`interpretability.diagnostics`,
`interpretability.ablation`, `interpretability.attribution`, `interpretability.beam_trace`); this module only draws them.

A head is named on the page and in the API as "<kind> L<layer> H<head>" ("cross L2 H3"), 1-based like the radios.
"""

import difflib
import html
import re

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .interactive import ROW_PX, _finish, _labels, _token_axis
from .views import ATTENTION_KINDS, output_tokens, step_tokens, token_chips

HEAD_NAME = re.compile(r"(encoder|decoder|cross) L(\d+) H(\d+)")

# What each diagnostic measures, in the words of the page; `alignment` exists for cross-attention only.
MEASURES = {
    "entropy": "entropy (0 = peaked on one token, 1 = spread evenly)",
    "same": "share on the token itself",
    "previous": "share on the previous token",
    "eos": "share on </s>",
    "punctuation": "share on punctuation",
    "alignment": "one-to-one alignment (cross)",
}


def head_name(kind, layer, head):
    """The page's name of a head from 0-based `layer` and `head`."""
    return f"{kind} L{layer + 1} H{head + 1}"


def parse_head_name(name, grid):
    """(kind, 0-based layer, 0-based head) of a head's name, one of the model's (`grid`: kind -> (layers, heads),
    `ablation.head_grid`); a ValueError that says the format or the model's heads otherwise."""
    match = HEAD_NAME.fullmatch(str(name).strip())
    if not match:
        raise ValueError(f"{name!r} is not a head: write it as '<kind> L<layer> H<head>', kind one of "
                         f"{', '.join(ATTENTION_KINDS)}, e.g. 'cross L2 H3'")
    kind, layer, head = match.group(1), int(match.group(2)), int(match.group(3))
    n_layers, n_heads = grid[kind]
    if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
        raise ValueError(f"{name!r} is not a head of this model: its {kind} heads are L1..L{n_layers} "
                         f"H1..H{n_heads}")
    return kind, layer - 1, head - 1


def head_choices(kind, n_layers, n_heads):
    """Checkbox choices (label, value) for every head of one kind."""
    return [(f"L{i + 1} H{h + 1}", head_name(kind, i, h)) for i in range(n_layers) for h in range(n_heads)]


# --- Head diagnostics and importance ---------------------------------------------------------------------------


def diagnostics_plot(stats, kind, measure):
    """One kind's heads (layers × heads), coloured by `measure`, each cell labelled with its plain-words pattern;
    hover shows every measure. A cell clicked opens that head in the attention views (page.js)."""
    values = getattr(stats, measure)
    n_layers, n_heads = values.shape
    shown = [m for m in MEASURES if getattr(stats, m, None) is not None]
    hover = np.array([[("<br>".join(f"{MEASURES[m]}: {_number(getattr(stats, m)[i, h])}" for m in shown)
                        + (f"<br><b>{html.escape(stats.labels[i][h])}</b>" if stats.labels[i][h] else ""))
                       for h in range(n_heads)] for i in range(n_layers)], dtype=object)
    # Escaped: plotly reads "</s>" (in "looks at </s>") as markup and shows nothing of it.
    text = [[f"{_number(values[i, h])}<br>{html.escape(stats.labels[i][h], quote=False)}" for h in range(n_heads)]
            for i in range(n_layers)]
    fig = go.Figure(go.Heatmap(
        z=values, zmin=0.0, zmax=1.0, colorscale="Viridis", text=text, texttemplate="%{text}",
        textfont=dict(size=12), customdata=hover, xgap=3, ygap=3,
        hovertemplate="layer %{y} · head %{x} (click to open)<br>%{customdata}<extra></extra>",
        colorbar=dict(title=dict(text=MEASURES[measure].split(" (")[0], side="right"), thickness=14),
        x=list(range(1, n_heads + 1)), y=list(range(1, n_layers + 1)),
        name=ATTENTION_KINDS[kind].title))  # page.js: a click chooses this kind's radio, named so
    fig.update_xaxes(title=dict(text="head"), tickmode="array", tickvals=list(range(1, n_heads + 1)))
    fig.update_yaxes(title=dict(text="layer"), tickmode="array", tickvals=list(range(1, n_layers + 1)),
                     autorange="reversed")
    return _finish(fig, f"{ATTENTION_KINDS[kind].title}: {MEASURES[measure]}, per head, for this sentence"
                        "<br><sup>click a head to open it in the Attention tab</sup>",
                   height=90 * n_layers + 170)


def _number(value):
    return "–" if value is None or np.isnan(value) else f"{value:.2f}"


def importance_plot(importance):
    """The dev-BLEU drop when each head alone is switched off (`training.head_importance`), one heatmap of layers ×
    heads per kind on one colour scale centred on 0 (red: the translation gets worse without the head)."""
    drops = {kind: np.asarray(importance["drop"][kind], dtype=float) for kind in ATTENTION_KINDS}
    limit = max(float(np.abs(d).max()) for d in drops.values()) or 1.0
    fig = make_subplots(1, len(drops), subplot_titles=[ATTENTION_KINDS[k].title for k in drops],
                        horizontal_spacing=0.06)
    for col, (kind, drop) in enumerate(drops.items(), start=1):
        n_layers, n_heads = drop.shape
        fig.add_trace(go.Heatmap(
            z=drop, zmin=-limit, zmax=limit, colorscale="RdBu", reversescale=True, showscale=col == 1,
            x=list(range(1, n_heads + 1)), y=list(range(1, n_layers + 1)), xgap=3, ygap=3,
            text=np.round(drop, 1), texttemplate="%{text}", name=kind,  # page.js: a click ticks #off-<kind>
            colorbar=dict(title=dict(text="BLEU drop", side="right"), thickness=14),
            hovertemplate=f"{kind} layer %{{y}} · head %{{x}}: BLEU {importance['bleu']:.1f} → "
                          f"%{{customdata:.1f}} without it (drop %{{z:.2f}})<extra></extra>",
            customdata=importance["bleu"] - drop), 1, col)
        fig.update_xaxes(title=dict(text="head"), tickmode="array", tickvals=list(range(1, n_heads + 1)), row=1,
                         col=col)
        fig.update_yaxes(title=dict(text="layer") if col == 1 else None, tickmode="array",
                         tickvals=list(range(1, n_layers + 1)), autorange="reversed", row=1, col=col)
    n = importance.get("n", "?")
    title = (f"How much each head matters: {importance['data']} BLEU {importance['bleu']:.1f} ({n} sentences, "
             f"{importance.get('decoding', 'greedy')}) minus the BLEU with that head alone switched off")
    n_rows = max(d.shape[0] for d in drops.values())
    return _finish(fig, title, height=90 * n_rows + 200)


# --- Heads switched off -----------------------------------------------------------------------------------------


def ablation_html(normal, ablated, heads):
    """The normal translation and the one with `heads` (names) switched off, token by token, the tokens that
    changed marked on both sides (a token-level diff)."""
    before, after = output_tokens(normal), output_tokens(ablated)
    removed, added = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op != "equal":
            removed.update(range(i1, i2))
            added.update(range(j1, j2))
    off = ", ".join(heads) if heads else "none"
    verdict = ("The translation did not change." if before == after
               else f"{len(removed)} of the {len(before)} normal tokens and {len(added)} of the {len(after)} with the "
                    "heads off differ (marked).")
    return (f'<div class="ablation"><p><b>Heads switched off:</b> {html.escape(off)}. {verdict}</p>'
            f"<p><b>Normal:</b> {html.escape(normal.translation)}</p>"
            + token_chips(before, "normal", changed=removed)
            + f"<p><b>With the heads off:</b> {html.escape(ablated.translation)}</p>"
            + token_chips(after, "heads off", changed=added) + "</div>")


# --- Sampling: the next-token distribution at two temperatures ----------------------------------------------------


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
               marker_color="#9aa5b1", customdata=_labels(tokens), hovertemplate="<b>%{customdata}</b>: %{x:.1%}"),
        go.Bar(x=[tempered.get(t, 0.0) for t in tokens], y=y, orientation="h", name=f"{label} (drawn from)",
               marker_color=["#ff9f43" if t == chosen else "#1f77b4" for t in tokens], customdata=_labels(tokens),
               text=[f"{tempered.get(t, 0.0):.0%}" for t in tokens], textposition="outside",
               hovertemplate="<b>%{customdata}</b>: %{x:.1%}"),
    ])
    fig.update_yaxes(_token_axis(tokens, autorange="reversed"))
    fig.update_xaxes(range=[0, 1.18], title=dict(text="probability of the next token"), tickformat=".0%")
    return _finish(fig, f"Step {step}: the next token drawn at {label} (orange: the one drawn)",
                   height=ROW_PX * 2 * len(tokens) + 220, plot_bgcolor="white", barmode="group",
                   legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))


# --- Watching beam search -----------------------------------------------------------------------------------------


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


# --- Attention is not explanation -------------------------------------------------------------------------------

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
                                                np.array(_labels(source_tokens), dtype=object)), -1),
        hovertemplate="%{customdata[0]}<br>source <b>%{customdata[1]}</b>: %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="share", side="right"), thickness=14), xgap=1, ygap=4))
    fig.update_xaxes(_token_axis(source_tokens, "English source token", tickangle=-60))
    fig.update_yaxes(tickmode="array", tickvals=[0, 1], ticktext=names, autorange="reversed")
    rho = attribution.agreement[row]
    agreement = _agreement(rho) + (" (one source token)" if np.isnan(rho) else "")
    token = _labels([attribution.output_tokens[row]])[0]
    return _finish(fig, f"Step {step}: where the decoder looked vs what the choice of {token} depended on<br>"
                        f"<sup>rank agreement (Spearman ρ) {agreement} · over the sentence "
                        f"{_agreement(attribution.mean_agreement)} · {attribution.seconds:.2f} s</sup>",
                   height=330, plot_bgcolor="white")


def _agreement(rho):
    """A Spearman ρ in words: NaN where no order exists to compare (`attribution.spearman`)."""
    return "undefined" if np.isnan(rho) else f"{rho:+.2f}"
