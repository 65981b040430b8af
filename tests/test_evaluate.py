"""`python -m training.evaluate`: typing variants, length buckets, score records, and arguments it rejects."""

import json
import random
import shutil

import pytest

from helpers import toy_pairs, write_tsv
from modeldir.files import read_metrics, scores
from training.evaluate import (
    EACH_SENTENCE_ONCE,
    LENGTH_BUCKETS,
    VARIANTS,
    corpus_scores,
    length_bucket_name,
    main,
    multi_reference_scores,
    paired_bootstrap,
    scores_by_length,
    translate_all,
    typed_as,
)


def test_typed_variants_of_an_english_sentence():
    assert [typed_as(v, "Where is Tom?") for v in VARIANTS] == ["where is tom", "WHERE IS TOM?", "WHERE IS TOM?"]


def test_scores_by_length_put_each_pair_in_one_bucket():
    pairs = [(" ".join(["w"] * n), "x") for n in (1, 5, 6, 10, 11, 20, 21, 40)]
    buckets = scores_by_length(pairs, ["x"] * len(pairs))
    assert (
        list(buckets)
        == [length_bucket_name(*b) for b in LENGTH_BUCKETS]
        == ["1-5 words", "6-10 words", "11-20 words", "21+ words"]
    )
    assert [b["n"] for b in buckets.values()] == [2, 2, 2, 2]


def test_variants_and_lengths_are_scored_and_recorded(tiny_model_dir, tmp_path, capsys):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    data = write_tsv(tmp_path / "toy.tsv", toy_pairs()[:30])
    main(
        ["--model", str(model_dir), "--data", str(data), "--variants", "--by-length", "--record", "toy", "--show", "0"]
    )
    records = {(r.variant, r.subset): r for r in scores(read_metrics(model_dir / "metrics.json")) if r.data == "toy"}
    assert set(records) == {("as given", "all"), *((v, "all") for v in VARIANTS), ("as given", "1-5 words")}
    assert records["as given", "all"].n == 30 and records["as given", "all"].bleu > 90
    assert records["lower-cased, no final punctuation", "all"].bleu < records["as given", "all"].bleu  # "." is lost
    assert all(r.command.startswith("python -m training.evaluate --model") for r in records.values())
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert '"variants"' in printed and '"by_length"' in printed
    card = (model_dir / "README.md").read_text(encoding="utf-8")  # the model card now shows the new scores
    assert f"| toy | as given | greedy | float32 | {records['as given', 'all'].bleu} |" in card


@pytest.mark.parametrize("flag, value", [("--limit", "-3"), ("--limit", "0"), ("--beam", "0"), ("--batch-size", "x")])
def test_bad_numbers_are_rejected_with_a_clear_message(flag, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "m", "--data", "d.tsv", flag, value])
    assert exit_info.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err


def test_the_loss_is_low_on_the_references_the_model_learnt_and_high_on_mismatched_ones(
    tiny_model_dir, tmp_path, capsys
):
    pairs = toy_pairs()[:30]
    mismatched = [(src, pairs[(i + 1) % len(pairs)][1]) for i, (src, _) in enumerate(pairs)]
    losses = []
    for name, data in (("right", pairs), ("mismatched", mismatched)):
        main(
            [
                "--model",
                str(tiny_model_dir),
                "--data",
                str(write_tsv(tmp_path / f"{name}.tsv", data)),
                "--loss",
                "--show",
                "0",
            ]
        )
        losses.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["loss"])
    right, wrong = losses
    assert 0 < right and 3 * right < wrong  # nats per reference token


def test_the_paired_bootstrap_tells_a_real_difference_from_one_sentences_worth():
    """Half the sentences cut short is a difference no resample turns around; one sentence cut short is not."""
    rng = random.Random(0)
    words = "il la un gatto cane casa mare sole luna libro tavolo rosso verde grande vede mangia legge".split()
    references = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(200)]
    cut = [" ".join(ref.split()[:4]) if i % 2 else ref for i, ref in enumerate(references)]
    one_cut = [" ".join(ref.split()[:4]) if i == 1 else ref for i, ref in enumerate(references)]
    better = paired_bootstrap(references, cut, references)
    assert better["bleu"]["difference"] > 20 and better["bleu"]["p_value"] < 0.01 and better["chrf"]["p_value"] < 0.01
    worse = paired_bootstrap(cut, references, references)
    assert worse["bleu"]["difference"] == -better["bleu"]["difference"]
    close = paired_bootstrap(one_cut, references, references)
    assert -1 < close["bleu"]["difference"] < 0 and close["bleu"]["p_value"] > 0.05


