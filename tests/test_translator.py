"""`Translator` on the tiny model trained by the real training script: translate, inspect, odd input, and
model directories that are broken in every way `Translator.load` should catch."""

import copy
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from helpers import toy_pairs
from inputs.text import (
    capitalised_like,
    lower_rare_capitals,
    read_dates,
    read_in_lower_case,
    unshout,
    with_currency_words,
    with_decimal_commas,
    with_initials_in_full,
    with_percent_signs,
)
from interpretability import Inspection, embedding_norms, input_report, inspect, positional_encoding
from modeldir.device import fast_cpu_dtype
from modeldir.files import scores
from modeldir.loading import ModelLoadError, check_model_dir, load_checked
from transformer import Translator
from transformer.model import sinusoidal_positional_encoding
from transformer.tokenizer import EOS_ID

ODD_INPUTS = [
    "",
    "   ",
    "😀🐱",
    "e\u0301 cafe\u0301",
    "שלום עולם",
    "مرحبا بالعالم",
    "\u200b",
    "Ünïcödé ✓ “quotes”",
    "I\tlove\nthe cat.",
]


def test_training_run_leaves_model_logs_and_checkpoint(tiny_model_dir):
    run_dir = tiny_model_dir.parent
    for name in ("model.safetensors", "config.json", "tokenizer.json", "metrics.json"):
        assert (tiny_model_dir / name).is_file(), name
    for name in ("metrics.csv", "loss_curve.png", "checkpoint.pt"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "loss_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = json.loads((tiny_model_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["training"]["steps"] > 0
    (dev,) = [s for s in scores(metrics) if s.data == "dev (during training)"]
    assert dev.decoding == "greedy" and dev.bleu > 90 and dev.n == 40


def test_translates_the_toy_corpus(translator):
    assert translator.translate("I love the cat.") == "io amo il gatto."
    pairs = toy_pairs()
    outputs = translator.translate([en for en, _ in pairs])
    correct = sum(out == it for out, (_, it) in zip(outputs, pairs))
    assert correct >= 0.95 * len(pairs)


def test_translate_returns_str_for_str_and_list_for_list(translator):
    assert isinstance(translator.translate("Tom sees the dog."), str)
    out = translator.translate(["Tom sees the dog.", "we have the book."])
    assert out == ["Tom vedo il cane.", "noi ho il libro."]
    assert translator.translate(("we have the book.",)) == ["noi ho il libro."]
    assert translator.translate([]) == []


@pytest.mark.parametrize("beam", [1, 3])
def test_inspect_agrees_with_translate_and_has_consistent_maps(translator, beam):
    cfg = translator.model.cfg
    text = "they want the water."
    result = inspect(translator, text, beam=beam)
    assert isinstance(result, Inspection)
    assert result.translation == translator.translate(text, beam=beam) == "loro voglio l'acqua."
    S, T = len(result.source_tokens), len(result.target_tokens)
    assert result.source_tokens[-1] == "</s>" and result.target_tokens[0] == "<s>"
    assert result.encoder_attention.shape == (cfg.n_encoder_layers, cfg.n_heads, S, S)
    assert result.decoder_attention.shape == (cfg.n_decoder_layers, cfg.n_heads, T, T)
    assert result.cross_attention.shape == (cfg.n_decoder_layers, cfg.n_heads, T, S)
    for maps in (result.encoder_attention, result.decoder_attention, result.cross_attention):
        assert abs(maps.sum(-1) - 1).max() < 1e-4
    assert len(result.top_candidates) == T
    if beam == 1:  # teacher forcing on the greedy output: each top candidate is the next generated token
        predicted = [candidates[0][0] for candidates in result.top_candidates]
        assert predicted == result.target_tokens[1:] + ["</s>"]
    for candidates in result.top_candidates:
        probs = [p for _, p in candidates]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    assert not result.source_truncated


def test_odd_inputs_do_not_crash(translator):
    outputs = translator.translate(ODD_INPUTS)
    assert len(outputs) == len(ODD_INPUTS) and all(isinstance(o, str) for o in outputs)
    assert outputs == [translator.translate(text) for text in ODD_INPUTS]
    for text in ODD_INPUTS:
        result = inspect(translator, text)
        assert result.cross_attention.shape[-1] == len(result.source_tokens) >= 1


def test_input_report_says_what_the_model_could_not_read(translator):
    plain = input_report(inspect(translator, "I see the cat."))
    assert (plain.unreadable, plain.long, plain.truncated) == (0, False, False)
    assert plain.tokens == len(inspect(translator, "I see the cat.").source_tokens) - 1  # without </s>
    emoji = input_report(inspect(translator, "I see 😀"))
    assert emoji.unreadable == 4 and emoji.unreadable_share == 4 / emoji.tokens  # its four UTF-8 bytes
    long = input_report(inspect(translator, "I see the cat and the dog. " * 4), long_input_tokens=20)
    assert long.tokens > 20 and long.long and not long.truncated
    cut = input_report(inspect(translator, "I see the cat and the dog. " * 40))
    assert cut.truncated and cut.tokens == translator.max_source_tokens


def test_long_input_is_truncated_to_the_model_length(translator):
    max_len = translator.model.cfg.max_len
    text = "I see the cat and the dog and the house. " * 40
    result = inspect(translator, text)
    assert result.source_truncated
    assert len(result.source_tokens) == max_len and result.source_tokens[-1] == "</s>"
    assert len(result.target_tokens) <= max_len
    (ids,) = translator.translate_ids([text])
    assert len(ids) <= max_len - 1 and EOS_ID not in ids
    assert isinstance(translator.translate(text, beam=2), str)


def test_float16_translates_like_float32(tiny_model_dir, translator):
    """The app runs the model in float16; it must say what the float32 model says."""
    half = Translator.load(tiny_model_dir, dtype="float16")
    assert {p.dtype for p in half.model.parameters()} == {torch.float16}
    sentences = [en for en, _ in toy_pairs()]
    for beam in (1, 3):
        same = sum(
            a == b for a, b in zip(half.translate(sentences, beam=beam), translator.translate(sentences, beam=beam))
        )
        assert same >= 0.95 * len(sentences)
    view = inspect(half, "I love the cat.")
    assert view.translation == translator.translate("I love the cat.")
    for maps in (view.encoder_attention, view.decoder_attention, view.cross_attention):
        assert maps.dtype == np.float32
        np.testing.assert_allclose(maps.sum(axis=-1), 1.0, atol=2e-3)


@pytest.mark.parametrize(
    "machine, capability, expected",
    [
        ("x86_64", "AVX512", "float16"),
        ("x86_64", "AVX2", "float16"),
        ("x86_64", "DEFAULT", "float32"),
        ("aarch64", "DEFAULT", "float16"),
        ("arm64", "DEFAULT", "float16"),
    ],
)
def test_fast_cpu_dtype_follows_the_cpu(monkeypatch, machine, capability, expected):
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert fast_cpu_dtype() == expected


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 kernels")
def test_fast_cpu_dtype_is_float32_when_torch_runs_unvectorised_kernels():
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    out = subprocess.run(
        [sys.executable, "-c", "from modeldir.device import fast_cpu_dtype; print(fast_cpu_dtype())"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "float32"


def test_unknown_dtype_is_a_clear_error(tiny_model_dir):
    with pytest.raises(ValueError, match="float16"):
        load_checked(Translator, tiny_model_dir, dtype="int8")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_translator_accepts_a_model_on_the_gpu(translator):
    """The training script evaluates through a Translator around its GPU model."""
    gpu = Translator(copy.deepcopy(translator.model).cuda(), translator.tokenizer)
    sentences = [en for en, _ in toy_pairs()[:8]]
    assert gpu.translate(sentences, beam=2) == translator.translate(sentences, beam=2)
    assert inspect(gpu, sentences[0]).translation == translator.translate(sentences[0])


def test_positional_encoding_is_the_formula_in_float32(tiny_model_dir, translator):
    cfg = translator.model.cfg
    half = Translator.load(tiny_model_dir, dtype="float16")
    for model in (translator, half):
        table = positional_encoding(model.model)
        assert isinstance(table, np.ndarray) and table.dtype == np.float32 and table.shape == (cfg.max_len, cfg.d_model)
        np.testing.assert_array_equal(table, sinusoidal_positional_encoding(cfg.max_len, cfg.d_model).numpy())
    np.testing.assert_array_equal(positional_encoding(translator.model, 5), positional_encoding(translator.model)[:5])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_embedding_norms_of_a_text_its_ids_or_its_tokens(tiny_model_dir, translator, dtype):
    model = Translator.load(tiny_model_dir, dtype=dtype)
    text = "I see the cat."
    tokens = inspect(translator, text).source_tokens
    ids = [translator.tokenizer.token_to_id(t) for t in tokens]
    embedding, position = embedding_norms(model, text)
    assert embedding.dtype == position.dtype == np.float32 and embedding.shape == position.shape == (len(ids),)
    for other in (embedding_norms(model, ids), embedding_norms(model, tokens)):
        np.testing.assert_array_equal(other[0], embedding)
        np.testing.assert_array_equal(other[1], position)
    d_model = translator.model.cfg.d_model
    np.testing.assert_allclose(position, np.sqrt(d_model / 2), rtol=1e-5)  # sin² + cos² = 1 per pair of dimensions
    rows = translator.model.src_embed.embedding.weight[ids].detach()
    expected = rows.norm(dim=-1).numpy() * np.sqrt(d_model)
    np.testing.assert_allclose(embedding, expected, rtol=1e-5 if dtype == "float32" else 2e-3)


# ---- Broken model directories ----


def edit_json(path, **changes):
    values = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**values, **changes}), encoding="utf-8")


