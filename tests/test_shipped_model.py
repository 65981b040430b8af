"""The model the app ships with (assets/model) translates simple sentences: checked by the words that carry the
meaning, not by BLEU (the scores come from `python -m training.evaluate`, recorded in metrics.json)."""

from pathlib import Path

import pytest

from transformer import Translator
from transformer.model_dir import scores

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"

# English sentence -> words (lower case) that any right Italian translation contains.
EXPECTED = {
    "I love you.": ["ti amo"],
    "Where is the station?": ["dov'è", "stazione"],
    "The cat is sleeping.": ["gatto", "dorm"],
    "I have two brothers.": ["due fratelli"],
    "Thank you very much.": ["grazie"],
    "The book is on the table.": ["libro", "tavolo"],
    "I don't understand.": ["non capisco"],
    "We are going to the beach tomorrow.": ["spiaggia", "domani"],
}


@pytest.fixture(scope="module")
def shipped():
    return Translator.load(MODEL_DIR)


def test_shipped_model_fits_the_size_bar_and_has_its_metrics():
    size_mb = sum(f.stat().st_size for f in MODEL_DIR.iterdir()) / 1e6
    assert size_mb <= 30
    assert (MODEL_DIR / "metrics.json").is_file() and (MODEL_DIR / "loss_curve.png").is_file()


@pytest.mark.parametrize("beam", [1, 4])
def test_shipped_model_translates_simple_sentences(shipped, beam):
    translations = shipped.translate(list(EXPECTED), beam=beam)
    for (english, words), italian in zip(EXPECTED.items(), translations):
        for word in words:
            assert word in italian.lower(), f"{english!r} -> {italian!r}: expected {word!r}"


def test_shipped_metrics_record_scores_and_commands(shipped):
    metrics = shipped.metrics
    assert metrics["parameters"] == shipped.model.num_parameters()
    recorded = {(r.data, r.decoding, r.precision, r.variant, r.subset): r for r in scores(metrics)}
    for decoding in ("greedy", "beam 4"):
        test = recorded["test-tatoeba", decoding, "float32", "as given", "all"]
        assert test.n == 10_000 and 0 < test.bleu < 100 and test.command.startswith("python -m training.evaluate")
    assert metrics["training"]["commands"][0].startswith("python -m training.train")
