"""Web demo: translate English to Italian and look inside the Transformer that does it.

    pip install -r requirements.txt
    python app.py                          # http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT apply)
    MODEL_DIR=runs/cpu/model python app.py # another model directory
    MODEL_DTYPE=float32 python app.py      # run the model in float32 (default: float16 where the CPU has fast kernels)
    MODEL_DIR=user/name python app.py      # a model repository on the Hugging Face Hub (fetched once, then cached)
    MODEL_DEVICE=cpu python app.py         # the CPU even where there is a CUDA GPU (default: the GPU, in bf16/fp16)
    BATCH_SIZE=1 python app.py             # decode each request alone (default: up to 16 concurrent ones together)

Wiring only: `serving.model_dir.open_model` loads the model, `interpretability` looks inside it, `webapp` draws and
writes the page. Each translation is one `interpretability.inspect` call, kept in the session state; every view is drawn from it. The attention and decoding
views follow each translation (plotly figures, a few kB the browser draws); the tabs that cost the server more
(inside one head, positional encoding) are drawn only while in view (a tab draws its own when opened).
"""

import os
import signal
import sys
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the app needs no network; do not phone home

try:  # On a Hugging Face Space: imported before torch places the model, so that on ZeroGPU hardware the model goes
    import spaces  # to the GPU that `spaces.GPU` lends each call it wraps (elsewhere spaces.GPU changes nothing)

    on_gpu = spaces.GPU
except ImportError:  # not on a Space
    on_gpu = lambda fn: fn  # noqa: E731

import gradio as gr  # noqa: E402 (after the environment it reads)
from PIL import Image

from interpretability import embedding_norms as norms_of, head_details as head_details_of, input_report, \
    inspect, positional_encoding
from interpretability.ablation import ablated, head_grid
from interpretability.attribution import DEFAULT_METHOD, source_attribution
from serving.batching import batched_inspect
from interpretability.diagnostics import head_diagnostics
from serving.device import fast_dtype, pick_device
from serving.model_card import about_markdown, model_card_markdown
from serving.model_dir import open_model
from transformer import ModelLoadError, Sampling
from webapp import experiments, figures, head_view, interactive, views
from webapp.downloads import Downloads
from webapp.style import CSS, SCRIPT
from webapp.texts import (ABLATION_HELP, ATTENTION_HELP, BEAM_HELP, CREDITS, EMPTY_MESSAGE, HEAD_HELP, HEADS_HELP,
                          ATTRIBUTION_HELP, IMPORTANCE_MISSING, INTRO, POSITION_HELP, SAMPLING_HELP, SCORES_HELP,
                          STEPS_HELP, TRAIN_HELP)

MODEL_DIR = Path(os.environ.get("MODEL_DIR", Path(__file__).parent / "assets" / "model"))  # or a Hub id, user/name
MODEL_DEVICE = pick_device(os.environ.get("MODEL_DEVICE"))  # a CUDA GPU when there is one
# On a CPU, one sentence at a time, a decoder step waits on reading the weights: float16 halves that (README,
# Benchmarks); on a GPU, bfloat16 or float16 (serving.device).
MODEL_DTYPE = os.environ.get("MODEL_DTYPE") or fast_dtype(MODEL_DEVICE)
# Concurrent translations decoded together, at most this many at once (1: each alone). README, Benchmarks.
BATCH_SIZE = int(os.environ.get("BATCH_SIZE", 16))
MAX_BEAM = 8  # the widest beam the page offers, and the API accepts: each beam adds to every decoding step

EXAMPLES = [
    "I love reading books.",
    "Where is the train station?",
    "Tom doesn't like coffee.",
    "We are going to the beach tomorrow.",
    "Can you help me, please?",
    "She bought a new car last week.",
    "The cat is sleeping on the sofa.",
    "I don't know what to say.",
    "It's raining, so take an umbrella.",
    "How much does this cost?",
]

downloads = Downloads()  # removed at exit, on SIGTERM too (see the end of this file)


def load_model():
    """(model directory, None), or (None, why not): the page explains, and so does the terminal that started the app."""
    try:
        return open_model(MODEL_DIR, dtype=MODEL_DTYPE, device=MODEL_DEVICE), None
    except ModelLoadError as e:
        print(f"app.py: no model loaded: {e}", file=sys.stderr, flush=True)
        return None, str(e)