def test_compare_scores_the_other_model_on_the_same_pairs(tiny_model_dir, tmp_path, capsys):
    data = write_tsv(tmp_path / "toy.tsv", toy_pairs()[:30])
    main(["--model", str(tiny_model_dir), "--data", str(data), "--compare", str(tiny_model_dir), "--show", "0"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    compare = summary["compare"]
    assert compare["model"] == str(tiny_model_dir) and compare["n"] == 30
    assert (compare["bleu"], compare["chrf"]) == (summary["bleu"], summary["chrf"])
    assert compare["paired_bootstrap"]["bleu"]["difference"] == 0 == compare["paired_bootstrap"]["chrf"]["difference"]


def test_a_wrong_compare_model_is_refused_before_anything_is_translated(tiny_model_dir, tmp_path, monkeypatch):
    data = write_tsv(tmp_path / "toy.tsv", toy_pairs()[:5])

    def no_decoding(*args, **kwargs):
        raise AssertionError("translated before --compare was checked")

    monkeypatch.setattr("training.evaluate.translate_all", no_decoding)
    with pytest.raises(ValueError, match="no such model directory"):
        main(["--model", str(tiny_model_dir), "--data", str(data), "--compare", str(tmp_path / "missing")])


def test_each_distinct_sentence_is_decoded_once_and_every_pair_gets_its_translation():
    class CountingTranslator:
        def __init__(self):
            self.decoded = []

        def translate(self, sentences, beam):
            self.decoded += sentences
            return [s.upper() for s in sentences]

    translator = CountingTranslator()
    sources = ["a cat.", "a dog.", "a cat.", "the sun.", "a dog.", "a cat."]
    assert translate_all(translator, sources, batch_size=2, progress=False) == [s.upper() for s in sources]
    assert translator.decoded == ["a cat.", "a dog.", "the sun."]


def test_multi_reference_scores_count_each_sentence_once_against_all_its_references():
    """One sentence with three translations, its output matching one of them: each pair alone scores it against a
    single reference (two of three miss); scored once against all three, it is right."""
    pairs = [
        ("I see the cat.", "Vedo il gatto."),
        ("I see the cat.", "Io vedo il gatto."),
        ("I see the cat.", "Io vedo la gatta."),
        ("The sea is blue.", "Il mare è blu."),
    ]
    hypotheses = ["Vedo il gatto.", "Vedo il gatto.", "Vedo il gatto.", "Il mare è blu."]
    assert multi_reference_scores(pairs, hypotheses) == {"bleu": 100.0, "chrf": 100.0, "n": 2}
    assert corpus_scores(hypotheses, [tgt for _, tgt in pairs])["bleu"] < 70
    with_one_reference = multi_reference_scores(pairs[2:], hypotheses[2:])  # only "Io vedo la gatta."
    assert with_one_reference["bleu"] < 100 and with_one_reference["n"] == 2


def test_a_set_with_repeated_sentences_is_also_scored_with_multiple_references(tiny_model_dir, tmp_path, capsys):
    pairs = toy_pairs()[:10]
    repeated = pairs + [(src, "altro " + tgt) for src, tgt in pairs[:4]]
    for data, expected in ((pairs, None), (repeated, 10)):
        main(["--model", str(tiny_model_dir), "--data", str(write_tsv(tmp_path / "toy.tsv", data)), "--show", "0"])
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary.get("multi_reference", {}).get("n") == expected
    assert summary["n"] == 14 and summary["multi_reference"]["bleu"] > summary["bleu"]


def test_the_multi_reference_score_is_recorded_as_a_subset(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    pairs = toy_pairs()[:10]
    data = write_tsv(tmp_path / "toy.tsv", pairs + [(src, "altro " + tgt) for src, tgt in pairs[:4]])
    main(["--model", str(model_dir), "--data", str(data), "--record", "toy", "--show", "0"])
    records = {r.subset: r for r in scores(read_metrics(model_dir / "metrics.json")) if r.data == "toy"}
    assert set(records) == {"all", EACH_SENTENCE_ONCE}
    assert (records["all"].n, records[EACH_SENTENCE_ONCE].n) == (14, 10)
    assert records[EACH_SENTENCE_ONCE].bleu > records["all"].bleu
