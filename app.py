"""Web demo: translate English to Italian and look inside the Transformer that does it.

    pip install -r requirements.txt
    python app.py                          # http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT apply)
    MODEL_DIR=runs/cpu/model python app.py # another model directory
    MODEL_DTYPE=float16 python app.py      # the model's precision (default on a CPU: float32, or float16 where the CPU
                                           # has fast kernels with BATCH_SIZE=1; on a GPU bfloat16 or float16)
    MODEL_DIR=user/name python app.py      # a model repository on the Hugging Face Hub (fetched once, then cached)
    MODEL_DEVICE=cpu python app.py         # the CPU even where there is a CUDA GPU (default: the GPU, in bf16/fp16)
    BATCH_SIZE=1 python app.py             # decode each request alone (default: up to 16 concurrent ones together)
    MODEL_THREADS=2 python app.py          # torch threads per operation (default: 1, as a server under load wants)
    HEAVY_SLOTS=2 HEAVY_BUDGET_S=60 python app.py  # heavy work two at a time, a minute each (default: 1, 30 s)
    HEAVY_WAITING=8 python app.py          # heavy requests waiting for a turn; more are refused as busy (default: 4)
    MAX_SESSIONS=500 INSPECTIONS_MB=16 PAYLOADS_MB=4 MAX_BODY_MB=2 python app.py  # limits: docs/deployment.md

Wiring only: `modeldir.directory.open_model` loads the model, `webapp.served.ServedModel` holds it with the calls the
page makes, and the page is built from `webapp.translation` (the box above the tabs) and one module per tab
(`webapp/tabs/`). Each translation ships one payload of numbers to the page (fetched by a key: `webapp.translation`),
whose views draw every control's answer there (`webapp.views`); the experiments (heads switched off, attribution, one
head's arithmetic) ask the server, sending the sentence and decoding settings (no session state: `webapp.served` keeps
recent inspections). The page's events are private (`webapp.events`); the API is `webapp.api`'s endpoints
(/translate, /inspect, /sample, /ablate). Every setting is read and checked by `webapp.settings` (a wrong one: one
line, exit code 2).
"""

import ctypes
import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the app needs no network; do not phone home
# Gradio's queue rebuilds a summary of its last 10,000 events (a pandas DataFrame, grouped, percentiles) after every
# event: 15 ms of CPU per request once 10,000 have been served. Every 1,000 events, over the last 1,000, is plenty.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")
M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 64 * 1024  # glibc's mallopt option, and the size from which a block is mapped


def give_freed_memory_back():
    """glibc's malloc raises the size from which it maps a block on its own (up to 32 MB) each time it frees one, so
    the model's tensors soon come from its heaps, where what one of the server's many threads frees stays a hole the
    process keeps: 500 page sessions grew it by 585 MB, 400 with this fixed at 64 kB (as MALLOC_MMAP_THRESHOLD_=65536
    does) by 236 MB, Gradio's sessions and the bounded caches included. Set before anything is allocated; an explicit
    MALLOC_MMAP_THRESHOLD_ wins, and a C library without mallopt (not glibc) is left as it is."""
    libc = ctypes.CDLL(None)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ and hasattr(libc, "mallopt"):
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


give_freed_memory_back()

try:  # On a Hugging Face Space: imported before torch places the model, so that on ZeroGPU hardware the model goes
    import spaces  # to the GPU that `spaces.GPU` lends each call it wraps (elsewhere spaces.GPU changes nothing)

    on_gpu = spaces.GPU
except ImportError:  # not on a Space
    on_gpu = lambda fn: fn  # noqa: E731

import torch

from webapp.settings import MEGABYTE, SettingError, Settings

try:  # every environment variable read and checked here (webapp.settings), before Gradio is imported (3 s): one line
    SETTINGS = Settings.from_environment(default_model_dir=Path(__file__).parent / "assets" / "model")
except SettingError as e:  # and exit code 2 if one is wrong
    print(f"app.py: {e}", file=sys.stderr)
    sys.exit(2)

import gradio as gr  # after the environment it reads
from starlette.middleware import Middleware

from modeldir.directory import open_model
from modeldir.loading import ModelLoadError
from webapp import api, no_model, translation
from webapp.events import BodyLimit, PreparedAnswers, PublicRoutesOnly, check_inputs, compression, make_private
from webapp.page_script import PAGE_SCRIPT
from webapp.served import ServedModel
from webapp.style import CSS
from webapp.tabs import attention, heads, how_it_learned, inside_head, model_card, model_map, positions, steps
from webapp.texts import INTRO

