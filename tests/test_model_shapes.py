"""bench.model_shapes: untrained models of other shapes fed the reference model's outputs, their size and latency."""

import argparse
import json
from dataclasses import replace

import pytest

from bench.model_shapes import fed_translation, main, parse_shape
from helpers import write_tsv
from transformer import Translator
from transformer.model import Transformer

SENTENCES = ["I see the big cat in the garden today.", "We read a good book at home every night."]


def test_a_fed_model_writes_the_given_tokens_whatever_its_weights(translator):
    tokens = translator.translate_ids(SENTENCES[:1])[0]
    assert fed_translation(translator, SENTENCES[0], tokens) == tokens  # its own greedy output, fed back
    other = Translator(Transformer(replace(translator.model.cfg, d_model=48, n_heads=2)), translator.tokenizer)
    assert fed_translation(other, SENTENCES[0], [7, 8, 9]) == [7, 8, 9]  # an untrained model writes them too


def test_each_shape_is_timed_and_sized(tiny_model_dir, tmp_path, capsys):
    data = write_tsv(tmp_path / "data.tsv", [(s, "x") for s in SENTENCES])
    main(
        [
            "--model",
            str(tiny_model_dir),
            "--data",
            str(data),
            "--sentences",
            "2",
            "--warmup",
            "1",
            "--threads",
            "1",
            "--dtype",
            "float32",
            "--shape",
            "d_model=64,d_ff=128",
            "--shape",
            "n_decoder_layers=3",
        ]
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    greedy, fed, wide, deep = result["shapes"]
    assert [r["name"] for r in result["shapes"]] == ["reference (greedy)", "reference (fed)", "untrained", "untrained"]
    reference = Translator.load(tiny_model_dir).model.cfg
    assert greedy["d_model"] == fed["d_model"] == deep["d_model"] == reference.d_model and wide["d_model"] == 64
    assert deep["n_decoder_layers"] == 3 and deep["n_encoder_layers"] == reference.n_encoder_layers
    for r in result["shapes"]:
        assert r["size_mb"] == pytest.approx(r["parameters"] * 2 / 1e6, abs=0.05)  # float16, tied weights once
        assert 0 < r["p50_ms"] <= r["p95_ms"]
    assert wide["parameters"] > greedy["parameters"] and deep["parameters"] > greedy["parameters"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("width=3", "not a whole-number field"),
        ("d_model=big", "not a whole"),
        ("dropout=0", "not a whole-number field"),
    ],
)
def test_a_bad_shape_is_refused_with_its_reason(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_shape(text)


def test_a_missing_reference_model_is_a_clear_error(tmp_path, capsys):
    data = write_tsv(tmp_path / "data.tsv", [(SENTENCES[0], "x")])
    with pytest.raises(SystemExit):
        main(["--model", str(tmp_path / "nowhere"), "--data", str(data)])
    assert "not found" in capsys.readouterr().err


def test_a_shape_that_makes_no_model_is_refused_before_any_timing(tiny_model_dir, tmp_path, capsys):
    data = write_tsv(tmp_path / "data.tsv", [(SENTENCES[0], "x")])
    refusal = r"--shape d_model=30,n_heads=4: d_model \(30\) must be divisible by n_heads \(4\)"
    with pytest.raises(SystemExit, match=refusal):
        main(["--model", str(tiny_model_dir), "--data", str(data), "--shape", "d_model=30,n_heads=4"])
    assert "timing" not in capsys.readouterr().out
