"""The "How it learned" tab: the training history of the model, played in the browser — for a few probe sentences, the
translation at each recorded step (tokens new since the step before marked), the cross-attention of a chosen layer
and head (or their mean), and where that step sits on the train-loss and dev-BLEU curves. The history is sent once,
when the tab opens (`history`: JSON encoded and compressed once, at start); every control after that is answered in
the page (`how_it_learned.js`, its markup too; `how_it_learned.css`)."""

from pathlib import Path

import gradio as gr

from ..views import browser_view, prepared_json

LOOK_FOR = """**What to look for.** At step 0 the model writes noise and its cross-attention is a blur. Within a few
hundred steps the map finds the diagonal — each Italian token looks at the English token it translates — and later
bends where Italian reorders (*the red car* → *la macchina rossa*: *rossa* looks back at *red*). Many heads rest
on `</s>` when no source word helps. Play it, or drag the slider; pick another sentence, layer or head."""


def run_view(history, label, note):
    """What the page needs of one history: its probes, snapshots (without their timing) and curves."""
    sent = ("step", "minutes", "train_loss", "dev_bleu", "probes")
    snapshots = [{key: value for key, value in s.items() if key in sent} for s in history["snapshots"]]
    return {
        "label": label,
        "note": note,
        "probes": history["probes"],
        "snapshots": snapshots,
        "curve": history.get("curve", []),
    }


def learning_runs(directory):
    """The histories the tab offers, the one that starts at step 0 first: the model's own when it does; else a
    from-scratch run of the same architecture and data (said plainly: not this model's own history), then the
    model's own part."""
    own, reference = directory.history, directory.reference_history
    if own and own["snapshots"][0]["step"] == 0:
        return [
            run_view(own, "this model's training", "This model's own training, recorded from step 0 by training.train.")
        ]
    runs = []
    if reference:
        minutes = reference["snapshots"][-1]["minutes"]
        command = reference["parts"][0]["command"] if reference.get("parts") else "python -m training.train"
        runs.append(
            run_view(
                reference,
                f"a from-scratch run ({minutes:.0f} minutes)",
                f"Not this model's own history: a model of the same architecture, trained from scratch "
                f"for {minutes:.0f} minutes by training.train ({command}). This model continues earlier "
                f"training parts that recorded no snapshots.",
            )
        )
    if own:
        first = own["snapshots"][0]["step"]
        runs.append(
            run_view(
                own,
                f"this model, from step {first:,}",
                f"This model's own training from step {first:,} on: its earlier training parts "
                f"recorded no snapshots, so its history starts there.",
            )
        )
    return runs


def build(served):
    """The tab's text and its view; the view asks the server for the history once, when it is first drawn."""
    gr.Markdown(LOOK_FOR)
    history = prepared_json("history", learning_runs(served.directory))
    return browser_view(Path(__file__).with_suffix(".js"), "how-it-learned", server_functions=[history])
