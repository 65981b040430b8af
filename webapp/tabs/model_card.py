"""The "Model card" tab: what the model is (architecture, training runs, scores, the precision it runs in), its
training curve, and what it is good and bad at, read from its model directory, so a learner knows what they look
inside."""

import html

import gradio as gr
from PIL import Image

from modeldir.card import about_markdown, model_card_markdown

from ..texts import CREDITS, SCORES_HELP


def left_out_markdown(problems):
    """What of the model directory's optional files the page left out, and why (`ModelDirectory.problems`); "" when
    nothing was."""
    if not problems:
        return ""
    lines = "\n".join(f"- {html.escape(problem)}" for problem in problems)
    return f"**⚠️ Left out of this page (an optional file of the model directory could not be read):**\n\n{lines}"


def build(served):
    """What was left out (when something was), the card, the loss curve (when the model directory has one) and the
    model's notes with the credits."""
    if served.directory.problems:
        gr.Markdown(left_out_markdown(served.directory.problems), elem_id="left-out")
    gr.Markdown(model_card_markdown(served.directory, SCORES_HELP), elem_classes=["model-card"])
    if served.directory.loss_curve:  # its title is drawn in the figure, so no label badge covers it
        gr.Image(
            Image.open(served.directory.loss_curve),
            label="Training curve",
            show_label=False,
            format="png",
            buttons=["fullscreen"],
        )
    gr.Markdown(about_markdown(served.directory, CREDITS), elem_classes=["model-card"])