model_directory, load_error = load_model()
translator = model_directory.translator if model_directory else None
if translator is not None:
    inspect_text = batched_inspect(translator, BATCH_SIZE, wrap=on_gpu)  # inspect, decoded in batches
    inspect_alone = on_gpu(lambda translator, text, beam, sampling: inspect(translator, text, beam, sampling=sampling))
    embedding_norms = on_gpu(lambda source: norms_of(translator, source))  # on the lent GPU on ZeroGPU
    head_details = on_gpu(lambda *args: head_details_of(translator, *args))
    attribute = on_gpu(lambda inspection, method: source_attribution(translator, inspection, method))


# --- Event handlers: each takes the session's Inspection (None before the first translation) -------------------


def decoding_settings(decoding, beam, temperature, top_k, seed):
    """(beam width, Sampling or None) of the decoding controls; a gr.Error that says why for values out of range."""
    try:
        if decoding == "sampling":
            return 1, Sampling(float(temperature), int(top_k), int(seed))
        beam = 1 if decoding == "greedy" else int(beam)
        if not 1 <= beam <= MAX_BEAM:
            raise ValueError(f"the beam width must be in 1..{MAX_BEAM}, got {beam}")
        return beam, None
    except (TypeError, ValueError) as e:
        raise gr.Error(f"Decoding settings: {e}") from e


def run_inspect(text, beam, sampling, heads=()):
    """`interpretability.inspect` of `text`; greedy translations of concurrent requests decoded together (`batched_inspect`),
    beam search (traced step by step) and sampling one by one; with `heads` switched off (`ablation.ablated`)."""
    if heads:
        return inspect_alone(ablated(translator, heads), text, beam, sampling)
    if beam == 1 and sampling is None:
        return inspect_text(text, 1)
    return inspect_alone(translator, text, beam, sampling)


def translate(text, decoding, beam, temperature, top_k, seed):
    """English -> Italian. Outputs: translation, status, token chips, and the Inspection the figures are drawn from."""
    if not text or not text.strip():
        return "", EMPTY_MESSAGE, "", None
    beam, sampling = decoding_settings(decoding, beam, temperature, top_k, seed)
    start = time.perf_counter()
    inspection = run_inspect(text, beam, sampling)
    seconds = time.perf_counter() - start
    outputs = views.output_tokens(inspection)
    status = views.translation_status(seconds, views.decoding_label(beam, sampling),
                                      input_report(inspection), len(outputs) - 1,
                                      translator.max_source_tokens)
    chips = views.token_chips(inspection.source_tokens, "English") + views.token_chips(outputs, "Italian")
    return inspection.translation, status, chips, inspection


def reset_step(inspection):
    """The step slider of a new translation: at step 1, one stop per decoder step."""
    steps = views.decoding_steps(inspection) if inspection is not None else 1
    return gr.Slider(value=1, maximum=max(steps, 2))  # a slider needs two ends; step_view clamps


def layer_count(kind):
    cfg = translator.model.cfg
    return cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers


def chosen_layer(kind, layer):
    """(0-based layer, the layer radio's choices for `kind`): encoder and decoder may differ in depth. The radio's
    value is never set here (the browser lowers it at once when the kind has fewer layers: `clamp_layer_js`), so an
    answer never undoes a click made while it was computed."""
    n = layer_count(kind)
    return min(int(layer), n) - 1, gr.Radio(choices=list(range(1, n + 1)))


def chosen_head(head):
    return head if head in ("mean", "all") else int(head) - 1


def attention_view(inspection, kind, layer, head, rows, style):
    """The attention tab for all its controls read at once (one event, always the latest): the layer radio, the
    view (heatmap or lines) and the overview with the shown layer and head outlined."""
    layer, radio = chosen_layer(kind, layer)
    if inspection is None:
        return radio, None, None
    head = chosen_head(head)
    return (radio, interactive.attention_plot(inspection, kind, layer, head, rows, style),
            interactive.attention_overview(inspection, kind, layer, head))


