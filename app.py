"""Web demo: translate English to Italian and look inside the Transformer that does it.

    MODEL_DIR=assets/model python app.py   # http://127.0.0.1:7860; settings: docs/app.md, limits: docs/deployment.md

Wiring only: `modeldir.directory.open_model` loads the model, `webapp.served.ServedModel` holds it with the calls the
page makes, the page is built from `webapp.translation` (the box above the tabs) and one module per tab
(`webapp/tabs/`), the API is `webapp.api`'s endpoints (/translate, /inspect, /sample, /ablate), and `deploy` makes it
all safe to serve as a public Space (settings, limits, private events, heavy work admitted at the door, SIGTERM).
"""

import sys
from pathlib import Path

from deploy import process

on_gpu = process.prepare()  # before torch and Gradio are imported, and before anything is allocated

import torch

from deploy.settings import settings_or_exit

SETTINGS = settings_or_exit(default_model_dir=Path(__file__).parent / "assets" / "model")  # before Gradio's slow import
torch.set_num_threads(SETTINGS.threads)  # 1 by default: a batch, a heavy request and Gradio's loop share the cores

import gradio as gr  # after the environment it reads

from deploy.harden import harden
from modeldir.directory import open_model
from modeldir.loading import ModelLoadError
from webapp import api, no_model, translation
from webapp.page_script import PAGE_SCRIPT
from webapp.served import ServedModel
from webapp.style import CSS
from webapp.tabs import attention, heads, how_it_learned, inside_head, model_card, model_map, positions, steps
from webapp.texts import INTRO

try:
    served = ServedModel(
        open_model(SETTINGS.model_dir, dtype=SETTINGS.dtype, device=SETTINGS.device),
        SETTINGS.model_dir,
        wrap=on_gpu,
        **SETTINGS.serving(),
    )
except ModelLoadError as load_error:  # the page explains, and so does the terminal that started the app
    print(f"app.py: no model loaded: {load_error}", file=sys.stderr, flush=True)
    served, why_not = None, str(load_error)


def tab(label, tab_id):
    """A tab whose button the page's scripts find by its id: Gradio names it "tab-<id>-button" (views.js, openTab)."""
    return gr.Tab(label, id=tab_id, elem_id=f"tab-{tab_id}")


def build_demo():
    """(the page: the translation box, then the tabs, hardened; then the API's endpoints, its launch arguments)."""
    with gr.Blocks(
        title="Transformer translator (English → Italian)", analytics_enabled=False, delete_cache=(3600, 3600)
    ) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        box = translation.build(served, demo)
        with gr.Tabs(overflow_behavior="wrap"):  # every tab in one click on a projector or a phone
            with tab("Model map", "map"):
                model_map.build(served)
            with tab("Attention", "attention"):
                attention.build(served)
            with tab("Inside one head", "head"):
                inside_head.build(served, box.inputs)
            with tab("Decoding step by step", "steps"):
                steps.build(served, box.inputs)
            with tab("Heads: switch off", "heads"):
                heads.build(served, box.text, box.decoding_controls)
            with tab("Positional encoding", "positions"):
                positions.build(served)
            with tab("How it learned", "learned"):
                how_it_learned.build(served)
            with tab("Model card", "model"):
                model_card.build(served)
        launch_arguments = harden(demo, served, SETTINGS, public=api.ENDPOINTS)
        api.admit_page_events(demo, served)
        api.register(served)
    return demo, launch_arguments


if served:
    demo, launch_arguments = build_demo()
else:
    demo = no_model.build_page(why_not, SETTINGS.model_dir)
    launch_arguments = harden(demo, None, SETTINGS)
demo.queue(default_concurrency_limit=4, max_size=128, api_open=False)  # no event run outside the queue


def launch(**options):
    demo.launch(
        theme=gr.themes.Soft(), css=CSS, js=PAGE_SCRIPT, footer_links=["api", "gradio"], **launch_arguments, **options
    )


if __name__ == "__main__":
    process.stop_on_sigterm(served)
    launch()
