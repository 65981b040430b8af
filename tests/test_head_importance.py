"""`python -m training.head_importance`: the BLEU each head is worth, written to the model directory in the shape of
the model's heads, and read back (`modeldir.files.read_head_importance`) only when it fits the model."""

import json
import shutil

import pytest
import sacrebleu

from interpretability.ablation import ablated
from modeldir.directory import open_model
from modeldir.files import HEAD_IMPORTANCE, read_head_importance
from modeldir.loading import read_config
from training.data import read_tsv
from training.head_importance import main

LIMIT = 20


@pytest.fixture(scope="module")
def measured(tiny_model_dir, toy_corpus, tmp_path_factory):
    """(model directory, the pairs used, what the script printed) after a run on a copy of the tiny model."""
    model_dir = tmp_path_factory.mktemp("importance") / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    dev = toy_corpus[1]
    main(["--model", str(model_dir), "--data", str(dev), "--limit", str(LIMIT), "--no-progress"])
    return model_dir, read_tsv(dev)[0][:LIMIT]


def bleu_of(translator, pairs):
    hypotheses = translator.translate([src for src, _ in pairs])
    return round(sacrebleu.corpus_bleu(hypotheses, [[tgt for _, tgt in pairs]]).score, 2)


def test_the_file_has_a_drop_per_head_of_each_kind(measured):
    model_dir, _ = measured
    importance = json.loads((model_dir / HEAD_IMPORTANCE).read_text(encoding="utf-8"))
    cfg = read_config(model_dir)
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    assert set(importance["drop"]) == set(layers)
    for kind, table in importance["drop"].items():
        assert len(table) == layers[kind] and all(len(row) == cfg.n_heads for row in table)
    assert (importance["data"], importance["n"], importance["decoding"]) == ("dev", LIMIT, "greedy")
    assert importance["command"].startswith("python -m training.head_importance --model ")
    assert importance["command"].endswith(f"--limit {LIMIT} --no-progress")
    assert read_head_importance(model_dir) == importance


def test_bleu_and_a_drop_match_an_independent_recomputation(measured):
    model_dir, pairs = measured
    importance = read_head_importance(model_dir)
    translator = open_model(model_dir).translator  # as the script opens it: the app's translator, its rules too
    intact = bleu_of(translator, pairs)
    assert importance["bleu"] == intact
    without = bleu_of(ablated(translator, [("cross", 0, 1)]), pairs)
    assert importance["drop"]["cross"][0][1] == pytest.approx(intact - without, abs=0.011)


def test_the_table_is_printed(capsys, toy_corpus, tmp_path, tiny_model_dir):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    main(["--model", str(model_dir), "--data", str(toy_corpus[1]), "--limit", "3", "--no-progress"])
    printed = capsys.readouterr().out
    assert "on 3 pairs" in printed and "cross" in printed and "head 1" in printed
    assert "layer 1" in printed and "layer 0" not in printed  # numbered from 1, as in the app


def test_a_model_without_the_file_has_none(tiny_model_dir):
    assert read_head_importance(tiny_model_dir) is None


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["drop"]["encoder"].append([0.0, 0.0]), r"encoder must be 1 x 2 numbers \(layers x heads"),
        (lambda d: d["drop"]["cross"][0].pop(), "cross must be 1 x 2 numbers"),
        (lambda d: d["drop"]["decoder"][0].__setitem__(0, "a lot"), "decoder must be 1 x 2 numbers"),
        (lambda d: d["drop"].pop("decoder"), "decoder must be"),
        (lambda d: d.pop("bleu"), "bleu"),
    ],
)
def test_a_file_that_does_not_fit_the_model_is_rejected(measured, tmp_path, change, message):
    model_dir = tmp_path / "model"
    shutil.copytree(measured[0], model_dir)
    path = model_dir / HEAD_IMPORTANCE
    importance = json.loads(path.read_text(encoding="utf-8"))
    change(importance)
    path.write_text(json.dumps(importance), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_head_importance(model_dir)


def test_a_file_that_is_not_json_is_rejected(measured, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(measured[0], model_dir)
    (model_dir / HEAD_IMPORTANCE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=HEAD_IMPORTANCE):
        read_head_importance(model_dir)


@pytest.mark.parametrize("flag, value", [("--limit", "0"), ("--beam", "-1"), ("--batch-size", "x")])
def test_bad_arguments_are_rejected(flag, value):
    with pytest.raises(SystemExit):
        main(["--model", "m", "--data", "d", flag, value])
