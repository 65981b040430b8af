"""How it learned: the trainer snapshots the probe sentences at step 0 and at every evaluation, exports the history
beside the model, and keeps one history across --resume and --init-from."""

import json
import shutil

import pytest

from helpers import train_args
from modeldir.files import SNAPSHOTS, read_history
from training.configs import CONFIGS
from training.snapshots import rounded
from training.train import main as train_main

PROBES = ["I see the cat.", "the dog sleeps ."]


@pytest.fixture(scope="module")
def probe_config(tmp_path_factory):
    """The tiny config with two probe sentences and an evaluation every 20 steps."""
    model, train = CONFIGS["tiny"]
    path = tmp_path_factory.mktemp("config") / "tiny_probes.json"
    path.write_text(json.dumps({"model": model, "train": {**train, "eval_every": 20, "probes": PROBES}}))
    return str(path)


def run(corpus, out, config, *extra):
    train, dev = corpus
    train_main(train_args(train, dev, out, *extra, config=config))
    return json.loads((out / SNAPSHOTS).read_text(encoding="utf-8"))


def steps(history):
    return [s["step"] for s in history["snapshots"]]


def test_a_run_snapshots_step_zero_and_every_evaluation_with_the_right_shapes(toy_corpus, probe_config, tmp_path):
    history = run(toy_corpus, tmp_path / "run", probe_config, "--max-steps", "50")
    assert steps(history) == [0, 20, 40, 50]
    assert history["probes"] == PROBES
    first, last = history["snapshots"][0], history["snapshots"][-1]
    assert first["train_loss"] is None and first["dev_bleu"] is None  # nothing measured before training
    assert last["train_loss"] > 0 and last["dev_bleu"] is not None
    for snapshot in history["snapshots"]:
        assert [p["source_tokens"][-1] for p in snapshot["probes"]] == ["</s>", "</s>"]
        for p in snapshot["probes"]:
            layers, heads, n_target, n_source = (
                CONFIGS["tiny"][0]["n_decoder_layers"],
                2,
                len(p["target_tokens"]),
                len(p["source_tokens"]),
            )
            assert len(p["cross_attention"]) == layers and len(p["cross_attention"][0]) == heads
            rows = p["cross_attention"][0][0]
            assert len(rows) == n_target and all(len(row) == n_source for row in rows)
            assert all(abs(sum(row) - 1) < 0.05 for row in rows)  # softmax rows, rounded to 0.01
    assert history["curve"] and {point[0] for point in history["curve"]} <= set(range(51))
    exported = read_history(tmp_path / "run" / "model")  # beside the best model: its history up to its step
    exported_step = json.loads((tmp_path / "run" / "model" / "metrics.json").read_text())["training"]["steps"]
    assert steps(exported) == [s for s in steps(history) if s <= exported_step]
    assert last["seconds"] > 0


def test_resume_neither_duplicates_nor_loses_snapshots(toy_corpus, probe_config, tmp_path):
    out = tmp_path / "run"
    run(toy_corpus, out, probe_config, "--max-steps", "30")
    shutil.copy(out / "checkpoint.pt", tmp_path / "at_30.pt")
    run(toy_corpus, out, probe_config, "--max-steps", "60", "--resume")
    # A crash after step 40's snapshot: the run restarts from the checkpoint of step 30 and records 40 again.
    shutil.copy(tmp_path / "at_30.pt", out / "checkpoint.pt")
    history = run(toy_corpus, out, probe_config, "--max-steps", "60", "--resume")
    assert steps(history) == [0, 20, 30, 40, 60]
    assert len(history["parts"]) == 1
    assert [c[0] for c in history["curve"]] == sorted(c[0] for c in history["curve"])


def test_init_from_continues_the_history_of_the_model_it_starts_from(toy_corpus, probe_config, tmp_path):
    first = run(toy_corpus, tmp_path / "first", probe_config, "--max-steps", "40")
    model = tmp_path / "first" / "model"
    offset = json.loads((model / "metrics.json").read_text())["training"]["steps"]
    second = run(toy_corpus, tmp_path / "second", probe_config, "--max-steps", "20", "--init-from", str(model))
    assert steps(second) == [s for s in steps(first) if s <= offset] + [offset, offset + 20]
    assert [p["first_step"] for p in second["parts"]] == [0, offset]
    assert [s["part"] for s in second["snapshots"]][-2:] == [2, 2]


def test_init_from_a_model_without_history_starts_one_at_its_step_count(toy_corpus, probe_config, tmp_path):
    first = tmp_path / "first"
    run(toy_corpus, first, probe_config, "--max-steps", "20")
    (first / "model" / SNAPSHOTS).unlink()  # as the parts trained before snapshots existed
    history = run(
        toy_corpus, tmp_path / "second", probe_config, "--max-steps", "20", "--init-from", str(first / "model")
    )
    assert steps(history) == [20, 40]
    assert history["parts"][0]["history_before"] is True


def test_rounded_keeps_two_decimals_and_writes_zeros_short():
    import numpy as np

    assert rounded(np.array([[0.123456, 0.0, 0.876544]])) == [[0.12, 0, 0.88]]
    assert json.dumps(rounded(np.array([0.0004]))) == "[0]"
