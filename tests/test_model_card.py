"""The model card of the app's Model card tab: architecture, training runs and scores read from metrics.json (a
partial or odd one included), the precision the model runs in, and the model's own notes."""

from pathlib import Path

import pytest

from modeldir.card import about_markdown, model_card_markdown
from modeldir.directory import ModelDirectory, open_model
from modeldir.files import EACH_SENTENCE_ONCE, read_metrics, scores
from webapp import texts

ROOT = Path(__file__).resolve().parents[1]


def served(translator, metrics=None, notes=""):
    """The tiny translator as a served model directory with the given metrics.json and notes.md."""
    return ModelDirectory(translator, Path("."), metrics=metrics or {}, notes=notes)


@pytest.fixture(scope="module")
def translator_metrics(tiny_model_dir):
    return open_model(tiny_model_dir).metrics


def test_model_card(translator, translator_metrics):
    card = model_card_markdown(served(translator, translator_metrics))
    assert f"{translator.model.num_parameters():,}" in card
    assert "| dev (during training) | as given | greedy | float32 |" in card  # recorded by the training script
    scored = served(
        translator,
        {
            "scores": [
                {"data": "toy", "decoding": "beam 4", "precision": "float16", "bleu": 12.5, "chrf": 40.0, "n": 7},
                {
                    "data": "toy",
                    "decoding": "greedy",
                    "variant": "capitals",
                    "subset": "11-20 words",
                    "bleu": 1,
                    "chrf": 2,
                    "n": 3,
                },
                {"data": "broken", "decoding": "greedy"},  # lacks scores: left out, no crash
            ]
        },
    )
    card = model_card_markdown(scored)
    assert "| toy | as given | beam 4 | float16 | 12.5 | 40.0 | 7 |" in card
    assert "| toy | capitals, 11-20 words | greedy | float32 | 1 | 2 | 3 |" in card and "broken" not in card
    assert f"| runs in | {str(translator.model.src_embed.embedding.weight.dtype).removeprefix('torch.')} |" in card


def test_the_apps_help_explains_the_multi_reference_rows_by_their_name():
    """The shipped model's card has "each sentence once" rows; the help under the app's table says what they are."""
    assert f"*{EACH_SENTENCE_ONCE}*" in texts.SCORES_HELP
    shipped = scores(read_metrics(ROOT / "assets" / "model" / "metrics.json"))
    assert any(record.subset == EACH_SENTENCE_ONCE for record in shipped)


PARTIAL_METRICS = {  # metrics.json -> training runs the card shows
    "empty": ({}, 0),
    "empty training": ({"training": {}}, 0),
    "wrong types": ({"training": None, "history": "oops"}, 0),
    "minutes only": ({"training": {"minutes": 3.5}}, 1),
    "odd values": ({"training": {"steps": "many", "epochs": None, "data": "train.tsv"}}, 1),
    "weights do not fit": ({"training": {"data": {"train": ["a.tsv", "b.tsv"], "weights": [1]}}}, 1),
    "odd history": ({"training": {"data": {"train": "old.tsv"}}, "history": [{}, None, {"minutes": True}]}, 2),
    "history only": ({"history": [{"steps": 10}]}, 1),
    "score without a count": ({"scores": [{"data": "toy", "decoding": "greedy", "bleu": 1, "chrf": 2, "n": "?"}]}, 0),
}


@pytest.mark.parametrize("case", PARTIAL_METRICS)
def test_model_card_survives_a_partial_metrics_json(translator, case):
    metrics, n_runs = PARTIAL_METRICS[case]
    card = model_card_markdown(served(translator, metrics))
    assert card.startswith("### Architecture")
    assert ("### Training" in card) == (n_runs > 0)
    assert sum(line.startswith(f"| {i} |") for i in range(1, n_runs + 1) for line in card.splitlines()) == n_runs


def test_model_card_shows_both_forms_of_training_data_and_the_time_over_history(translator):
    old = {
        "minutes": 116.9,
        "steps": 4494,
        "epochs": 4.45,
        "hardware": "2 CPU threads",
        "precision": "bf16",
        "data": {"train": "../shared/data/en-it/train.tsv", "train_pairs": 318616, "dev": "dev.tsv"},
    }
    new = {
        "minutes": 60,
        "steps": 2000,
        "epochs": 2,
        "hardware": "1 GPU",
        "precision": "fp16",
        "data": {
            "train": ["../shared/data/en-it/train.tsv", "../shared/data/en-it/train-extra.tsv"],
            "weights": [1, 2],
            "pairs_per_epoch": 341000,
            "retype_share": 0.2,
            "join_share": 0.1,
            "long_weight": 3.0,
            "long_words": 11,
            "dev": "dev.tsv",
        },
    }
    card = model_card_markdown(served(translator, {"training": new, "history": [old]}))
    assert (
        "| 1 | `train.tsv` (318,616 sentence pairs) | 4,494 / 4.45 | 116.9 minutes on 2 CPU threads in bf16 |" in card
    )
    assert (
        "| 2 | `train.tsv` ×1, `train-extra.tsv` ×2 (341,000 pairs per epoch, 20% re-typed as people type, "
        "10% joined into longer pairs, pairs of 11+ English words ×3) | 2,000 / 2 | "
        "60.0 minutes on 1 GPU in fp16 |"
    ) in card
    assert "In all: 176.9 minutes of training in 2 runs." in card


def test_notes_are_shown_for_the_model_that_has_them(translator):
    assert about_markdown(served(translator), texts.CREDITS) == texts.CREDITS  # the tiny model has no notes.md
    noted = served(translator, notes="### Good at\ncats.\n")
    assert about_markdown(noted, texts.CREDITS) == "### Good at\ncats.\n\n" + texts.CREDITS
    shipped_notes = (ROOT / "assets" / "model" / "notes.md").read_text(encoding="utf-8")
    assert "Tatoeba" in shipped_notes and "CC-BY 2.0 FR" in shipped_notes and "OLDI Seed" in shipped_notes
    assert "Tatoeba" not in texts.CREDITS  # data credits belong to the model that was trained on the data


def test_the_card_says_what_the_training_histories_show(translator, translator_metrics, tiny_model_dir):
    history = open_model(tiny_model_dir).history
    own = ModelDirectory(translator, Path("."), metrics=translator_metrics, history=history)
    card = model_card_markdown(own)
    assert "### How it learned" in card
    assert f"this model's own training history from step 0: at each of {len(history['snapshots'])} evaluations" in card
    later = {**history, "snapshots": [{**s, "step": s["step"] + 500} for s in history["snapshots"]]}
    both = model_card_markdown(ModelDirectory(translator, Path("."), history=later, reference_history=history))
    assert "from step 500 (its earlier training recorded none)" in both
    assert "not this model's own history" in both
    assert "How it learned" not in model_card_markdown(served(translator))
