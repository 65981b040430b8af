"""Every bad argument gets a clear message where it enters: the library's calls (a ValueError naming the argument and
what it may be, never an error deep inside decoding, a silent fallback or terabytes of allocation) and the command
lines (one `error: ...` line and exit status 1, or argparse's usage message for a bad flag value, never a traceback);
input work is bounded, and a model whose weights are not finite says so when it loads."""

import json
import shutil
import warnings

import pytest
from safetensors.torch import load_file, save_file

from inputs.checks import MAX_BEAM, as_whole_number, check_whole_number
from interpretability import embedding_norms, head_details, inspect
from interpretability.beam_trace import beam_trace
from interpretability.inspection import MAX_CANDIDATES
from modeldir.loading import load_checked
from training import evaluate, head_importance, train
from training.cli import run_cli
from transformer import Translator

# ---- The library ----


@pytest.mark.parametrize("bounds, wanted", [((), ""), ((0,), " >= 0"), ((0, 9), r" in 0\.\.9")])
def test_the_one_whole_number_check_names_what_it_wants(bounds, wanted):
    check_whole_number("n", 3, *bounds)
    for value in (2.5, True, "3", None):
        with pytest.raises(ValueError, match=rf"n must be a whole number{wanted}, got {value!r}"):
            check_whole_number("n", value, *bounds)
    with pytest.raises(ValueError, match=r"n must be a whole number in 0\.\.9, got 10"):
        check_whole_number("n", 10, 0, 9)


def test_a_whole_number_as_a_page_or_a_command_line_sends_it():
    assert [as_whole_number(v) for v in ("4", 4.0, 7, " 5 ")] == [4, 4, 7, 5]
    assert [as_whole_number(v) for v in ("four", "2.5", None, float("inf"), float("nan"))] == [None] * 5


BAD_BEAMS = [0, -1, 2.5, 10**9, MAX_BEAM + 1, True, "2", None]


@pytest.mark.parametrize("beam", BAD_BEAMS)
def test_a_beam_outside_1_to_max_beam_is_refused_everywhere(translator, beam):
    """Everywhere a person hands in a beam: the checked translator (`inputs.text`) and interpretability's calls; the
    lesson's decoding functions trust their arguments."""
    calls = [
        lambda: translator.translate("I see the cat.", beam=beam),
        lambda: translator.translate_ids(["I see the cat."], beam=beam),
        lambda: inspect(translator, "I see the cat.", beam=beam),
        lambda: beam_trace(translator, "I see the cat.", beam=beam),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=rf"beam must be a whole number in 1\.\.{MAX_BEAM}, got {beam!r}"):
            call()


def test_the_widest_beam_translates(translator):
    assert translator.translate(["I see the cat."], beam=MAX_BEAM) == translator.translate(["I see the cat."], beam=4)


@pytest.mark.parametrize(
    "texts, message",
    [
        (5, "text must be a string or a list of strings, got int"),
        ({}, "text must be a string or a list of strings, got dict"),
        (None, "text must be a string or a list of strings, got NoneType"),
        (b"I see the cat.", "text must be a string or a list of strings, got bytes"),
        (["I see the cat.", 5], r"texts\[1\] must be a string, got int"),
        ([["nested"]], r"texts\[0\] must be a string, got list"),
    ],
)
def test_translate_refuses_what_is_not_text(translator, texts, message):
    with pytest.raises(ValueError, match=message):
        translator.translate(texts)


def test_text_in_a_tuple_or_empty_still_translates(translator):
    expected = [translator.translate("I see the cat."), translator.translate("")]
    assert translator.translate(("I see the cat.", "")) == expected and isinstance(expected[1], str)
    assert translator.translate([]) == []


def test_a_lone_surrogate_is_replaced_and_a_split_pair_joined(translator):
    """A JavaScript client cutting a string by length can leave half an emoji; the rest is still translated."""
    assert translator.translate("I see the cat.\ud800") == translator.translate("I see the cat.\ufffd")
    assert translator.encode_source(["I see \ud83d\ude00"]) == translator.encode_source(["I see 😀"])
    assert inspect(translator, "\udc00 the dog.").translation == translator.translate("\ufffd the dog.")


@pytest.mark.parametrize("top_k", [-1, 0, MAX_CANDIDATES + 1, 10**9, 2.5, None])
def test_inspect_wants_1_to_max_candidates(translator, top_k):
    with pytest.raises(ValueError, match=rf"top_k must be a whole number in 1\.\.{MAX_CANDIDATES}"):
        inspect(translator, "I see the cat.", top_k=top_k)


def test_inspect_and_beam_trace_want_a_text(translator):
    for call in (lambda: inspect(translator, 5), lambda: beam_trace(translator, ["a"], beam=2)):
        with pytest.raises(ValueError, match="text must be a string"):
            call()