def edit_weights(path, change):
    weights = load_file(str(path))
    change(weights)
    save_file(weights, str(path))


def grow(weights, name):
    weights[name] = torch.zeros(weights[name].shape[0] + 1, *weights[name].shape[1:])


BROKEN = {
    "missing weights": (lambda d: (d / "model.safetensors").unlink(), "missing model.safetensors"),
    "missing config": (lambda d: (d / "config.json").unlink(), "missing config.json"),
    "missing tokenizer": (lambda d: (d / "tokenizer.json").unlink(), "missing tokenizer.json"),
    "config not json": (lambda d: (d / "config.json").write_text("{oops", encoding="utf-8"), "invalid config"),
    "config is a list": (lambda d: (d / "config.json").write_text("[1, 2]", encoding="utf-8"), "invalid config"),
    "unknown config key": (lambda d: edit_json(d / "config.json", colour="red"), "colour"),
    "heads do not divide": (lambda d: edit_json(d / "config.json", n_heads=5), "divisible"),
    "zero heads": (lambda d: edit_json(d / "config.json", n_heads=0), "n_heads"),
    "fractional width": (lambda d: edit_json(d / "config.json", d_model=32.0), "d_model must be a positive integer"),
    "dropout out of range": (lambda d: edit_json(d / "config.json", dropout=1.5), "invalid config"),
    "vocab mismatch": (lambda d: edit_json(d / "config.json", vocab_size=999), "vocab_size=999"),
    "wrong weight shape": (
        lambda d: edit_weights(d / "model.safetensors", lambda w: grow(w, "encoder.layers.0.feed_forward.w_1.weight")),
        "encoder.layers.0.feed_forward.w_1.weight",
    ),
    "missing weight": (
        lambda d: edit_weights(d / "model.safetensors", lambda w: w.pop("decoder.norm.weight")),
        "decoder.norm.weight",
    ),
    "extra weight": (
        lambda d: edit_weights(d / "model.safetensors", lambda w: w.update(stray=torch.zeros(2))),
        "stray",
    ),
    "weights not safetensors": (lambda d: (d / "model.safetensors").write_bytes(b"\x00garbage"), "weights"),
    "tokenizer not json": (lambda d: (d / "tokenizer.json").write_text("nope", encoding="utf-8"), "tokenizer"),
}


