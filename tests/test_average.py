"""Checkpoint averaging: the trainer keeps the weights of its last evaluations (`keep_weights`), and
`training.recipes.average` writes a model whose weights are their mean."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from helpers import train_args
from modeldir.card import averaged_summary
from modeldir.directory import open_model
from modeldir.seen import read_word_counts
from training.recipes.average import average_weights, last_step, record_up_to
from training.recipes.average import main as average_main
from training.train import main as train_main


@pytest.fixture(scope="module")
def kept_run(toy_corpus, tmp_path_factory):
    train, dev = toy_corpus
    out = tmp_path_factory.mktemp("kept") / "run"
    train_main(train_args(train, dev, out, "--max-steps", "60", "--set", "eval_every=20", "keep_weights=2"))
    return out


def test_the_trainer_keeps_the_weights_of_its_last_evaluations(kept_run):
    assert sorted(p.name for p in (kept_run / "weights").iterdir()) == ["step-40.safetensors", "step-60.safetensors"]
    checkpoint = torch.load(kept_run / "checkpoint.pt", weights_only=False)["model"]
    last = load_file(str(kept_run / "weights" / "step-60.safetensors"))
    for name, tensor in last.items():
        assert torch.equal(tensor, checkpoint[name]), name


def test_the_averaged_model_holds_the_mean_and_translates(kept_run, tmp_path):
    files = sorted((kept_run / "weights").glob("step-*.safetensors"))
    average_main(
        [
            "--model",
            str(kept_run / "model"),
            "--weights",
            *map(str, files),
            "--out",
            str(tmp_path / "avg"),
            "--export-dtype",
            "float32",
        ]
    )
    averaged = open_model(tmp_path / "avg", dtype="float32", device="cpu")
    a, b = (load_file(str(f)) for f in files)
    weights = averaged.translator.model.state_dict()
    for name in a:
        torch.testing.assert_close(weights[name], (a[name] + b[name]) / 2, rtol=0, atol=1e-6)
    assert averaged.metrics["training"]["averaged"]["weights"] == [f.name for f in files]
    assert "scores" not in averaged.metrics
    # The words the run saw go with it, so a run continued from the mean counts them too (app: "rarely seen").
    assert read_word_counts(tmp_path / "avg").english == read_word_counts(kept_run / "model").english
    assert isinstance(averaged.translator.translate("I see the cat."), str)
    card = (tmp_path / "avg" / "README.md").read_text(encoding="utf-8")  # the card says which weights it holds
    assert ", then 2 checkpoints averaged (steps 40 to 60) |" in card
    assert "python -m training.recipes.average --model" in card.split("```bash")[1]  # after the training commands


def test_a_run_continuing_an_averaged_model_keeps_the_averaging_in_its_history(kept_run, toy_corpus, tmp_path):
    files = sorted((kept_run / "weights").glob("step-*.safetensors"))
    average_main(["--model", str(kept_run / "model"), "--weights", *map(str, files), "--out", str(tmp_path / "avg")])
    train, dev = toy_corpus
    train_main(
        [
            "--config",
            "tiny",
            "--init-from",
            str(tmp_path / "avg"),
            "--train",
            str(train),
            "--dev",
            str(dev),
            "--out",
            str(tmp_path / "next"),
            "--no-progress",
            "--precision",
            "float32",
            "--max-steps",
            "20",
        ]
    )
    continued = open_model(tmp_path / "next" / "model", dtype="float32", device="cpu").metrics
    assert continued["history"][-1]["averaged"]["weights"] == [f.name for f in files]
    assert "averaged" not in continued["training"]  # the new run's own weights are not averaged
    commands = (tmp_path / "next" / "model" / "README.md").read_text(encoding="utf-8").split("```bash")[1]
    average_at = commands.index("python -m training.recipes.average")
    assert commands.index("--out " + str(kept_run)) < average_at < commands.index("--init-from")


def test_weights_of_another_model_are_refused(kept_run, tmp_path):
    first = sorted((kept_run / "weights").glob("step-*.safetensors"))[0]
    other = tmp_path / "other.safetensors"
    save_file({"something.else": torch.zeros(3)}, str(other))
    with pytest.raises(ValueError, match="not a checkpoint of the same model"):
        average_weights([first, other])


def test_the_averaged_model_is_recorded_up_to_its_last_averaged_checkpoint(toy_corpus, tmp_path):
    """The run's best checkpoint (the exported model) can come before the checkpoints averaged: the averaged model's
    training record and history then go on to the last of them, from the run's log."""
    train, dev = toy_corpus
    out = tmp_path / "run"
    train_main(train_args(train, dev, out, "--max-steps", "60", "--set", "eval_every=20", "keep_weights=2"))
    log = {row.split(",")[0]: row.split(",") for row in (out / "metrics.csv").read_text().splitlines()[1:]}
    metrics = json.loads((out / "model" / "metrics.json").read_text())
    best = {
        **metrics["training"],
        "steps": 20,
        "minutes": float(log["20"][2]),
        "epochs": 0.5,
        "target_tokens_seen": int(log["20"][3]),
    }  # as if the run's best checkpoint had been step 20
    (out / "model" / "metrics.json").write_text(json.dumps({**metrics, "training": best}))
    files = sorted((out / "weights").glob("step-*.safetensors"))
    average_main(["--model", str(out / "model"), "--weights", *map(str, files), "--out", str(tmp_path / "avg")])
    training = open_model(tmp_path / "avg", dtype="float32", device="cpu").metrics["training"]
    assert training["steps"] == 60
    assert training["minutes"] == round(float(log["60"][2]), 1)
    assert training["target_tokens_seen"] == int(log["60"][3]) > best["target_tokens_seen"]
    assert training["epochs"] == round(0.5 * int(log["60"][3]) / int(log["20"][3]), 2)
    history = json.loads((tmp_path / "avg" / "training_snapshots.json").read_text(encoding="utf-8"))
    assert history["snapshots"][-1]["step"] == 60 and history["curve"][-1][0] == 60
    assert "| 60 / " in (tmp_path / "avg" / "README.md").read_text(encoding="utf-8")