MODEL_DIR = SETTINGS.model_dir  # a directory, or a Hub id, user/name
# Torch threads per operation. The server runs a batch of light requests, a heavy one and Gradio's event loop at once:
# with two threads per operation on two cores they wait on each other (a float16 decode on 2 threads beside one other
# busy process: 2,150 ms of CPU per sentence, against 14 ms on one thread). docs/benchmarks.md, Serving under load.
torch.set_num_threads(SETTINGS.threads)


def load_model():
    """(model directory, None), or (None, why not): the page explains, and so does the terminal that started the app."""
    try:
        return open_model(MODEL_DIR, dtype=SETTINGS.dtype, device=SETTINGS.device), None
    except ModelLoadError as e:
        print(f"app.py: no model loaded: {e}", file=sys.stderr, flush=True)
        return None, str(e)


model_directory, load_error = load_model()
# Heavy work (beam search, sampling, long inputs, heads switched off, attribution, /inspect): `heavy_slots` at once,
# each within `heavy_budget` seconds of its arrival, `heavy_waiting` more in line and the rest refused at once as busy,
# so that it never holds up short greedy translations (webapp.served).
served = ServedModel(model_directory, MODEL_DIR, SETTINGS.batch_size, wrap=on_gpu, heavy_slots=SETTINGS.heavy_slots,
                     heavy_budget=SETTINGS.heavy_budget, heavy_waiting=SETTINGS.heavy_waiting,
                     inspections_bytes=SETTINGS.inspections_mb * MEGABYTE,
                     payloads_bytes=SETTINGS.payloads_mb * MEGABYTE) if model_directory else None


def tab(label, tab_id):
    """A tab whose button the page's scripts find by its id: Gradio names it "tab-<id>-button" (views.js, openTab)."""
    return gr.Tab(label, id=tab_id, elem_id=f"tab-{tab_id}")


def build_demo():
    """The page: the translation box, whose translate event ships the translation's payload to the tabs' views
    (`webapp.views`), then the tabs, drawn in the browser; all its events private; then the API's endpoints
    (`webapp.api`)."""
    with gr.Blocks(title="Transformer translator (English → Italian)", analytics_enabled=False,
                   delete_cache=(3600, 3600)) as demo:
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
        make_private(demo, reserved=api.ENDPOINTS)
        check_inputs(demo)
        api.admit_page_events(demo, served)
        api.register(served)
    return demo


demo = build_demo() if served else no_model.build_page(load_error, MODEL_DIR)
demo.queue(default_concurrency_limit=4, max_size=128)


def launch(**options):
    """Serve the page. Threads: enough for every concurrency group at its limit (webapp.api.register), so that one
    kind of work waiting never takes another's. Limits (docs/deployment.md): request bodies (`BodyLimit`), uploaded
    files (Gradio's max_file_size: the app takes none), sessions kept (Gradio's state_session_capacity); answers
    compressed (`compression`), the page's prepared data sent with no session built (`PreparedAnswers`); only the
    API's routes called by name (`PublicRoutesOnly`); heavy API calls and page events refused at the door when the heavy
    lane is full (`api.HeavyAdmission`)."""
    middleware = [Middleware(BodyLimit, max_bytes=SETTINGS.body_mb * MEGABYTE), compression(),
                  Middleware(PreparedAnswers, blocks=demo), Middleware(PublicRoutesOnly, blocks=demo)]
    if served:
        middleware.append(Middleware(api.HeavyAdmission, served=served, blocks=demo))
    demo.launch(theme=gr.themes.Soft(), css=CSS, js=PAGE_SCRIPT, footer_links=["api", "gradio"],
                max_threads=12 * SETTINGS.batch_size + 64, max_file_size=SETTINGS.upload_mb * MEGABYTE,
                state_session_capacity=SETTINGS.sessions, app_kwargs={"middleware": middleware}, **options)


def shut_down(signum, frame):
    """SIGTERM (a Space restarting, a service manager): heavy work stops at its next model step and no more is taken
    (`ServedModel.close`), then the server stops as on Ctrl+C, with no thread left inside the model as Python exits
    (one there made the process abort)."""
    if served:
        served.close()
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, shut_down)
    launch()