@pytest.mark.parametrize("problem", BROKEN)
def test_broken_model_directory_raises_model_load_error(tiny_model_dir, tmp_path, problem):
    break_it, message = BROKEN[problem]
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    break_it(model_dir)
    with pytest.raises(ModelLoadError, match=message):
        check_model_dir(model_dir)


def test_missing_directory_raises_model_load_error(tmp_path):
    with pytest.raises(ModelLoadError, match="no such model directory"):
        check_model_dir(tmp_path / "nowhere")


@pytest.mark.parametrize(
    "typed, read",
    [
        ("WHERE IS THE BATHROOM?", "Where is the bathroom?"),
        ("I AM HUNGRY. ARE YOU?", "I am hungry. Are you?"),
        ("I LOVE ITALIAN FOOD", "I love italian food"),
        ("Where is NATO?", "Where is NATO?"),  # an acronym in ordinary text stays
        ("I LOVE you", "I LOVE you"),  # not shouted: only one of two words in capitals
        ("USA", "USA"),  # one word: could be an acronym
        ("È LA CITTÀ", "È la città"),
    ],
)
def test_unshout_reads_text_in_capitals_in_sentence_case(typed, read):
    assert unshout(typed) == read


def test_translator_reads_capitals_in_sentence_case_unless_told_not_to(translator):
    shouted = translator.encode_source(["I SEE THE CAT."])[0]
    assert shouted == translator.encode_source(["I see the cat."])[0]
    translator.unshout = False
    try:
        assert translator.encode_source(["I SEE THE CAT."])[0] != shouted
    finally:
        translator.unshout = True


