"""The "Model card" tab: what the model is (architecture, training runs, scores, the precision it runs in), its
training curve, and what it is good and bad at, read from its model directory, so a learner knows what they look
inside."""

import gradio as gr
from PIL import Image

from modeldir.card import about_markdown, model_card_markdown

from ..texts import CREDITS, SCORES_HELP


def build(served):
    """The card, the loss curve (when the model directory has one) and the model's notes with the credits."""
    gr.Markdown(model_card_markdown(served.directory, SCORES_HELP), elem_classes=["model-card"])
    if served.directory.loss_curve:  # its title is drawn in the figure, so no label badge covers it
        gr.Image(Image.open(served.directory.loss_curve), label="Training curve", show_label=False, format="png",
                 buttons=["fullscreen"])
    gr.Markdown(about_markdown(served.directory, CREDITS), elem_classes=["model-card"])
