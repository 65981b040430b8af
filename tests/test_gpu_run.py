"""`python -m training.gpu_run`, the round-5 mix prepared here, trained on a lent GPU and brought back: every step run
on this machine's CPU (`--dry-run`, the tiny config for seconds) on files written here, as a GPU machine would run
it, down to the model directory joined from its parts and opened."""

import gzip
import json
import random

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


@pytest.fixture
def distilled(tmp_path):
    """A teacher's translations of the informal Tatoeba file, small."""
    path = tmp_path / "distilled.tsv"
    write_tsv(path, toy_pairs()[:30])
    return path


def test_the_bundle_holds_the_mix_and_europarl_without_you_or_long_sentences(data, distilled, tmp_path):
    size = gpu_run.prepare(data, distilled, tmp_path / "bundle")
    assert size == sum(p.stat().st_size for p in (tmp_path / "bundle").iterdir())
    assert set(gpu_run.BUNDLE) | set(gpu_run.SCORED) == {p.name for p in (tmp_path / "bundle").iterdir()}
    with gzip.open(tmp_path / "bundle" / "europarl.tsv.gz", "rt", encoding="utf-8") as f:
        assert f.read() == "The Commission has adopted the proposal.\tLa Commissione ha adottato la proposta.\n"
    with gzip.open(tmp_path / "bundle" / "distilled-tu.tsv.gz", "rt", encoding="utf-8") as f:
        assert len(f.readlines()) == 30


def test_europarl_is_sampled_the_same_way_each_time(tmp_path, monkeypatch):
    pairs = [(f"The Council met on day {i}.", f"Il Consiglio si è riunito il giorno {i}.") for i in range(50)]
    write_tsv(tmp_path / "europarl.tsv", pairs)
    monkeypatch.setattr(gpu_run, "EUROPARL_SAMPLE", 20)
    sample = gpu_run.europarl_pairs(tmp_path / "europarl.tsv")
    assert len(sample) == 20 == len(set(sample)) and set(sample) < set(pairs)
    assert sample == gpu_run.europarl_pairs(tmp_path / "europarl.tsv")


def test_every_mix_names_only_files_of_the_bundle():
    assert all(set(run.mix) <= set(gpu_run.BUNDLE) for run in gpu_run.RUNS)
    assert [run.name for run in gpu_run.RUNS if run.start[0] == "--tokenizer"] == ["wide"]


def test_candidates_are_windows_of_six_then_all_then_each_checkpoint(tmp_path):
    weights = [tmp_path / f"step-{100 * i}.safetensors" for i in range(1, 26)]  # 25 kept: every other end
    found = gpu_run.candidates(weights)
    names = list(found)
    assert names[:3] == ["steps-2000-2500", "steps-1800-2300", "steps-1600-2100"]
    assert found["steps-2000-2500"] == weights[19:25] and found["steps-100-500"] == weights[:5]
    assert names[13] == "steps-100-2500" and found["steps-100-2500"] == weights
    assert names[12] == "step-100"  # the window that ends at the first checkpoint is that checkpoint alone
    assert names[14:17] == ["step-2500", "step-2300", "step-2100"] and len(names) == 13 + 1 + 12
    assert len({tuple(paths) for paths in found.values()}) == len(found)  # no checkpoints scored twice


def test_a_model_beats_the_shipped_one_only_on_all_three_sets():
    def scores(dev, news, demo):
        return {"dev.tsv": {"bleu": dev}, "dev-news.tsv": {"bleu": news}, "demo": {"right": demo}}

    shipped = scores(57.0, 17.69, 175)
    assert gpu_run.beats(scores(57.1, 17.7, 176), shipped)
    assert not gpu_run.beats(scores(57.1, 17.7, 175), shipped)
    assert not gpu_run.beats(scores(57.0, 18.0, 180), shipped)
    assert not gpu_run.beats(scores(58.0, 17.6, 180), shipped)


def test_a_dry_run_trains_scores_packs_and_joins_models_that_open(data, distilled, tmp_path):
    bundle, work = tmp_path / "bundle", tmp_path / "work"
    gpu_run.prepare(data, distilled, bundle)
    gpu_run.train(bundle, tmp_path / "out", minutes=0.05, call_minutes=9, work=work, dry_run=True)
    report = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    assert set(report["runs"]) == {run.name for run in gpu_run.RUNS}
    assert set(report["shipped"]) == {"dev.tsv", "dev-news.tsv", "demo", "heldout"}
    assert report["shipped"]["dev.tsv"]["n"] == 60 and report["shipped"]["demo"]["of"] == gpu_run.DRY_RUN_SENTENCES
    for run in report["runs"].values():
        assert run["chosen"] in run["scored"] and set(run["scored"]) <= set(run["dev"])
        winners = [s for s in run["scored"].values() if gpu_run.beats(s, report["shipped"])]
        best = max(s["dev.tsv"]["bleu"] for s in winners or run["scored"].values())
        assert run["scored"][run["chosen"]]["dev.tsv"]["bleu"] == best
    parts = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name != "scores.json")
    assert all((tmp_path / "out" / name).stat().st_size <= gpu_run.PART_BYTES for name in parts)
    models = gpu_run.join(tmp_path / "out", tmp_path / "back")
    assert [m.parent.name for m in models][0] in ("continued", "cross") and models[1].parent.name == "wide"
    for model in models:
        assert (model / "gpu_train.log").is_file()
        assert open_model(model).translator.translate("I see the cat.") is not None
    late = gpu_run.choose(work / "cross", bundle, report["shipped"], deadline=0, limit=2)[0]
    assert len(late["dev"]) == 1  # past the deadline, one candidate is still scored


def test_joining_nothing_says_what_it_wanted(tmp_path):
    with pytest.raises(ValueError, match="no NAME.tar.00"):
        gpu_run.join(tmp_path, tmp_path / "back")


def test_small_parts_are_joined_in_order(tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    weights = random.Random(0).randbytes(20_000)  # incompressible, as float16 weights nearly are
    (model / "weights.bin").write_bytes(weights)
    monkeypatch.setattr(gpu_run, "PART_BYTES", 1000)
    gpu_run.pack(model, tmp_path / "out", "run")
    assert len(list((tmp_path / "out").iterdir())) > 10
    [back] = gpu_run.join(tmp_path / "out", tmp_path / "back")
    assert back == tmp_path / "back" / "run" / "model"
    assert (back / "weights.bin").read_bytes() == weights