def attention_downloads(inspection, kind, layer, head):
    """The PNG (matplotlib) of the shown layer and head, and the raw weights of the kind (JSON); drawn after the
    view, so the view never waits on them. Disabled until there is a translation."""
    if inspection is None:
        return gr.DownloadButton(value=None, interactive=False), gr.DownloadButton(value=None, interactive=False)
    layer, _ = chosen_layer(kind, layer)
    head = chosen_head(head)
    png = figures.to_png(figures.attention_figure(inspection, kind, layer, head))
    name = f"attention-{kind}-layer{layer + 1}-{views.head_label(head).replace(' ', '-')}.png"
    data = views.attention_json(inspection, kind).encode("utf-8")
    return (gr.DownloadButton(value=downloads.file(png, name), interactive=True),
            gr.DownloadButton(value=downloads.file(data, f"attention-{kind}.json"), interactive=True))


def decoding_controls_for(decoding):
    """The beam width is set under beam search only, temperature, top-k and seed under sampling only."""
    beam, sampling = gr.Slider(interactive=decoding == "beam"), decoding == "sampling"
    return beam, gr.Slider(interactive=sampling), gr.Slider(interactive=sampling), gr.Number(interactive=sampling)


def step_view(inspection, step):
    """One decoding step: the tokens so far, the next-token candidates (at two temperatures when sampled), where the
    decoder looked, and the beam (under beam search)."""
    if inspection is None:
        return "", None, None, gr.HTML(visible=False)
    step = max(1, min(int(step), views.decoding_steps(inspection)))
    prefix, chosen = views.step_tokens(inspection, step)
    chips = views.token_chips(prefix + [chosen], f"step {step}", highlight=len(prefix))
    candidates = (experiments.tempered_plot if inspection.sampling else interactive.top_k_plot)(inspection, step)
    trace = inspection.beam_trace
    beam = gr.HTML(experiments.beam_html(trace, step), visible=True) if trace else gr.HTML(visible=False)
    return chips, candidates, interactive.step_attention_plot(inspection, step), beam


def attribution_view(inspection, method, step, panel_open, cached):
    """Gradient attribution beside cross-attention at this step, computed only while its panel is open, once per
    sentence and method (`cached`: (sentence tokens and method, Attribution)); step changes redraw from it."""
    if not panel_open or inspection is None:
        return gr.skip(), gr.skip()
    key = (tuple(inspection.source_tokens), tuple(inspection.target_tokens), method)
    if cached is None or cached[0] != key:
        cached = key, attribute(inspection, method)
    step = max(1, min(int(step), views.decoding_steps(inspection)))
    return experiments.attribution_plot(cached[1], inspection.source_tokens, step), cached


def diagnostics_view(inspection, kind, measure):
    if inspection is None:
        return None
    return experiments.diagnostics_plot(head_diagnostics(inspection)[kind], kind, measure)


def chosen_heads(names):
    """(kind, 0-based layer, 0-based head) of head names ("cross L2 H3"); a gr.Error that says the format or the
    model's heads otherwise."""
    try:
        return [experiments.parse_head_name(name, head_grid(translator.model.cfg)) for name in names]
    except ValueError as e:
        raise gr.Error(str(e)) from e


def switch_heads_off(text, decoding, beam, temperature, top_k, seed, *ticked):
    """The sentence translated as usual and with the ticked heads (one list per kind) switched off: the two side by
    side with the changed tokens marked, and the new run's Inspection for its step view."""
    if not text or not text.strip():
        return EMPTY_MESSAGE, None
    names = [name for group in ticked for name in group or []]
    beam, sampling = decoding_settings(decoding, beam, temperature, top_k, seed)
    normal = run_inspect(text, beam, sampling)
    off = run_inspect(text, beam, sampling, chosen_heads(names))
    return experiments.ablation_html(normal, off, names), off


def sample(text: str, temperature: float = 1.0, top_k: int = 0, seed: int = 0) -> str:
    """English -> Italian by sampling: each token drawn from the model's distribution at `temperature` among the
    `top_k` most probable (0: all); the same seed gives the same translation."""
    if not text or not text.strip():
        return ""
    return run_inspect(text, 1, decoding_settings("sampling", 1, temperature, top_k, seed)[1]).translation


def ablate(text: str, heads: list[str], beam: int = 1) -> str:
    """English -> Italian with the attention heads `heads` switched off (their output zeroed before W_O), each named
    "<kind> L<layer> H<head>", kind encoder, decoder or cross, e.g. ["cross L2 H3", "encoder L1 H1"]."""
    if not text or not text.strip():
        return ""
    return run_inspect(text, decoding_settings("beam", beam, 1, 0, 0)[0], None, chosen_heads(heads)).translation


