"""Web demo: translate English to Italian and look inside the Transformer that does it.

    pip install -r requirements.txt
    python app.py                          # http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT apply)
    MODEL_DIR=runs/cpu/model python app.py # another model directory
    MODEL_DTYPE=float32 python app.py      # run the model in float32 (default: float16 where the CPU has fast kernels)
    MODEL_DIR=user/name python app.py      # a model repository on the Hugging Face Hub (fetched once, then cached)
    MODEL_DEVICE=cpu python app.py         # the CPU even where there is a CUDA GPU (default: the GPU, in bf16/fp16)
    BATCH_SIZE=1 python app.py             # decode each request alone (default: up to 16 concurrent ones together)

Wiring only: `serving.model_dir.open_model` loads the model, `webapp.served.ServedModel` holds it with the calls the
page makes, and the page is built from `webapp.translation` (the box above the tabs) and one module per tab
(`webapp/tabs/`), each drawing its views from the translation's `Inspection` kept in the session state.
"""

import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the app needs no network; do not phone home

try:  # On a Hugging Face Space: imported before torch places the model, so that on ZeroGPU hardware the model goes
    import spaces  # to the GPU that `spaces.GPU` lends each call it wraps (elsewhere spaces.GPU changes nothing)

    on_gpu = spaces.GPU
except ImportError:  # not on a Space
    on_gpu = lambda fn: fn  # noqa: E731

import gradio as gr  # noqa: E402 (after the environment it reads)

from serving.device import fast_dtype, pick_device
from serving.model_dir import open_model
from transformer import ModelLoadError
from webapp import no_model, translation
from webapp.downloads import Downloads
from webapp.events import TabsInView
from webapp.page_script import page_script
from webapp.served import ServedModel
from webapp.style import CSS
from webapp.tabs import attention, heads, how_it_learned, inside_head, model_card, positions, steps
from webapp.texts import INTRO

MODEL_DIR = Path(os.environ.get("MODEL_DIR", Path(__file__).parent / "assets" / "model"))  # or a Hub id, user/name
MODEL_DEVICE = pick_device(os.environ.get("MODEL_DEVICE"))  # a CUDA GPU when there is one
# On a CPU, one sentence at a time, a decoder step waits on reading the weights: float16 halves that (README,
# Benchmarks); on a GPU, bfloat16 or float16 (serving.device).
MODEL_DTYPE = os.environ.get("MODEL_DTYPE") or fast_dtype(MODEL_DEVICE)
# Concurrent translations decoded together, at most this many at once (1: each alone). README, Benchmarks.
BATCH_SIZE = int(os.environ.get("BATCH_SIZE", 16))

downloads = Downloads()  # removed at exit, on SIGTERM too (see the end of this file)


def load_model():
    """(model directory, None), or (None, why not): the page explains, and so does the terminal that started the app."""
    try:
        return open_model(MODEL_DIR, dtype=MODEL_DTYPE, device=MODEL_DEVICE), None
    except ModelLoadError as e:
        print(f"app.py: no model loaded: {e}", file=sys.stderr, flush=True)
        return None, str(e)


model_directory, load_error = load_model()
served = ServedModel(model_directory, MODEL_DIR, BATCH_SIZE, wrap=on_gpu) if model_directory else None


def build_demo():
    """The page: the translation box, then the tabs (the inside-one-head and positional tabs drawn only while in view,
    the others after every translation), and the API endpoints /sample and /ablate beside the box's /translate."""
    with gr.Blocks(title="Transformer translator (English → Italian)", analytics_enabled=False,
                   delete_cache=(3600, 3600)) as demo:
        gr.Markdown(INTRO)
        box = translation.build(served, demo)
        tabs = TabsInView("attention")
        with gr.Tabs():
            with tabs.tab("Attention", "attention"):
                attention.build(served, box.inspection, downloads)
            with tabs.tab("Inside one head", "head") as draw_in_view:
                inside_head.build(served, box.inspection, draw_in_view)
            with tabs.tab("Decoding step by step", "steps"):
                steps.build(served, box.inspection)
            with tabs.tab("Heads: switch off", "heads"):
                heads.build(served, box.inspection, box.text, box.decoding_controls)
            with tabs.tab("Positional encoding", "positions") as draw_in_view:
                positions.build(served, box.inspection, draw_in_view)
            with tabs.tab("How it learned", "learned"):
                how_it_learned.build(served)
            with tabs.tab("Model card", "model"):
                model_card.build(served)
        for event in box.translated:
            tabs.follow(event)
        gr.api(served.bind(translation.sample), api_name="sample", **served.queue)
        gr.api(served.bind(heads.ablate), api_name="ablate", **served.queue)
    return demo


demo = build_demo() if served else no_model.build_page(load_error, MODEL_DIR)
demo.queue(default_concurrency_limit=4, max_size=128)

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop on SIGTERM as on Ctrl+C: exit handlers run
    demo.launch(theme=gr.themes.Soft(), css=CSS, js=page_script(attention.SCRIPT, heads.SCRIPT),
                footer_links=["api", "gradio"])
