"""The model as a Hugging Face Hub repository: the model card (README.md) every export writes, in the Hub's format,
and loading a model by its Hub id from the Hugging Face cache, offline (no network in the tests)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from helpers import hub_cache
from modeldir.card import main as model_card_main
from modeldir.files import (
    EACH_SENTENCE_ONCE,
    METRICS,
    MODEL_CARD,
    NOTES,
    Score,
    add_score,
    read_metrics,
    scores,
    write_metrics,
)

ROOT = Path(__file__).resolve().parents[1]
REPO_ID = "someone/tiny-en-it"


def front_matter(card_text):
    """The card's YAML metadata as a dict (the text between the opening and closing `---` lines)."""
    assert card_text.startswith("---\n")
    return yaml.safe_load(card_text.split("\n---\n", 1)[0].removeprefix("---\n"))


def test_the_export_writes_a_hub_model_card_of_the_recorded_scores(tiny_model_dir):
    text = (tiny_model_dir / MODEL_CARD).read_text(encoding="utf-8")
    meta = front_matter(text)
    assert meta["language"] == ["en", "it"] and meta["license"] == "cc-by-sa-4.0"
    assert meta["pipeline_tag"] == "translation" and meta["metrics"] == ["sacrebleu", "chrf"]
    (dev,) = scores(read_metrics(tiny_model_dir / METRICS))
    (result,) = meta["model-index"][0]["results"]
    assert result["task"]["type"] == "translation" and result["dataset"]["name"] == dev.data
    assert [(m["type"], m["value"]) for m in result["metrics"]] == [("sacrebleu", dev.bleu), ("chrf", dev.chrf)]
    card = ModelCard(text)  # huggingface_hub's own reading of the metadata, model-index included
    assert [r.metric_value for r in card.data.eval_results] == [dev.bleu, dev.chrf]
    for heading in (
        "## Architecture",
        "## Training",
        "## How it learned",
        "## Scores",
        "## How to use it",
        "## Limits",
        "## Licence and credits",
    ):
        assert heading in card.text
    assert "**CC BY-SA 4.0**" in card.text and meta["license"] == "cc-by-sa-4.0"
    assert "python -m training.train --config tiny" in card.text  # the command that trained it


def test_the_card_command_rewrites_it_with_new_scores_notes_and_the_repo_id(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    metrics = read_metrics(model_dir / METRICS)
    add_score(metrics, Score(data="test-tatoeba", decoding="beam 4", bleu=12.5, chrf=40.25, n=10000))
    add_score(metrics, Score(data="test-tatoeba", decoding="greedy", bleu=1.0, chrf=2.0, n=9, variant="capitals"))
    write_metrics(model_dir / METRICS, metrics)
    (model_dir / NOTES).write_text("### Good at\ncats and dogs.\n", encoding="utf-8")
    model_card_main([str(model_dir), "--repo-id", REPO_ID])
    text = (model_dir / MODEL_CARD).read_text(encoding="utf-8")
    meta = front_matter(text)
    assert meta["datasets"] == ["Helsinki-NLP/tatoeba_mt"] and meta["model-index"][0]["name"] == REPO_ID
    tatoeba = [r for r in meta["model-index"][0]["results"] if r["dataset"]["type"] == "Helsinki-NLP/tatoeba_mt"]
    assert tatoeba[0]["dataset"]["config"] == "eng-ita" and tatoeba[0]["dataset"]["split"] == "test"
    assert [m["value"] for m in tatoeba[0]["metrics"]] == [12.5, 40.25]  # the capitals variant stays in the body
    assert "| test-tatoeba | capitals | greedy |" in text
    assert "### Good at\ncats and dogs." in text and f'open_model("{REPO_ID}")' in text
    assert f"MODEL_DIR={REPO_ID} python app.py" in text


def test_a_score_measured_again_keeps_its_place_and_a_multi_reference_one_is_explained(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    metrics = read_metrics(model_dir / METRICS)
    for data in ("dev", "dev-news"):
        add_score(metrics, Score(data=data, decoding="greedy", bleu=10.0, chrf=30.0, n=20))
    add_score(metrics, Score(data="dev", decoding="greedy", bleu=11.0, chrf=31.0, n=20))
    assert [(s.data, s.bleu) for s in scores(metrics)][-2:] == [("dev", 11.0), ("dev-news", 10.0)]
    write_metrics(model_dir / METRICS, metrics)
    model_card_main([str(model_dir)])
    assert "each sentence once" not in (model_dir / MODEL_CARD).read_text(encoding="utf-8")
    add_score(metrics, Score(data="dev", decoding="greedy", bleu=30.0, chrf=50.0, n=8, subset=EACH_SENTENCE_ONCE))
    write_metrics(model_dir / METRICS, metrics)
    model_card_main([str(model_dir)])
    text = (model_dir / MODEL_CARD).read_text(encoding="utf-8")
    assert "| dev | as given, each sentence once | greedy | float32 | 30.0 | 50.0 | 8 |" in text
    assert '("each sentence once": each English sentence once, against all the lines translating it)' in text


def test_a_model_without_metrics_still_gets_a_valid_card(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / METRICS).unlink()
    model_card_main([str(model_dir)])
    meta = front_matter((model_dir / MODEL_CARD).read_text(encoding="utf-8"))
    assert "model-index" not in meta and meta["pipeline_tag"] == "translation"


LOAD_FROM_HUB = """
import json, sys
from modeldir.directory import open_model
from modeldir.loading import ModelLoadError
directory = open_model(sys.argv[1])
try:
    open_model("someone/not-cached")
    missing = ""
except ModelLoadError as e:
    missing = str(e)
print(json.dumps({"italian": directory.translator.translate("I see the cat."), "dir": str(directory.path),
                  "missing": missing}))
"""


def test_a_hub_repo_id_loads_from_the_cache_offline(tiny_model_dir, tmp_path):
    cache = hub_cache(tmp_path / "hub", tiny_model_dir, REPO_ID)
    env = {**os.environ, "HF_HOME": str(tmp_path / "home"), "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", LOAD_FROM_HUB, REPO_ID], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["italian"] == "io vedo il gatto."
    assert Path(result["dir"]).is_relative_to(cache / "models--someone--tiny-en-it" / "snapshots")
    assert result["missing"].startswith("someone/not-cached: no such model directory, nor a model repository")


@pytest.mark.parametrize("name", ["runs/nowhere/model", "nowhere"])
def test_a_missing_local_directory_is_not_looked_up_on_the_hub(name):
    from modeldir.directory import open_model
    from modeldir.loading import ModelLoadError

    with pytest.raises(ModelLoadError, match=f"^{name}: no such model directory$"):
        open_model(name)