@pytest.mark.parametrize(
    "typed, read, dates",
    [
        ("I was born on March 3rd, 1985.", "I was born on 3 March 1985.", [("March 3rd", "3 March")]),
        ("It ends on the 12th of October.", "It ends on the 12 October.", [("12th of October", "12 October")]),
        ("Until the 15th November.", "Until the 15 November.", [("15th November", "15 November")]),
        ("On September 19, we left.", "On 19 September, we left.", [("September 19", "19 September")]),  # no year
        ("From May 1st to June 2nd", "From 1 May to 2 June", [("May 1st", "1 May"), ("June 2nd", "2 June")]),
        ("The 19th century.", "The 19th century.", []),  # no month: no date
        ("In May 2007.", "In May 2007.", []),  # a month and a year
        ("In march 3rd place.", "In march 3rd place.", []),  # a month has a capital
        ("My birthday is on the fifth of May.", "My birthday is on the 5 May.", [("fifth of May", "5 May")]),
        ("Twenty-First of June", "21 June", [("Twenty-First of June", "21 June")]),
        ("See you May the fifth.", "See you 5 May.", [("May the fifth", "5 May")]),
        ("The first of May.", "The first of May.", []),  # Italian writes "il primo maggio" too
        ("The second May in a row.", "The second May in a row.", []),  # a day in words needs "of"
        ("Since May second-hand cars sold.", "Since May second-hand cars sold.", []),
        ("The nineteenth century.", "The 19th century.", [("nineteenth century", "19th century")]),
        (
            "The eighteenth- and nineteenth-century art.",
            "The 18th- and 19th-century art.",
            [("eighteenth- and nineteenth-century", "18th- and 19th-century")],
        ),
        (
            "In the fifteenth and sixteenth centuries.",
            "In the 15th and 16th centuries.",
            [("fifteenth and sixteenth centuries", "15th and 16th centuries")],
        ),
    ],
)
def test_dates_are_read_day_first_as_italian_writes_them(typed, read, dates):
    assert read_dates(typed) == (read, dates)


@pytest.mark.parametrize(
    "typed, read",
    [
        ("Prices rose by 3 percent.", "Prices rose by 3%."),
        ("With 29.8 PERCENT and 5,5 per cent.", "With 29.8% and 5,5%."),
        ("Nine percent of a percent sign.", "Nine percent of a percent sign."),  # no digits: read as typed
    ],
)
def test_percentages_are_read_with_their_sign(typed, read):
    assert with_percent_signs(typed)[0] == read


