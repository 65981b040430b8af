"""The page shown when no model can be loaded: what went wrong and how to train one, with a Translate that answers
the same (so the API says it too)."""

from pathlib import Path

import gradio as gr

from .texts import INTRO, TRAIN_HELP

ROOT = Path(__file__).resolve().parents[1]


def shown_path(model_dir):
    """How the page names a model directory: an absolute path relative to the app's folder, or by its name alone, so
    that a visitor of a public Space learns nothing of the server's paths; a relative path or a Hub id as given."""
    path = Path(model_dir)
    if not path.is_absolute():
        return str(model_dir)
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def build_page(error, model_dir):
    """The page for a model directory `model_dir` that could not be loaded, `error` saying why (the terminal that
    started the app has the full paths)."""
    shown = shown_path(model_dir)
    message = f"**No model loaded.** {error.replace(str(model_dir), shown)}"
    with gr.Blocks(title="Transformer translator (no model)", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        gr.Markdown(message + "\n\n" + TRAIN_HELP.format(model_dir=shown))
        text = gr.Textbox(label="English", lines=1, max_lines=8)  # Enter submits, as on the full page
        button = gr.Button("Translate", variant="primary")
        italian = gr.Textbox(label="Italian", interactive=False)
        status = gr.Markdown()
        gr.on([button.click, text.submit], lambda _: ("", message), text, [italian, status], api_name="translate")
    return demo
