"""training.recipes.new_vocabulary: a trained model given a larger vocabulary, its rows mapped token by token, that
reads what both vocabularies spell alike as before and that the trainer then goes on training."""

import json

import pytest
import torch

from helpers import run_module, toy_pairs, train_args, write_tsv
from modeldir.card import training_markdown
from modeldir.directory import open_model
from training.data import read_tsv
from training.recipes.new_token_pairs import main as new_token_pairs_main
from training.recipes.new_vocabulary import extended_tokenizer, known_words, old_spellings, vocabulary_rows
from training.recipes.new_vocabulary import main as new_vocabulary_main
from training.recipes.new_vocabulary import parse_args as new_vocabulary_args
from training.train import main as train_main
from transformer.tokenizer import encode_batch, train_tokenizer

NEW_WORDS = [("I see the bookshelf.", "io vedo la libreria."), ("we love the bookshelf.", "noi amo la libreria.")]


def texts(pairs):
    return [sentence for pair in pairs for sentence in pair]


def test_a_kept_token_keeps_its_row_and_a_new_one_starts_at_the_mean_of_its_pieces():
    old = train_tokenizer(iter(texts(toy_pairs())), 300)
    new = train_tokenizer(iter(texts(toy_pairs() + NEW_WORDS * 20)), 420)
    rows = torch.randn(old.get_vocab_size(), 3)
    spellings, kept = old_spellings(old, new)
    new_rows = vocabulary_rows(rows, spellings)
    assert new_rows.shape == (new.get_vocab_size(), 3) and 0 < kept < new.get_vocab_size()
    old_vocab = old.get_vocab()
    for token, new_id in new.get_vocab().items():
        if token in old_vocab:
            assert torch.equal(new_rows[new_id], rows[old_vocab[token]])
    word = new.token_to_id("▁bookshelf")
    pieces = old.encode("bookshelf").ids
    assert word is not None and "▁bookshelf" not in old_vocab and len(pieces) > 1
    assert torch.allclose(new_rows[word], rows[pieces].mean(0))


def test_added_tokens_keep_the_old_vocabulary_and_join_only_old_tokens():
    """--add-tokens: every old token keeps its id, the new merges rank after the old ones, so a word the new merges
    do not touch is cut as before, a frequent new word becomes one token, and every text decodes as it was."""
    old = train_tokenizer(iter(texts(toy_pairs())), 300)
    new, added = extended_tokenizer(old, texts(NEW_WORDS * 20), 40)
    assert 0 < added <= 40 and new.get_vocab_size() == old.get_vocab_size() + added
    old_vocab = old.get_vocab()
    assert all(new.token_to_id(token) == token_id for token, token_id in old_vocab.items())
    assert len(old.encode("libreria").ids) > 1 and new.encode("libreria").tokens == ["▁libreria"]
    new_merges = {tuple(merge) for merge in json.loads(new.to_str())["model"]["merges"][-added:]}
    untouched = 0
    for sentence in texts(toy_pairs()[:50]) + ["I see the bookshelf.", "Où est la libreria? 🍕"]:
        old_cut, new_cut = old.encode(sentence), new.encode(sentence)
        assert new.decode(new_cut.ids) == old.decode(old_cut.ids)
        if not new_merges & set(zip(old_cut.tokens, old_cut.tokens[1:])):
            assert new_cut.ids == old_cut.ids
            untouched += 1
    assert untouched > 0
    assert "<0x66>" in new.encode("bookshelf").tokens  # the toy vocabulary spells "f" in bytes, never joined
    assert not [token for token in new.get_vocab() if token not in old_vocab and "<0x" in token]


def test_known_words_are_left_out_of_what_the_new_merges_are_learnt_on():
    """--known: a word the model saw often keeps its old cut, so the added tokens go to the words it rarely saw."""
    old = train_tokenizer(iter(texts(toy_pairs())), 300)
    assert known_words(old, ["the libreria.", "una libreria", "the cat"], 2) == {"▁libreria", "▁the"}
    new, added = extended_tokenizer(old, texts(NEW_WORDS * 20), 40, known={"▁libreria"})
    assert added > 0
    assert new.encode("libreria").ids == old.encode("libreria").ids  # one token when it is not known (above)
    assert new.encode("bookshelf").ids != old.encode("bookshelf").ids


@pytest.mark.parametrize("option", [["--known", "k.tsv"], ["--english-only"]])
def test_options_of_added_tokens_are_refused_with_a_whole_new_vocabulary(option, capsys):
    with pytest.raises(SystemExit):
        new_vocabulary_args(["--model", "m", "--train", "t.tsv", "--vocab-size", "456", *option, "--out", "o"])
    assert "only apply to --add-tokens" in capsys.readouterr().err


def test_english_only_merges_are_learnt_on_the_english_side_alone(tiny_model_dir, tmp_path):
    """The encoder reads the added tokens; the Italian the decoder writes is cut as before."""
    extra = write_tsv(tmp_path / "extra.tsv", NEW_WORDS * 20)
    out = tmp_path / "new"
    base = ["--model", str(tiny_model_dir), "--train", str(extra)]
    new_vocabulary_main([*base, "--add-tokens", "30", "--english-only", "--out", str(out)])
    old, new = (open_model(d, device="cpu").translator.tokenizer for d in (tiny_model_dir, out))
    assert len(new.encode("bookshelf").ids) < len(old.encode("bookshelf").ids)
    assert new.encode("libreria").ids == old.encode("libreria").ids