@pytest.mark.parametrize(
    "typed, read",
    [
        ("It costs €20.", "It costs 20 euros."),
        ("It costs 20€ or 20 €, not €1.", "It costs 20 euros or 20 euros, not 1 euro."),
        ("About $ 8.5 billion, or $47.", "About 8.5 billion dollars, or 47 dollars."),
        ("The house costs €250,000.", "The house costs 250,000 euros."),
        ("It costs £5 or ¥100.", "It costs 5 £ or 100 yen."),  # the pound's sign after the amount: "5 sterline"
        ("Two million € were spent.", "Two million € were spent."),  # no digits: read as typed
        ("It costs US$5; see $HOME.", "It costs US$5; see $HOME."),  # a sign glued to letters: read as typed
    ],
)
def test_amounts_are_read_with_their_currency_after_them_in_words(typed, read):
    assert with_currency_words(typed)[0] == read


@pytest.mark.parametrize(
    "typed, read",
    [
        ("It fell to 31.25 dollars, 6.79% down.", "It fell to 31,25 dollars, 6,79% down."),
        ("A 1.5 litre bottle, 0.7% and 13.9 million.", "A 1,5 litre bottle, 0,7% and 13,9 million."),
        ("EUR 11.2 billion; at 7.50 euros.", "EUR 11,2 billion; at 7,50 euros."),  # a word in capitals, an amount
        ("The train leaves at 7.30, or (by 9.45).", "The train leaves at 7.30, or (by 9.45)."),  # times of day
        ("Wake me at 6.15 am, 10.45 p.m.", "Wake me at 6.15 am, 10.45 p.m."),
        ("Python 3.11, LibreOffice 7.4, version 2.1.", "Python 3.11, LibreOffice 7.4, version 2.1."),  # versions
        ("GIMP-2.10, libm-2.7.so, v2.1, 1.2.3, 2.0.", "GIMP-2.10, libm-2.7.so, v2.1, 1.2.3, 2.0."),
        ("About 2.000 units, 250,000 people.", "About 2.000 units, 250,000 people."),  # thousands, or not: as typed
    ],
)
def test_decimals_are_read_with_the_italian_comma(typed, read):
    assert with_decimal_commas(typed)[0] == read


def test_decimals_read_with_the_comma_are_named_each_once():
    assert with_decimal_commas("29.8% and 5.5%, at 7.30.")[1] == [("29.8", "29,8"), ("5.5", "5,5")]


@pytest.mark.parametrize(
    "typed, read",
    [
        ("The UK left the EU in 2020.", "The United Kingdom left the European Union in 2020."),
        ("He lived in the U.S. for years; the U.N.", "He lived in the United States for years; the United Nations."),
        ("Call the U.N.!", "Call the United Nations!"),  # its point was the initials', not a sentence's
        ("The EU's plan, in the US.", "The European Union's plan, in the United States."),
        ("US$5, U.S.-led, EU-wide.", "US$5, U.S.-led, EU-wide."),  # glued to a sign or a word: as typed
        ("The UN Security Council, U.S. Congress.", "The UN Security Council, U.S. Congress."),  # before a name
        ("Tell us, AUS, USA, EUR.", "Tell us, AUS, USA, EUR."),  # other words
        ("Please HELP US; US troops.", "Please HELP US; US troops."),  # "US" is "us" in capitals: only "the US"
    ],
)
def test_initials_are_read_in_full(typed, read):
    assert with_initials_in_full(typed)[0] == read


def test_initials_read_in_full_are_named_as_typed():
    assert with_initials_in_full("The EU and the U.S.")[1] == [("EU", "European Union"), ("U.S.", "United States")]


def test_the_words_read_in_lower_case_are_named_beside_a_percentage_read_with_its_sign():
    typed = "Computers rose 29 percent. Attention please."  # "percent" is read no more
    read = lower_rare_capitals(with_percent_signs(typed)[0], RARE_CAPITALS)
    assert read == "computers rose 29%. attention please."
    assert read_in_lower_case(typed, read) == ["Computers", "Attention"]


