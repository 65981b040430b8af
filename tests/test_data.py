"""The training data pipeline: re-typed English, sources mixed by weight, pairs joined into longer ones, and the
training script's several --train sources."""

import gzip
import json

import pytest

from helpers import toy_pairs, write_tsv
from training.data import RETYPINGS, TrainingData, build_tokenizer, encode_pairs, load_pairs, retype
from training.train import main as train_main
from transformer.tokenizer import decode, encode_batch


@pytest.mark.parametrize(
    "how, expected",
    [
        ("lower", "where is tom's car?"),
        ("lower, no final punctuation", "where is tom's car"),
        ("no final punctuation", "Where is Tom's car"),
        ("capitals", "WHERE IS TOM'S CAR?"),
        ("capitals, no final punctuation", "WHERE IS TOM'S CAR"),
    ],
)
def test_retype_changes_only_case_and_final_punctuation(how, expected):
    assert retype("Where is Tom's car?", how) == expected


def test_retype_keeps_a_sentence_that_is_only_punctuation():
    assert retype("?!", "no final punctuation") == "?!"
    assert set(RETYPINGS) == {
        "lower",
        "lower, no final punctuation",
        "no final punctuation",
        "capitals",
        "capitals, no final punctuation",
    }


@pytest.fixture(scope="module")
def tokenizer():
    pairs = toy_pairs()
    texts = [s for p in pairs for s in p] + [retype(en, "capitals") for en, _ in pairs]
    return build_tokenizer([[(t, t) for t in texts]], vocab_size=600)[0]


def decoded(tokenizer, ids_list):
    return [decode(tokenizer, ids) for ids in ids_list]


def test_sources_are_repeated_by_their_weight(tokenizer):
    a, b = toy_pairs()[:40], toy_pairs()[40:60]
    data = TrainingData([(a, 1), (b, 2.5)], tokenizer, max_len=64, seed=1)
    assert len(data) == 40 + 50
    src, tgt = data.epoch(0)
    english = decoded(tokenizer, src)
    assert len(src) == len(tgt) == 90
    assert all(english.count(en) == 1 for en, _ in a)
    assert sorted(english.count(en) for en, _ in b) == [2] * 10 + [3] * 10  # twice, and a random half once more
    assert data.epoch(0) == (src, tgt) and data.epoch(1) != (src, tgt)  # reproducible per (seed, epoch)


def test_long_sentences_are_seen_long_weight_times_as_often(tokenizer):
    short = toy_pairs()[:40]
    pairs = short + [(f"{a} {b}", f"{c} {d}") for (a, c), (b, d) in zip(toy_pairs()[40:60], toy_pairs()[60:80])]
    long = {en for en, _ in pairs[40:]}  # eight words each
    data = TrainingData([(pairs, 2)], tokenizer, max_len=64, long_weight=1.5, long_words=6, seed=5)
    assert len(data) == round(2 * len(pairs) + len(long))
    english = decoded(tokenizer, data.epoch(0)[0])
    assert all(english.count(en) == 3 for en in long)  # 2 x 1.5: the extra half-weight of 2 is one whole repeat
    assert all(english.count(en) == 2 for en, _ in pairs if en not in long)
    with pytest.raises(ValueError, match="long_weight must be at least 1"):
        TrainingData([(pairs, 2)], tokenizer, max_len=64, long_weight=0.5)


def test_a_share_of_english_is_retyped_and_the_italian_never_is(tokenizer):
    pairs = toy_pairs()
    data = TrainingData([(pairs, 1)], tokenizer, max_len=64, retype_share=0.3, seed=2)
    src, tgt = data.epoch(0)
    english, italian = decoded(tokenizer, src), decoded(tokenizer, tgt)
    originals = {it: en for en, it in pairs}
    changed = [(en, originals[it]) for en, it in zip(english, italian) if en != originals[it]]
    assert sorted(italian) == sorted(it for _, it in pairs)
    assert 0.2 * len(pairs) < len(changed) < 0.4 * len(pairs)
    kinds = {next(how for how in RETYPINGS if retype(original, how) == en) for en, original in changed}
    assert set(RETYPINGS) <= kinds


def test_joined_pairs_are_whole_pairs_in_the_same_order_on_both_sides(tokenizer):
    pairs = toy_pairs()[:100]
    data = TrainingData([(pairs, 1)], tokenizer, max_len=64, join_share=0.2, seed=3)
    src, tgt = data.epoch(0)
    assert len(src) == 120
    by_english = dict(pairs)
    for en_ids, it_ids in zip(src[100:], tgt[100:]):
        english, italian = decode(tokenizer, en_ids), decode(tokenizer, it_ids)
        parts = [p + "." for p in english.split(". ") if p]
        parts[-1] = parts[-1].removesuffix(".")
        assert 2 <= len(parts) <= 3
        assert italian == " ".join(by_english[p] for p in parts)
        assert en_ids == [t for ids in encode_batch(tokenizer, parts) for t in ids]  # ids joined = text joined


def test_joining_never_exceeds_the_model_length(tokenizer):
    pairs = toy_pairs()[:50]
    data = TrainingData([(pairs, 1)], tokenizer, max_len=20, join_share=1.0, seed=4)
    src, tgt = data.epoch(0)
    assert max(map(len, src + tgt)) < 20
    assert encode_pairs(tokenizer, pairs, 20)[2] == list(range(50))


def test_training_takes_several_weighted_sources_and_records_them(tmp_path):
    pairs = toy_pairs()
    first = write_tsv(tmp_path / "first.tsv", pairs[:150])
    second = write_tsv(tmp_path / "second.tsv", pairs[150:])
    dev = write_tsv(tmp_path / "dev.tsv", pairs[:5])
    out = tmp_path / "run"
    train_main(
        [
            "--config",
            "tiny",
            "--train",
            f"{first},{second}",
            "--train-weights",
            "1",
            "2",
            "--dev",
            str(dev),
            "--out",
            str(out),
            "--max-steps",
            "3",
            "--no-progress",
            "--precision",
            "float32",
        ]
    )
    data = json.loads((out / "model" / "metrics.json").read_text(encoding="utf-8"))["training"]["data"]
    assert data["train"] == [str(first), str(second)] and data["weights"] == [1, 2]
    assert data["pairs_per_epoch"] == 150 + 2 * (len(pairs) - 150)
    with pytest.raises(ValueError, match="one positive weight per --train source"):
        train_main(
            [
                "--config",
                "tiny",
                "--train",
                str(first),
                str(second),
                "--train-weights",
                "1",
                "--dev",
                str(dev),
                "--out",
                str(tmp_path / "bad"),
            ]
        )


def test_a_gzip_compressed_tsv_reads_as_the_plain_file(tmp_path):
    pairs = toy_pairs()[:20]
    plain = write_tsv(tmp_path / "pairs.tsv", pairs)
    packed = tmp_path / "pairs.tsv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes() + b"only one field\n"))
    assert load_pairs(str(packed)) == (pairs, 1)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_pairs(str(tmp_path / "missing.tsv.gz"))
