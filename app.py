"""Web demo: translate English to Italian and look inside the Transformer that does it.

    pip install -r requirements.txt
    python app.py                          # http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT apply)
    MODEL_DIR=runs/cpu/model python app.py # another model directory
    MODEL_DTYPE=float32 python app.py      # run the model in float32 (default: float16 where the CPU has fast kernels)

Wiring only: `transformer.Translator` runs the model, `webapp` draws and writes the page. Each translation is one
`Translator.inspect` call, kept in the session state; every figure is drawn from it, and only the figures of the
tab in view are drawn (a tab draws its own when opened).
"""

import os
import signal
import sys
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the app needs no network; do not phone home

import gradio as gr  # noqa: E402 (after the environment it reads)
from PIL import Image

from transformer import ModelLoadError, Translator
from transformer.model_dir import LOSS_CURVE
from transformer.translator import fast_cpu_dtype
from webapp import figures, views
from webapp.downloads import Downloads
from webapp.model_card import about_markdown, model_card_markdown
from webapp.style import CSS
from webapp.texts import ATTENTION_HELP, EMPTY_MESSAGE, INTRO, POSITION_HELP, STEPS_HELP, TRAIN_HELP

MODEL_DIR = Path(os.environ.get("MODEL_DIR", Path(__file__).parent / "assets" / "model"))
# One sentence at a time, a CPU decoder step waits on reading the weights: float16 halves that (README, Benchmarks).
MODEL_DTYPE = os.environ.get("MODEL_DTYPE") or fast_cpu_dtype()

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


def load_translator():
    """(translator, None), or (None, why not): the page explains, and so does the terminal that started the app."""
    try:
        return Translator.load(MODEL_DIR, dtype=MODEL_DTYPE), None
    except ModelLoadError as e:
        print(f"app.py: no model loaded: {e}", file=sys.stderr, flush=True)
        return None, str(e)


translator, load_error = load_translator()


# --- Event handlers: each takes the session's Inspection (None before the first translation) -------------------


def translate(text, decoding, beam):
    """English -> Italian. Outputs: translation, status, token chips, and the Inspection the figures are drawn from."""
    if not text or not text.strip():
        return "", EMPTY_MESSAGE, "", None
    beam = 1 if decoding == "greedy" else int(beam)
    start = time.perf_counter()
    inspection = translator.inspect(text, beam=beam)
    seconds = time.perf_counter() - start
    outputs = views.output_tokens(inspection)
    status = (f"Translated in {seconds:.2f} s · {'greedy' if beam == 1 else f'beam search ({beam} beams)'} · "
              f"{len(inspection.source_tokens)} English tokens → {len(outputs)} Italian tokens")
    if inspection.source_truncated:
        status += (f"\n\n**Note: your text is longer than the model reads ({translator.max_source_tokens} tokens): "
                   "only the beginning was translated.**")
    chips = views.token_chips(inspection.source_tokens, "English") + views.token_chips(outputs, "Italian")
    return inspection.translation, status, chips, inspection


def reset_step(inspection):
    """The step slider of a new translation: at step 1, one stop per decoder step."""
    steps = views.decoding_steps(inspection) if inspection is not None else 1
    return gr.Slider(value=1, maximum=max(steps, 2))  # a slider needs two ends; step_view clamps


def layer_count(kind):
    cfg = translator.model.cfg
    return cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers


def layer_choices(kind, layer):
    """Encoder and decoder may have different depths."""
    n = layer_count(kind)
    return gr.Radio(choices=list(range(1, n + 1)), value=min(int(layer), n))


def attention_heatmap(inspection, kind, layer, head):
    if inspection is None:
        return None, gr.DownloadButton(value=None)
    layer = min(int(layer), layer_count(kind)) - 1
    head = head if head in ("mean", "all") else int(head) - 1
    png = figures.to_png(figures.attention_figure(inspection, kind, layer, head))
    name = f"attention-{kind}-layer{layer + 1}-{views.head_label(head).replace(' ', '-')}.png"
    path = downloads.file(png, name)
    return path, gr.DownloadButton(value=path)


def attention_kind(inspection, kind):
    """The figure and file that depend on the kind only: the layers × heads overview and the raw weights."""
    if inspection is None:
        return None, gr.DownloadButton(value=None)
    overview = figures.to_image(figures.attention_overview(inspection, kind))
    data = views.attention_json(inspection, kind).encode("utf-8")
    return overview, gr.DownloadButton(value=downloads.file(data, f"attention-{kind}.json"))


