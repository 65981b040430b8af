"""bench.vocab_split: tokens per word of a model's tokenizer and of vocabularies learnt at other sizes."""

import json

import pytest

from bench.vocab_split import main, split_rates
from helpers import write_tsv
from transformer import Translator


def run(capsys, argv):
    main(argv)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_larger_vocabularies_cut_words_into_fewer_pieces(tiny_model_dir, toy_corpus, capsys):
    train, dev = toy_corpus
    results = run(
        capsys,
        [
            "--model",
            str(tiny_model_dir),
            "--train",
            str(train),
            "--data",
            str(dev),
            "--sizes",
            "270",
            "400",
            "--long-words",
            "4",
        ],
    )
    by_name = {r["tokenizer"]: r for r in results}
    assert list(by_name) == ["model", "learnt 270", "learnt 400"]
    small, large = by_name["learnt 270"], by_name["learnt 400"]
    assert small["size"] < large["size"]
    for side in ("en all", "it all"):
        assert 1.0 <= large[side] < small[side]  # no word is less than one token; more entries, fewer pieces
    assert small["en long"] == small["en all"]  # every toy sentence has 4 English words: all are long
    d_model = Translator.load(tiny_model_dir).model.cfg.d_model
    for r in results:
        assert r["extra_parameters"] == (r["size"] - by_name["model"]["size"]) * d_model


def test_no_long_sentences_reads_as_none(translator):
    rates = split_rates(translator.tokenizer, [("I see the cat.", "io vedo il gatto.")], long_words=11)
    assert rates["en long"] is None and rates["it long"] is None
    assert rates["en all"] >= 1.0


def test_missing_data_is_a_clear_error(tiny_model_dir, tmp_path, capsys):
    train = write_tsv(tmp_path / "train.tsv", [("I see the cat.", "io vedo il gatto.")])
    with pytest.raises(SystemExit):
        main(["--model", str(tiny_model_dir), "--train", str(train), "--data", str(tmp_path / "absent.tsv")])
    assert "absent.tsv" in capsys.readouterr().err