def test_the_pairs_with_added_tokens_are_those_the_new_vocabulary_cuts_anew(tiny_model_dir, toy_corpus, tmp_path):
    """An added token only ever joins old ones, so a pair holds one exactly when the new vocabulary cuts it otherwise
    than the old."""
    train, _ = toy_corpus
    extra = write_tsv(tmp_path / "extra.tsv", NEW_WORDS * 20)
    out, picked = tmp_path / "new", tmp_path / "picked.tsv"
    base = ["--model", str(tiny_model_dir), "--train", str(extra)]
    new_vocabulary_main([*base, "--add-tokens", "30", "--known", str(train), "--out", str(out)])
    mixed = write_tsv(tmp_path / "mixed.tsv", toy_pairs()[:40] + NEW_WORDS)
    new_token_pairs_main(["--model", str(out), "--data", str(mixed), "--out", str(picked)])
    old, new = (open_model(d, device="cpu").translator.tokenizer for d in (tiny_model_dir, out))
    cut_anew = [
        pair for pair in toy_pairs()[:40] + NEW_WORDS if any(old.encode(s).ids != new.encode(s).ids for s in pair)
    ]
    assert NEW_WORDS[0] in cut_anew and len(cut_anew) < 42  # the toy pairs' words are known: few are cut anew
    assert read_tsv(picked)[0] == cut_anew

    remade = tmp_path / "remade"
    new_vocabulary_main([*base, "--vocab-size", "456", "--out", str(remade)])
    with pytest.raises(ValueError, match="not extended by `new_vocabulary --add-tokens`"):
        new_token_pairs_main(["--model", str(remade), "--data", str(mixed), "--out", str(picked)])


@pytest.mark.parametrize("size", [["--vocab-size", "456"], ["--add-tokens", "60"]])
def test_the_command_writes_a_model_that_reads_shared_tokens_as_before_and_trains_on(
    tiny_model_dir, toy_corpus, tmp_path, size
):
    train, dev = toy_corpus
    extra = write_tsv(tmp_path / "extra.tsv", NEW_WORDS * 20)
    out = tmp_path / "new"
    new_vocabulary_main(["--model", str(tiny_model_dir), "--train", str(train), str(extra), *size, "--out", str(out)])
    old = open_model(tiny_model_dir, dtype="float32", device="cpu")
    new = open_model(out, dtype="float32", device="cpu")
    old_size, new_size = old.translator.model.cfg.vocab_size, new.translator.model.cfg.vocab_size
    assert new_size == new.translator.tokenizer.get_vocab_size() > old_size
    assert new.metrics["training"]["new_vocabulary"]["vocab_size"] == [old_size, new_size]
    assert "scores" not in new.metrics and new.history == old.history
    assert f"then given a vocabulary of {new_size:,} tokens (was {old_size:,})" in training_markdown(new.metrics)

    # A sentence both vocabularies cut into the same tokens is read exactly as before.
    sentence = "we love the book."
    (old_tokens,), (new_tokens,) = (encode_batch(d.translator.tokenizer, [sentence]) for d in (old, new))
    assert [old.translator.tokenizer.id_to_token(i) for i in old_tokens] == [
        new.translator.tokenizer.id_to_token(i) for i in new_tokens
    ]
    with torch.no_grad():
        old_memory, _ = old.translator.model.encode(torch.tensor([old_tokens]))
        new_memory, _ = new.translator.model.encode(torch.tensor([new_tokens]))
    assert torch.allclose(old_memory, new_memory, atol=1e-5)

    args = ["--init-from", str(out), "--max-steps", "10", "--set", "warmup_steps=1"]
    train_main(train_args([train, extra], dev, tmp_path / "run", *args))
    record = json.loads((tmp_path / "run" / "model" / "metrics.json").read_text())
    assert record["history"][-1]["new_vocabulary"]["vocab_size"] == [old_size, new_size]  # kept in the history
    assert open_model(tmp_path / "run" / "model").translator.model.cfg.vocab_size == new_size


def test_a_model_that_is_not_there_is_one_clear_line(tmp_path):
    result = run_module(
        "training.recipes.new_vocabulary",
        "--model",
        tmp_path / "none",
        "--train",
        tmp_path / "t.tsv",
        "--vocab-size",
        "16000",
        "--out",
        tmp_path / "out",
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr and "none" in result.stderr


def test_pairs_asked_of_a_model_without_added_tokens_are_one_clear_line(tiny_model_dir, toy_corpus, tmp_path):
    train, _ = toy_corpus
    result = run_module(
        "training.recipes.new_token_pairs", "--model", tiny_model_dir, "--data", train, "--out", tmp_path / "o.tsv"
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "not extended by `new_vocabulary --add-tokens`" in result.stderr and not (tmp_path / "o.tsv").exists()