@pytest.mark.parametrize(
    "layer, head, query, message",
    [
        (0, 0, 1.5, r"query must be a whole number in 0\.\.\d+, got 1\.5"),
        (0, 0, "1", "query .* got '1'"),
        (0, 0, None, "query .* got None"),
        (0, 0, True, "query .* got True"),
        (0, 0, -1, "query"),
        ("0", 0, 0, "layer must be a whole number, got '0'"),
        (0, None, 0, "head must be a whole number, got None"),
        (0.0, 0, 0, "layer must be a whole number"),
    ],
)
def test_head_details_names_the_bad_position(translator, layer, head, query, message):
    inspection = inspect(translator, "I see the cat.")
    with pytest.raises(ValueError, match=message):
        head_details(translator, inspection, "cross", layer, head, query)


@pytest.mark.parametrize("source", [[-1], [10**6], [5, 1.5], [True], ["▁no-such-token"], 5, None])
def test_embedding_norms_refuse_what_the_vocabulary_lacks(translator, source):
    """-1 used to wrap around to the last row silently."""
    with pytest.raises(ValueError, match="source"):
        embedding_norms(translator, source)


def test_a_10_mb_input_is_cut_before_the_tokenizer_sees_it(translator, monkeypatch):
    import transformer.translator  # the lesson's Translator tokenizes what the checked one hands it

    seen = []
    real_encode_batch = transformer.translator.encode_batch
    monkeypatch.setattr(
        transformer.translator,
        "encode_batch",
        lambda tokenizer, texts: seen.extend(map(len, texts)) or real_encode_batch(tokenizer, texts),
    )
    sentence = "I see the cat and the dog. "
    huge = sentence * (10_000_000 // len(sentence))
    (ids,), (truncated,) = translator.encode_source([huge])
    assert seen == [translator.max_source_chars] and truncated
    assert len(ids) == translator.max_source_tokens + 1
    (uncut,), _ = translator.encode_source([huge[: 3 * translator.max_source_chars]])
    assert ids == uncut  # the cut is far beyond what the model reads: it reads the same tokens
    assert translator.max_source_chars == translator.max_source_tokens * max(map(len, translator.tokenizer.get_vocab()))


def test_a_cut_text_is_truncated_even_when_its_tokens_fit(translator):
    """Zero-width characters (normalised away) can make a cut text tokenize short: it was still not read whole."""
    padded = "\u200b" * translator.max_source_chars + "the cat."
    (ids,), (truncated,) = translator.encode_source([padded])
    assert truncated and len(ids) < translator.max_source_tokens
    _, (short,) = translator.encode_source(["\u200b" * 10 + "the cat."])
    assert not short


def copy_with_weights(model_dir, to, fill):
    """A copy of `model_dir` at `to`, its weights stored in float32 (which holds what float16 cannot), those of `fill`
    ({name: value}) set to one value each, their sha256 recorded as an export records it: weights a run exported so."""
    from modeldir.loading import METRICS, WEIGHTS_SHA256, weights_sha256

    shutil.copytree(model_dir, to)
    weights = {name: tensor.float() for name, tensor in load_file(str(to / "model.safetensors")).items()}
    for name, value in fill.items():
        weights[name].fill_(value)
    save_file(weights, str(to / "model.safetensors"))
    metrics = json.loads((to / METRICS).read_text(encoding="utf-8"))
    (to / METRICS).write_text(json.dumps({**metrics, WEIGHTS_SHA256: weights_sha256(to)}), encoding="utf-8")
    return to


def non_finite_warnings(load):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load()
    return [w for w in caught if "NaN or infinite" in str(w.message)]


def test_loading_weights_that_are_not_finite_warns_naming_them(tiny_model_dir, tmp_path):
    names = load_file(str(tiny_model_dir / "model.safetensors"))
    model_dir = copy_with_weights(tiny_model_dir, tmp_path / "nan", dict.fromkeys(names, float("nan")))
    with pytest.warns(
        RuntimeWarning,
        match=r"model\.safetensors: \d+ weight tensors hold NaN or infinite values in "
        r"float32 \(src_embed\.embedding\.weight, .* and \d+ more\)",
    ):
        nan = load_checked(Translator, model_dir)
    assert nan.translate("I see the cat.") == ""  # what it serves: the warning is all that tells


def test_weights_too_large_for_float16_warn_only_there(tiny_model_dir, tmp_path):
    model_dir = copy_with_weights(tiny_model_dir, tmp_path / "large", {"decoder.norm.weight": 1e6})  # float16: <65504
    assert non_finite_warnings(lambda: load_checked(Translator, model_dir)) == []
    assert non_finite_warnings(lambda: load_checked(Translator, tiny_model_dir, dtype="float16")) == []
    with pytest.warns(RuntimeWarning, match=r"1 weight tensors .* in float16 \(decoder\.norm\.weight\)"):
        load_checked(Translator, model_dir, dtype="float16")


# ---- The command lines ----


def fails_with_one_line(capsys, main, argv):
    """The one stderr line of `main(argv)` run as `python -m` runs it (through run_cli), which must exit with 1."""
    with pytest.raises(SystemExit) as exit_info:
        run_cli(lambda: main(argv))
    assert exit_info.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def train_argv(train_data, dev, out, *extra):
    return [
        "--config",
        "tiny",
        "--train",
        str(train_data),
        "--dev",
        str(dev),
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def test_a_directory_given_as_data_is_one_error_line(capsys, tmp_path, toy_corpus, tiny_model_dir):
    folder = tmp_path / "folder"
    folder.mkdir()
    expected = f"error: {folder}: is a directory; expected a TSV file of English<TAB>Italian pairs"
    assert fails_with_one_line(capsys, train.main, train_argv(folder, toy_corpus[1], tmp_path / "a")) == expected
    assert fails_with_one_line(capsys, train.main, train_argv(toy_corpus[0], folder, tmp_path / "b")) == expected
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    for main in (evaluate.main, head_importance.main):
        assert fails_with_one_line(capsys, main, ["--model", str(tiny_model_dir), "--data", str(folder)]) == expected


def test_an_out_that_is_a_file_is_one_error_line(capsys, tmp_path, toy_corpus):
    a_file = tmp_path / "taken"
    a_file.write_text("not a run", encoding="utf-8")
    for out in (a_file, a_file / "run"):
        line = fails_with_one_line(capsys, train.main, train_argv(*toy_corpus, out))
        assert line == f"error: --out: cannot write {out}: {a_file} is a file, not a directory"


@pytest.fixture
def read_only(tmp_path):
    """A function making a directory read-only for the test (skipped where that does not stop writes: as root)."""
    made = []

    def make(directory):
        directory.chmod(0o555)
        made.append(directory)
        try:
            (directory / "probe").touch()
        except PermissionError:
            return directory
        pytest.skip("permissions do not stop this user writing (root): no read-only directory to test with")

    yield make
    for directory in made:
        directory.chmod(0o755)


def test_an_out_on_a_read_only_directory_fails_before_any_work(capsys, tmp_path, toy_corpus, read_only):
    locked = tmp_path / "locked"
    locked.mkdir()
    read_only(locked)
    line = fails_with_one_line(capsys, train.main, train_argv(*toy_corpus, locked / "run"))
    assert line == f"error: --out: cannot write {locked / 'run'}: {locked} is read-only"


def test_writing_into_a_read_only_model_directory_fails_before_scoring(
    capsys, tmp_path, toy_corpus, tiny_model_dir, read_only, monkeypatch
):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    read_only(model_dir)
    monkeypatch.setattr(evaluate, "score", lambda *args, **kwargs: pytest.fail("scored before the check"))
    monkeypatch.setattr(head_importance, "head_importance", lambda *args, **kwargs: pytest.fail("measured first"))
    line = fails_with_one_line(
        capsys, evaluate.main, ["--model", str(model_dir), "--data", str(toy_corpus[1]), "--record", "toy"]
    )
    assert line == f"error: --record: cannot write {model_dir}: {model_dir} is read-only"
    line = fails_with_one_line(capsys, head_importance.main, ["--model", str(model_dir), "--data", str(toy_corpus[1])])
    assert line == f"error: --model: cannot write {model_dir}: {model_dir} is read-only"


def test_a_file_system_error_is_one_line_naming_the_file(capsys):
    def main():
        raise PermissionError(13, "Permission denied", "/somewhere/metrics.json")

    assert fails_with_one_line(capsys, lambda argv: main(), []) == "error: /somewhere/metrics.json: Permission denied"


@pytest.mark.parametrize(
    "main, flag, value, message",
    [
        (train.main, "--threads", "-2", "must be 0 or more, got -2"),
        (train.main, "--max-steps", "-1", "must be 0 or more, got -1"),
        (train.main, "--max-minutes", "-1", "must be 0 or more, got -1"),
        (train.main, "--max-minutes", "nan", "expected a finite number"),
        (train.main, "--limit-train", "-3", "must be 0 or more, got -3"),
        (train.main, "--train-weights", "0", "must be more than 0, got 0"),
        (evaluate.main, "--threads", "-2", "must be 1 or more, got -2"),
        (evaluate.main, "--threads", "0", "must be 1 or more, got 0"),
        (evaluate.main, "--show", "-1", "must be 0 or more, got -1"),
        (head_importance.main, "--threads", "-2", "must be 1 or more, got -2"),
    ],
)
def test_bad_flag_values_are_refused_when_parsed(capsys, tmp_path, main, flag, value, message):
    argv = train_argv("t.tsv", "d.tsv", tmp_path / "run") if main is train.main else ["--model", "m", "--data", "d.tsv"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, flag, value])
    assert exit_info.value.code == 2
    assert f"argument {flag}: {message}" in capsys.readouterr().err
