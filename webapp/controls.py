"""Controls whose value reaches the handler as the browser sent it, never refused by Gradio.

A gr.Radio refuses a value not among its choices, a gr.Slider one beyond its maximum, each with an error pop-up, and
both check against the choices or maximum the server last sent this session. Where those follow another control (a
layer radio the kind of attention, a query-token radio the sentence, a step slider the translation), a click made
while they change sends a value that was valid when clicked: a classroom saw "Value 6 is greater than maximum value 4"
after translating a shorter sentence at step 6, and "Value: 4 (type: …" after choosing a shallower kind at layer 4.
These controls pass any whole number on, and the handlers clamp it to what is valid now and set the control to what
they draw (`attention_kinds.chosen_layer`, `tabs.steps.clamped_step`): clamped, never rejected.

Each is a subclass marked `is_template` (Gradio's mark for a component the browser draws as its parent class: a
radio, a slider). Gradio writes a type stub (.pyi) beside the module of every component class it sees defined, for
its own components' editors; none is wanted here, so none is written while these are defined (`_no_stub_file`).
"""

from contextlib import contextmanager

import gradio as gr
import gradio.component_meta


@contextmanager
def _no_stub_file():
    write = getattr(gradio.component_meta, "create_or_modify_pyi", None)
    gradio.component_meta.create_or_modify_pyi = lambda *args, **kwargs: None
    try:
        yield
    finally:
        if write is not None:
            gradio.component_meta.create_or_modify_pyi = write


def whole_number(payload, default=None):
    """`payload` as an int, or `default` when it is none."""
    try:
        return int(payload)
    except (TypeError, ValueError):
        return default


with _no_stub_file():

    class NumberRadio(gr.Radio):
        """A radio of whole numbers (layers, token positions); its value reaches the handler as sent, or None when
        no choice is selected."""

        is_template = True

        def preprocess(self, payload):
            return whole_number(payload)

    class StepSlider(gr.Slider):
        """A slider of whole steps; its value reaches the handler as sent (1 when there is none)."""

        is_template = True

        def preprocess(self, payload):
            return whole_number(payload, 1)