def inside_head(inspection, kind, layer, head, query):
    """The "Inside one head" tab for all its controls at once: the layer and query-token radios (the query tokens
    of this kind; the value is set only when the chosen one does not exist, so a click made meanwhile stays), q, K
    and V, the bars from score to weight, the output, and the formula with this query's numbers."""
    layer, layer_radio = chosen_layer(kind, layer)
    if inspection is None:
        return layer_radio, gr.Radio(choices=[]), None, None, None, ""
    choices = head_view.query_choices(inspection, kind)
    if query is None or int(query) >= len(choices):  # none yet, a shorter sentence, or the other side's tokens
        query, query_radio = 0, gr.Radio(choices=choices, value=0)
    else:
        query, query_radio = int(query), gr.Radio(choices=choices)
    details = head_details(inspection, kind, layer, int(head) - 1, query)
    return (layer_radio, query_radio, head_view.vectors_plot(details), head_view.score_plot(details),
            head_view.output_plot(details), head_view.head_markdown(details, inspection))


def positions_tab(inspection, drawn):
    """The positional tab's figures and what they were drawn for (the sentence's tokens); nothing is redrawn
    when they are already drawn for these tokens."""
    tokens = tuple(inspection.source_tokens) if inspection is not None else ()
    if tokens == drawn:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    pe = positional_encoding(translator.model)
    if not tokens:
        return interactive.positional_table_plot(pe), None, None, tokens
    return (
        interactive.positional_table_plot(pe, len(tokens)),
        interactive.position_similarity_plot(pe, list(tokens)),
        interactive.embedding_norms_plot(list(tokens), *embedding_norms(list(tokens))),
        tokens,
    )


def curves(dims):
    return interactive.positional_curves_plot(positional_encoding(translator.model), sorted(dims))


def when_visible(tab_id, fn):
    """`fn`, run only if `tab_id` is the tab in view (first input: the active tab id); else nothing changes."""

    def run(active_tab, *args):
        return fn(*args) if active_tab == tab_id else gr.skip()

    return run


# --- Layout ------------------------------------------------------------------------------------------------------


def figure(label, buttons=("fullscreen",), **kwargs):
    """An image slot for a figure: its title is drawn in the figure, so no label badge covers it."""
    return gr.Image(label=label, show_label=False, format="png", buttons=list(buttons), **kwargs)


QUIET = dict(api_visibility="private", show_progress="hidden", trigger_mode="always_last")


def step_panel(name, inspection):
    """The step-by-step view of the translation in the State `inspection`: ◀ slider ▶, the tokens so far, where the
    decoder looked, the next-token candidates and the beam; wired to follow the State. Element ids start `name`."""
    with gr.Row():
        previous_step = gr.Button("◀ Previous", size="sm", scale=1)
        step = gr.Slider(1, 2, value=1, step=1, label="Step (one per generated token)", scale=6, elem_id=name)
        next_step = gr.Button("Next ▶", size="sm", scale=1)
    prefix = gr.HTML()
    attention = gr.Plot(show_label=False, elem_id=f"{name}-attention")  # full width: every token legible
    candidates = gr.Plot(show_label=False, elem_id=f"{name}-candidates")
    beam = gr.HTML(visible=False, elem_id=f"{name}-beam")
    inspection.change(reset_step, inspection, step, **QUIET)
    gr.on([step.change, inspection.change], step_view, [inspection, step], [prefix, candidates, attention, beam],
          **QUIET)
    for button, delta in [(previous_step, -1), (next_step, 1)]:  # moved in the browser; step.change draws
        button.click(None, step, step, js=views.move_step_js(name, delta), **QUIET)
    return step


def attribution_panel(inspection, step):
    """The "Attention is not explanation" panel under the step view, wired to follow the translation and the step
    while it is open (closed, it computes nothing)."""
    with gr.Accordion("Attention is not explanation: compare with a gradient attribution", open=False,
                      elem_id="attribution-panel") as panel:
        gr.Markdown(ATTRIBUTION_HELP)
        method = gr.Radio([(name, m) for m, name in experiments.METHOD_NAMES.items()], value=DEFAULT_METHOD,
                          label="Attribution", elem_id="attribution-method")
        figure_slot = gr.Plot(show_label=False, elem_id="attribution")
    panel_open = gr.State(False)
    cached = gr.State(None)  # (what it was computed for, Attribution): step changes reuse it
    draw = dict(fn=attribution_view, inputs=[inspection, method, step, panel_open, cached],
                outputs=[figure_slot, cached])
    panel.expand(lambda: True, None, panel_open, queue=False, api_visibility="private").then(
        **draw, api_visibility="private")
    panel.collapse(lambda: False, None, panel_open, queue=False, api_visibility="private")
    gr.on([inspection.change, method.input, step.change], **draw, **QUIET)