def attention_tab(inspection, kind, layer, head):
    return (*attention_heatmap(inspection, kind, layer, head), *attention_kind(inspection, kind))


def step_view(inspection, step):
    if inspection is None:
        return "", None, None
    step = max(1, min(int(step), views.decoding_steps(inspection)))
    prefix, chosen = views.step_tokens(inspection, step)
    chips = views.token_chips(prefix + [chosen], f"step {step}", highlight=len(prefix))
    return (chips, figures.to_image(figures.top_k_figure(inspection, step)),
            figures.to_image(figures.step_cross_attention_figure(inspection, step)))


def move_step(inspection, step, delta):
    last = views.decoding_steps(inspection) if inspection is not None else 1
    return max(1, min(int(step) + delta, last))


def positions_tab(inspection):
    pe = translator.positional_encoding()
    if inspection is None:
        return figures.to_image(figures.positional_encoding_figure(pe)), None, None
    tokens = inspection.source_tokens
    return (
        figures.to_image(figures.positional_encoding_figure(pe, len(tokens))),
        figures.to_image(figures.position_similarity_figure(pe, tokens)),
        figures.to_image(figures.embedding_norms_figure(tokens, *translator.embedding_norms(tokens))),
    )


def curves(dims):
    return figures.to_image(figures.positional_curves_figure(translator.positional_encoding(), sorted(dims)))


def when_visible(tab_id, fn):
    """`fn`, run only if `tab_id` is the tab in view (first input: the active tab id); else nothing changes."""

    def run(active_tab, *args):
        return fn(*args) if active_tab == tab_id else gr.skip()

    return run


# --- Layout ------------------------------------------------------------------------------------------------------


def figure(label, buttons=("fullscreen",), **kwargs):
    """An image slot for a figure: its title is drawn in the figure, so no label badge covers it."""
    return gr.Image(label=label, show_label=False, format="png", buttons=list(buttons), **kwargs)


