"""How the page's events run: the options of the events that redraw a view, and the tabs drawn only while in view
(those that cost the server a model pass or a large figure), each drawn when opened and after each translation while
it is open."""

from contextlib import contextmanager

import gradio as gr

# A view's events: not in the API, no spinner, and always run for the latest values (a click during a run queues one
# more run, which reads the controls when it starts), so what is shown matches the controls however fast they change.
QUIET = dict(api_visibility="private", show_progress="hidden", trigger_mode="always_last")


class TabsInView:
    """The page's tabs and which one is in view (a State; `first` at the start)."""

    def __init__(self, first):
        self.active = gr.State(first)
        self.draws = {}  # tab id -> (fn, inputs, outputs): what draws it

    @contextmanager
    def tab(self, label, tab_id):
        """A gr.Tab (elem_id "tab-<id>"; Gradio names its button "tab-<id>-button"). What is built inside may call the
        function yielded, `draw_in_view(fn, inputs, outputs)`, to be drawn only while this tab is in view."""
        with gr.Tab(label, id=tab_id, elem_id=f"tab-{tab_id}") as tab:
            yield lambda fn, inputs, outputs: self.draws.update({tab_id: (fn, inputs, outputs)})
        selected = tab.select(lambda: tab_id, None, self.active, api_visibility="private")
        if tab_id in self.draws:
            fn, inputs, outputs = self.draws[tab_id]
            selected.then(fn, inputs, outputs, api_visibility="private")

    def follow(self, event):
        """After `event` (a translation), draw the tab in view if it is one drawn only while in view."""
        for tab_id, (fn, inputs, outputs) in self.draws.items():
            event = event.then(when_visible(tab_id, fn), [self.active, *inputs], outputs, api_visibility="private",
                               show_progress="minimal")


def when_visible(tab_id, fn):
    """`fn`, run only if `tab_id` is the tab in view (first input: the active tab id); else nothing changes."""

    def run(active_tab, *args):
        return fn(*args) if active_tab == tab_id else gr.skip()

    return run