def heads_tab(inspection, text, decoding_controls):
    """The "Heads: switch off" tab, wired: the diagnostics of the translation in `inspection`, the
    heads to switch off and the translation without them (decoded as the decoding controls say), its steps, and how
    much each head matters (the model directory's head_importance.json)."""
    gr.Markdown(HEADS_HELP)
    with gr.Row():
        kind = gr.Radio([(spec.title, k) for k, spec in views.ATTENTION_KINDS.items()], value="cross",
                        label="Attention", scale=2, elem_id="diagnosed-kind")
        measure = gr.Radio([(label, m) for m, label in experiments.MEASURES.items()], value="entropy",
                           label="Colour by", scale=3, elem_id="measure")
    diagnostics = gr.Plot(show_label=False, elem_id="head-diagnostics")
    gr.Markdown(ABLATION_HELP)
    with gr.Row():
        heads_off = [gr.CheckboxGroup(experiments.head_choices(kind_id, *shape), elem_id=f"off-{kind_id}",
                                      label=views.ATTENTION_KINDS[kind_id].title)
                     for kind_id, shape in head_grid(translator.model.cfg).items()]
    button = gr.Button("Translate with these heads switched off", variant="primary", elem_id="ablate")
    comparison = gr.HTML(elem_id="ablation-result")
    switched_off = gr.State(None, time_to_live=3600)  # the Inspection of the run with the heads off
    step_panel("ablation-step", switched_off)
    importance = model_directory.head_importance
    if importance:
        gr.Plot(experiments.importance_plot(importance), show_label=False, elem_id="head-importance")
        gr.Markdown(f"Measured with `{importance['command']}`.")
    else:
        gr.Markdown(IMPORTANCE_MISSING.format(model_dir=MODEL_DIR))
    gr.on([kind.input, measure.input, inspection.change], diagnostics_view, [inspection, kind, measure], diagnostics,
          **QUIET)
    button.click(switch_heads_off, [text, *decoding_controls, *heads_off], [comparison, switched_off],
                 api_visibility="private", concurrency_limit=BATCH_SIZE, concurrency_id="translate")