def build_demo():
    with gr.Blocks(title="Transformer translator (English → Italian)", analytics_enabled=False,
                   delete_cache=(3600, 3600)) as demo:
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            text = gr.Textbox(label="English", value=EXAMPLES[0], lines=3, max_lines=8, autofocus=True,
                              placeholder="Type an English sentence and press Enter", elem_id="english")
            italian = gr.Textbox(label="Italian", lines=3, interactive=False, buttons=["copy"], elem_id="italian")
        with gr.Row(equal_height=False):
            decoding = gr.Radio([("Greedy", "greedy"), ("Beam search", "beam")], value="greedy", label="Decoding")
            beam = gr.Slider(2, 8, value=4, step=1, label="Beam width (for beam search)")
            button = gr.Button("Translate", variant="primary", size="lg", elem_id="translate")
        status = gr.Markdown(label="Status", elem_id="status")
        chips = gr.HTML(label="Tokens")
        examples = gr.Examples(EXAMPLES, inputs=text, label="Examples (click one)", examples_per_page=len(EXAMPLES))

        inspection = gr.State(None, time_to_live=3600)
        active_tab = gr.State("attention")
        with gr.Tabs():
            with gr.Tab("Attention", id="attention") as tab_attention:
                gr.Markdown(ATTENTION_HELP)
                with gr.Row():
                    kind = gr.Radio([(spec.title, k) for k, spec in views.ATTENTION_KINDS.items()],
                                    value="cross", label="Attention", scale=3)
                    layer = gr.Radio(list(range(1, layer_count("cross") + 1)), value=1, label="Layer", scale=1)
                    head = gr.Radio([("mean", "mean"), ("all (grid)", "all")]
                                    + [str(h) for h in range(1, translator.model.cfg.n_heads + 1)],
                                    value="mean", label="Head", scale=2)
                heatmap = figure("Attention heatmap", type="filepath", buttons=["download", "fullscreen"],
                                 elem_id="attention-heatmap")
                with gr.Row():
                    png_button = gr.DownloadButton("⬇️ Figure (PNG)", size="sm")
                    json_button = gr.DownloadButton("⬇️ Attention weights, this kind, all layers and heads (JSON)",
                                                    size="sm")
                overview = figure("Overview: every layer × head")
            with gr.Tab("Decoding step by step", id="steps") as tab_steps:
                gr.Markdown(STEPS_HELP)
                with gr.Row():
                    previous_step = gr.Button("◀ Previous", size="sm", scale=1)
                    step = gr.Slider(1, 2, value=1, step=1, label="Step (one per generated token)", scale=6)
                    next_step = gr.Button("Next ▶", size="sm", scale=1)
                prefix = gr.HTML()
                with gr.Row():
                    top_k = figure("Next-token probabilities")
                    step_attention = figure("Cross-attention at this step")
            with gr.Tab("Positional encoding", id="positions") as tab_positions:
                gr.Markdown(POSITION_HELP)
                pe_image = figure("The positional encoding table")
                d_model = translator.model.cfg.d_model
                default_dims = [0, d_model // 8, d_model // 4, d_model // 4 + 1]  # fast to slow waves
                dims = gr.Dropdown(list(range(d_model)), value=default_dims, multiselect=True,
                                   label="Dimensions to plot")
                curve_image = figure("PE along the positions", value=curves(default_dims))
                similarity = figure("Position similarity")
                norms = figure("Embedding vs positional encoding size")
            with gr.Tab("Model card", id="model") as tab_model:
                gr.Markdown(model_card_markdown(translator))
                curve_file = MODEL_DIR / LOSS_CURVE
                if curve_file.is_file():
                    figure("Training curve", value=Image.open(curve_file))
                gr.Markdown(about_markdown(translator))

        attention_inputs = [inspection, kind, layer, head]
        attention_outputs = [heatmap, png_button, overview, json_button]
        step_outputs = [prefix, top_k, step_attention]
        tab_views = {  # tab id -> what draws it
            "attention": (attention_tab, attention_inputs, attention_outputs),
            "steps": (step_view, [inspection, step], step_outputs),
            "positions": (positions_tab, [inspection], [pe_image, similarity, norms]),
        }
        translate_io = dict(fn=translate, inputs=[text, decoding, beam],
                            outputs=[italian, status, chips, inspection])

        def redraw_visible(event):
            event = event.then(reset_step, inspection, step, api_visibility="private", show_progress="hidden")
            for tab_id, (fn, inputs, outputs) in tab_views.items():
                event = event.then(when_visible(tab_id, fn), [active_tab, *inputs], outputs,
                                   api_visibility="private", show_progress="minimal")

        redraw_visible(gr.on([button.click, text.submit, demo.load], api_name="translate", **translate_io))
        redraw_visible(examples.load_input_event.then(api_visibility="private", **translate_io))

        for tab, tab_id in [(tab_attention, "attention"), (tab_steps, "steps"), (tab_positions, "positions"),
                            (tab_model, "model")]:
            selected = tab.select(lambda tab_id=tab_id: tab_id, None, active_tab, api_visibility="private")
            if tab_id in tab_views:
                fn, inputs, outputs = tab_views[tab_id]
                selected.then(fn, inputs, outputs, api_visibility="private")

        kind.input(layer_choices, [kind, layer], layer, api_visibility="private").then(
            attention_tab, attention_inputs, attention_outputs, api_visibility="private")
        gr.on([layer.input, head.input], attention_heatmap, attention_inputs, [heatmap, png_button],
              api_visibility="private", trigger_mode="always_last")
        step.input(step_view, [inspection, step], step_outputs, api_visibility="private",
                   trigger_mode="always_last", show_progress="hidden")
        for btn, delta in [(previous_step, -1), (next_step, 1)]:
            btn.click(lambda insp, s, delta=delta: move_step(insp, s, delta), [inspection, step], step,
                      api_visibility="private").then(step_view, [inspection, step], step_outputs,
                                                     api_visibility="private", show_progress="hidden")
        dims.input(curves, dims, curve_image, api_visibility="private", trigger_mode="always_last")
    return demo


def build_unavailable_demo():
    """The page shown when no model can be loaded: what went wrong and how to train one."""
    message = f"**No model loaded.** {load_error}"
    with gr.Blocks(title="Transformer translator (no model)", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        gr.Markdown(message + "\n\n" + TRAIN_HELP.format(model_dir=MODEL_DIR))
        text = gr.Textbox(label="English", lines=2)
        button = gr.Button("Translate", variant="primary")
        italian = gr.Textbox(label="Italian", interactive=False)
        status = gr.Markdown()
        gr.on([button.click, text.submit], lambda _: ("", message), text, [italian, status], api_name="translate")
    return demo


demo = build_demo() if translator is not None else build_unavailable_demo()
demo.queue(default_concurrency_limit=4, max_size=128)

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop on SIGTERM as on Ctrl+C: exit handlers run
    demo.launch(theme=gr.themes.Soft(), css=CSS, footer_links=["api", "gradio"])
