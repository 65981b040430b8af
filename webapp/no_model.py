"""The page shown when no model can be loaded: what went wrong and how to train one, with a Translate that answers
the same (so the API says it too)."""

import gradio as gr

from .texts import INTRO, TRAIN_HELP


def build_page(error, model_dir):
    """The page for a model directory `model_dir` that could not be loaded, `error` saying why."""
    message = f"**No model loaded.** {error}"
    with gr.Blocks(title="Transformer translator (no model)", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        gr.Markdown(message + "\n\n" + TRAIN_HELP.format(model_dir=model_dir))
        text = gr.Textbox(label="English", lines=1, max_lines=8)  # Enter submits, as on the full page
        button = gr.Button("Translate", variant="primary")
        italian = gr.Textbox(label="Italian", interactive=False)
        status = gr.Markdown()
        gr.on([button.click, text.submit], lambda _: ("", message), text, [italian, status], api_name="translate")
    return demo