def build_demo():
    with gr.Blocks(title="Transformer translator (English → Italian)", analytics_enabled=False,
                   delete_cache=(3600, 3600)) as demo:
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            # lines=1: Enter translates and Shift+Enter starts a new line (a taller box makes Enter a new line);
            # the box still grows to max_lines as the text wraps.
            text = gr.Textbox(label="English", value=EXAMPLES[0], lines=1, max_lines=8, autofocus=True,
                              placeholder="Type an English sentence and press Enter (Shift+Enter: new line)",
                              elem_id="english")
            italian = gr.Textbox(label="Italian", lines=1, max_lines=8, interactive=False, buttons=["copy"],
                                 elem_id="italian")
        with gr.Row(equal_height=False):
            decoding = gr.Radio([("Greedy", "greedy"), ("Beam search", "beam"), ("Sampling", "sampling")],
                                value="greedy", label="Decoding", elem_id="decoding", scale=2)
            beam = gr.Slider(2, MAX_BEAM, value=4, step=1, label="Beam width (for beam search)", interactive=False,
                             elem_id="beam", scale=2)
            button = gr.Button("Translate", variant="primary", size="lg", elem_id="translate", scale=1)
        with gr.Row(equal_height=False):
            temperature = gr.Slider(0.1, 3.0, value=1.0, step=0.1, label="Temperature (for sampling)",
                                    interactive=False, elem_id="temperature")
            top_k = gr.Slider(0, 50, value=0, step=1, label="Top-k (for sampling; 0: all tokens)", interactive=False,
                              elem_id="top-k-sampling")
            seed = gr.Number(0, precision=0, minimum=0, label="Seed (for sampling)", interactive=False,
                             elem_id="seed")
        status = gr.Markdown(label="Status", elem_id="status")
        chips = gr.HTML(label="Tokens")
        examples = gr.Examples(EXAMPLES, inputs=text, label="Examples (click one)", examples_per_page=len(EXAMPLES))

        decoding_controls = [decoding, beam, temperature, top_k, seed]
        inspection = gr.State(None, time_to_live=3600)
        active_tab = gr.State("attention")
        with gr.Tabs():
            with gr.Tab("Attention", id="attention") as tab_attention:
                with gr.Row(elem_id="attention-controls"):
                    kind = gr.Radio([(spec.title, k) for k, spec in views.ATTENTION_KINDS.items()],
                                    value="cross", label="Attention", scale=3, elem_id="kind")
                    layer = gr.Radio(list(range(1, layer_count("cross") + 1)), value=1, label="Layer", scale=1,
                                     elem_id="layer")
                    head = gr.Radio([("mean", "mean"), ("all (grid)", "all")]
                                    + [str(h) for h in range(1, translator.model.cfg.n_heads + 1)],
                                    value="mean", label="Head", scale=2, elem_id="head")
                    rows = gr.Radio([(label, value) for value, label in views.ROW_LABELS.items()], value="input",
                                    label="Italian rows", scale=2, elem_id="rows")
                    style = gr.Radio([("heatmap", "heatmap"), ("lines", "lines")], value="heatmap", label="View",
                                     scale=1, elem_id="style")
                heatmap = gr.Plot(show_label=False, elem_id="attention-heatmap")
                with gr.Row():
                    png_button = gr.DownloadButton("⬇️ Figure (PNG)", size="sm", interactive=False)
                    json_button = gr.DownloadButton("⬇️ Attention weights, this kind, all layers and heads (JSON)",
                                                    size="sm", interactive=False)
                gr.Markdown(ATTENTION_HELP)
                overview = gr.Plot(show_label=False, elem_id="attention-overview")
            with gr.Tab("Inside one head", id="head") as tab_head:
                gr.Markdown(HEAD_HELP)
                with gr.Row():
                    head_kind = gr.Radio([(spec.title, k) for k, spec in views.ATTENTION_KINDS.items()],
                                         value="cross", label="Attention", scale=3, elem_id="head-kind")
                    head_layer = gr.Radio(list(range(1, layer_count("cross") + 1)), value=1, label="Layer", scale=1,
                                          elem_id="head-layer")
                    head_number = gr.Radio([str(h) for h in range(1, translator.model.cfg.n_heads + 1)], value="1",
                                           label="Head", scale=1, elem_id="head-number")
                query = gr.Radio([], label="Query token (click one)", elem_id="query")
                with gr.Row():
                    with gr.Column(scale=3):
                        head_vectors = gr.Plot(show_label=False, elem_id="head-vectors")
                        head_scores = gr.Plot(show_label=False, elem_id="head-scores")
                        head_output = gr.Plot(show_label=False, elem_id="head-output")
                    head_formula = gr.Markdown(elem_id="head-formula")
            with gr.Tab("Decoding step by step", id="steps") as tab_steps:
                gr.Markdown(STEPS_HELP)
                with gr.Accordion("Sampling and beam search, explained", open=False):
                    gr.Markdown(SAMPLING_HELP + "\n\n" + BEAM_HELP)
                step = step_panel("step", inspection)
                attribution_panel(inspection, step)
            with gr.Tab("Heads: switch off", id="heads") as tab_heads:
                heads_tab(inspection, text, decoding_controls)
            with gr.Tab("Positional encoding", id="positions") as tab_positions:
                gr.Markdown(POSITION_HELP)
                pe_image = gr.Plot(show_label=False, elem_id="positional-table")
                d_model = translator.model.cfg.d_model
                default_dims = [0, d_model // 8, d_model // 4, d_model // 4 + 1]  # fast to slow waves
                dims = gr.Dropdown(list(range(d_model)), value=default_dims, multiselect=True,
                                   label="Dimensions to plot")
                curve_image = gr.Plot(curves(default_dims), show_label=False, elem_id="positional-curves")
                similarity = gr.Plot(show_label=False, elem_id="position-similarity")
                norms = gr.Plot(show_label=False, elem_id="embedding-norms")
                positions_drawn = gr.State(None)  # the tokens the positional figures show
            with gr.Tab("Model card", id="model") as tab_model:
                gr.Markdown(model_card_markdown(model_directory, SCORES_HELP))
                if model_directory.loss_curve:
                    figure("Training curve", value=Image.open(model_directory.loss_curve))
                gr.Markdown(about_markdown(model_directory, CREDITS))

        attention_controls = [kind, layer, head, rows, style]
        head_controls = [head_kind, head_layer, head_number, query]
        head_outputs = [head_layer, query, head_vectors, head_scores, head_output, head_formula]
        # tab id -> what draws it: server work (a model pass; the positional table is 100 kB), so drawn only for the
        # tab in view
        tab_views = {
            "head": (inside_head, [inspection, *head_controls], head_outputs),
            "positions": (positions_tab, [inspection, positions_drawn], [pe_image, similarity, norms, positions_drawn]),
        }
        # Up to BATCH_SIZE translations run at once, so that those arriving together are decoded together.
        translate_io = dict(fn=translate, inputs=[text, *decoding_controls],
                            outputs=[italian, status, chips, inspection], concurrency_limit=BATCH_SIZE,
                            concurrency_id="translate")

        def redraw_visible(event):
            for tab_id, (fn, inputs, outputs) in tab_views.items():
                event = event.then(when_visible(tab_id, fn), [active_tab, *inputs], outputs,
                                   api_visibility="private", show_progress="minimal")

        redraw_visible(gr.on([button.click, text.submit, demo.load], api_name="translate", **translate_io))
        redraw_visible(examples.load_input_event.then(api_visibility="private", **translate_io))

        for tab, tab_id in [(tab_attention, "attention"), (tab_head, "head"), (tab_steps, "steps"),
                            (tab_heads, "heads"), (tab_positions, "positions"), (tab_model, "model")]:
            selected = tab.select(lambda tab_id=tab_id: tab_id, None, active_tab, api_visibility="private")
            if tab_id in tab_views:
                fn, inputs, outputs = tab_views[tab_id]
                selected.then(fn, inputs, outputs, api_visibility="private")

        # The plotly views are a few kB of numbers the browser draws, so they follow every new translation (the
        # inspection's change), shown or not. Each view is one event over all its controls that always runs for
        # the latest values (a click during a run queues one more run, which reads the controls when it starts),
        # so what is shown matches the controls however fast they are clicked.
        gr.on([control.input for control in attention_controls] + [inspection.change], attention_view,
              [inspection, *attention_controls], [layer, heatmap, overview], **QUIET).then(
            attention_downloads, [inspection, kind, layer, head], [png_button, json_button], **QUIET)
        gr.on([control.input for control in head_controls], inside_head, [inspection, *head_controls], head_outputs,
              **QUIET)
        depths = {k: layer_count(k) for k in views.ATTENTION_KINDS}
        kind.input(None, [kind, layer], layer, js=views.clamp_layer_js(depths), **QUIET)
        decoding.input(decoding_controls_for, decoding, [beam, temperature, top_k, seed], queue=False,
                       api_visibility="private", show_progress="hidden")
        gr.api(sample, api_name="sample", concurrency_limit=BATCH_SIZE, concurrency_id="translate")
        gr.api(ablate, api_name="ablate", concurrency_limit=BATCH_SIZE, concurrency_id="translate")
        dims.input(curves, dims, curve_image, api_visibility="private", trigger_mode="always_last")
    return demo


def build_unavailable_demo():
    """The page shown when no model can be loaded: what went wrong and how to train one."""
    message = f"**No model loaded.** {load_error}"
    with gr.Blocks(title="Transformer translator (no model)", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        gr.Markdown(message + "\n\n" + TRAIN_HELP.format(model_dir=MODEL_DIR))
        text = gr.Textbox(label="English", lines=1, max_lines=8)  # Enter submits, as on the full page
        button = gr.Button("Translate", variant="primary")
        italian = gr.Textbox(label="Italian", interactive=False)
        status = gr.Markdown()
        gr.on([button.click, text.submit], lambda _: ("", message), text, [italian, status], api_name="translate")
    return demo


demo = build_demo() if translator is not None else build_unavailable_demo()
demo.queue(default_concurrency_limit=4, max_size=128)

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop on SIGTERM as on Ctrl+C: exit handlers run
    demo.launch(theme=gr.themes.Soft(), css=CSS, js=SCRIPT, footer_links=["api", "gradio"])