def test_averaging_checkpoints_without_the_run_log_keeps_the_exported_record(kept_run, tmp_path):
    model = tmp_path / "elsewhere" / "model"
    shutil.copytree(kept_run / "model", model)  # no metrics.csv beside it
    files = sorted((kept_run / "weights").glob("step-*.safetensors"))
    average_main(["--model", str(model), "--weights", *map(str, files), "--out", str(tmp_path / "avg")])
    exported = open_model(model, dtype="float32", device="cpu").metrics["training"]
    training = open_model(tmp_path / "avg", dtype="float32", device="cpu").metrics["training"]
    assert {k: training[k] for k in ("steps", "minutes")} == {k: exported[k] for k in ("steps", "minutes")}


def test_a_malformed_or_silent_run_log_leaves_the_record_as_it_was(tmp_path):
    best = {"steps": 20, "minutes": 1.0, "epochs": 0.5, "target_tokens_seen": 1000}
    (tmp_path / "metrics.csv").write_text("step,epoch,minutes,target_tokens\n20,0,1.00,1000\n60,0,oops,3000\n")
    assert record_up_to(best, tmp_path, 60) is best  # unreadable minutes
    assert record_up_to(best, tmp_path, 80) is best  # no row for the step
    assert record_up_to(best, tmp_path, 20) is best  # not later than the best checkpoint
    (tmp_path / "metrics.csv").write_text("step,epoch,minutes,target_tokens\n20,0,1.00,1000\n60,0,3.04,3000\n")
    assert record_up_to(best, tmp_path, 60) == {"steps": 60, "minutes": 3.0, "epochs": 1.5, "target_tokens_seen": 3000}


def test_only_the_runs_own_kept_weights_give_the_step_to_record_up_to(tmp_path):
    run = tmp_path / "run"
    own = [run / "weights" / "step-40.safetensors", run / "weights" / "step-60.safetensors"]
    assert last_step(own, run) == 60
    assert last_step([*own, tmp_path / "other" / "weights" / "step-80.safetensors"], run) is None
    assert last_step([run / "weights" / "mean.safetensors"], run) is None


def test_the_card_says_which_checkpoints_a_run_was_averaged_from():
    """One step file "averaged" is that checkpoint exported, not an average; files that are not the run's step files
    (a mean of other models) are counted without steps."""

    def run(*weights):
        return {"averaged": {"weights": list(weights), "command": "python -m training.recipes.average ..."}}

    assert averaged_summary(run("step-40.safetensors", "step-60.safetensors")) == (
        ", then 2 checkpoints averaged (steps 40 to 60)"
    )
    assert averaged_summary(run("step-1000.safetensors", "step-200.safetensors", "step-900.safetensors")) == (
        ", then 3 checkpoints averaged (steps 200 to 1,000)"
    )
    assert averaged_summary(run("step-1200.safetensors")) == ", then its checkpoint of step 1,200 exported"
    assert averaged_summary(run("model.safetensors", "model.safetensors")) == ", then 2 checkpoints averaged"
    assert averaged_summary({}) == ""