def test_months_are_read_in_any_case_only_where_the_text_was_typed_in_capitals(translator):
    assert read_dates("on march 3rd, 1985", any_case=True) == ("on 3 March 1985", [("march 3rd", "3 March")])
    assert translator.reading("I WAS BORN ON MARCH 3RD, 1985.") == (
        "I was born on 3 March 1985.",
        [("march 3rd", "3 March")],
    )
    assert translator.reading("In march 3rd place.")[1] == []


def test_the_reading_names_the_percentages_read_with_their_sign(translator):
    assert translator.reading("Up 3 percent on May 2nd.") == (
        "Up 3% on 2 May.",
        [("May 2nd", "2 May"), ("3 percent", "3%")],
    )


def test_the_words_read_in_lower_case_are_named_beside_a_date_read_day_first():
    typed = "I left on the 3rd of May. Attention please."  # "rd" and "of" are read no more
    assert read_in_lower_case(typed, lower_rare_capitals(read_dates(typed)[0], RARE_CAPITALS)) == ["Attention"]


RARE_CAPITALS = {"Attention", "Machine", "Need", "Computers"}.__contains__  # what a model's word counts would say


@pytest.mark.parametrize(
    "typed, read",
    [
        ("Attention shows the words.", "attention shows the words."),
        ("Tom saw it. Machine learning is fun!", "Tom saw it. machine learning is fun!"),
        ("I like Machine learning.", "I like Machine learning."),  # not a sentence's first word: a name, maybe
        ("Attention Is All You Need", "attention Is All You need"),  # a title: every word, where rare
        ("Need Machine Computers", "need Machine Computers"),  # three words are not a title
        ("ATTENTION please", "ATTENTION please"),  # not capitalised: `unshout`'s case
        ("Boston is big.", "Boston is big."),
    ],
)
def test_lower_rare_capitals_reads_a_rarely_capitalised_first_word_in_lower_case(typed, read):
    assert lower_rare_capitals(typed, RARE_CAPITALS) == read


@pytest.mark.parametrize(
    "typed, read, translation, shown",
    [
        ("Computers are fast.", "computers are fast.", "i computer sono veloci.", "I computer sono veloci."),
        (
            "Computers are fast.",
            "Computers are fast.",
            "i computer sono veloci.",
            "i computer sono veloci.",
        ),  # as typed
        ('"But now," he said.', '"but now," he said.', '"ma ora", disse.', '"Ma ora", disse.'),
        ("computers are fast", "computers are fast", "i computer sono veloci", "i computer sono veloci"),
        ("Hi!", "hi!", "42!", "42!"),  # no letter to capitalise
    ],
)
def test_a_translation_starts_with_a_capital_where_the_english_was_read_in_lower_case(typed, read, translation, shown):
    assert capitalised_like(typed, read, translation) == shown


def test_the_words_read_in_lower_case_are_named_in_order():
    typed = "Attention Is All You Need. WHERE? Tom"
    assert read_in_lower_case(typed, lower_rare_capitals(typed, RARE_CAPITALS)) == ["Attention", "Need"]
    assert read_in_lower_case("Boston is big.", "Boston is big.") == []


def test_translator_reads_rare_capitals_in_lower_case_when_its_counts_say_so(translator):
    counted = translator.rare_capital  # `open_model` sets it from the directory's word counts
    assert counted is not None
    translator.rare_capital = None  # read as typed
    try:
        typed = translator.encode_source(["Computers are fast."])[0]
        lowered = translator.encode_source(["computers are fast."])[0]
        assert typed != lowered
        translator.rare_capital = RARE_CAPITALS
        assert translator.encode_source(["Computers are fast."])[0] == lowered
        ids = translator.tokenizer.encode("i computer", add_special_tokens=False).ids
        assert translator.target_text("Computers are fast.", ids) == "I computer"
    finally:
        translator.rare_capital = counted
