"""`python -m training.gpu_run`, the round-5 mix prepared here, trained on a lent GPU and brought back: every step run
on this machine's CPU (`--dry-run`, the tiny config for seconds) on files written here, as a GPU machine would run
it, down to the model directory joined from its parts and opened."""

import gzip
import json

import pytest

from helpers import toy_pairs, write_tsv
from modeldir.directory import open_model
from training import gpu_run


@pytest.fixture
def data(tmp_path):
    """The files `training.prepare_data --europarl --docs` writes, small."""
    folder = tmp_path / "en-it"
    folder.mkdir()
    pairs = toy_pairs()
    for name in ("train.tsv", "train-extra.tsv", "train-docs.tsv", "dev.tsv", "dev-news.tsv"):
        write_tsv(folder / name, pairs[:60])
    europarl = [
        ("Thank you, Mr President.", "Grazie, signor Presidente."),
        ("The Commission has adopted the proposal.", "La Commissione ha adottato la proposta."),
        (" ".join(["word"] * 30), " ".join(["parola"] * 30)),
    ]
    with gzip.open(folder / "train-europarl.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{en}\t{it}\n" for en, it in europarl)
    return folder


def test_the_bundle_holds_the_mix_and_europarl_without_you_or_long_sentences(data, tmp_path):
    size = gpu_run.prepare(data, tmp_path / "bundle")
    assert size == sum(p.stat().st_size for p in (tmp_path / "bundle").iterdir())
    assert {name for name, _ in gpu_run.MIX} | set(gpu_run.SCORED) == {p.name for p in (tmp_path / "bundle").iterdir()}
    with gzip.open(tmp_path / "bundle" / "europarl-25-no-you.tsv.gz", "rt", encoding="utf-8") as f:
        assert f.read() == "The Commission has adopted the proposal.\tLa Commissione ha adottato la proposta.\n"


def test_a_dry_run_trains_scores_packs_and_joins_a_model_that_opens(data, tmp_path):
    gpu_run.prepare(data, tmp_path / "bundle")
    gpu_run.train(tmp_path / "bundle", tmp_path / "out", minutes=0.03, work=tmp_path / "work", dry_run=True)
    parts = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert parts and all(name.startswith("model.tar.") for name in parts)
    assert all((tmp_path / "out" / name).stat().st_size <= gpu_run.PART_BYTES for name in parts)
    model = gpu_run.join(tmp_path / "out", tmp_path / "back")
    scores = json.loads((model / "gpu_scores.json").read_text(encoding="utf-8"))
    assert set(scores) == {"dev.tsv", "dev-news.tsv", "demo", "heldout"}
    assert scores["dev.tsv"]["n"] == 60 and "bleu" in scores["dev-news.tsv"]
    assert open_model(model).translator.translate("I see the cat.") is not None


def test_joining_nothing_says_what_it_wanted(tmp_path):
    with pytest.raises(ValueError, match="no model.tar.00"):
        gpu_run.join(tmp_path, tmp_path / "back")


def test_small_parts_are_joined_in_order(tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(bytes(range(256)) * 40)
    monkeypatch.setattr(gpu_run, "PART_BYTES", 1000)
    gpu_run.pack(model, tmp_path / "out")
    assert len(list((tmp_path / "out").iterdir())) > 10
    assert (gpu_run.join(tmp_path / "out", tmp_path / "back") / "weights.bin").read_bytes() == bytes(range(256)) * 40
