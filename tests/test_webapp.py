"""The web layer as a whole (webapp/, app.py): the shared modules (token chips, the status line and decoding
labels of the translation box, help texts that work as written, download files); one module per tab, each function
short, and a page script that relies on the page's own element ids, not on Gradio's test ids or visible texts; and
the model library (transformer/) holds none of it."""

import ast
from pathlib import Path

import gradio as gr
import pytest

from inputs.request import one_line
from interpretability import inspect
from transformer import Sampling
from web_helpers import answered, changed_indices, chips, question, served_translator, translated  # noqa: F401 (fixture)
from webapp import texts, translation
from webapp.page_script import PAGE_SCRIPT
from webapp.payload import decoding_label
from webapp.tokens import output_tokens, token_chips

ROOT = Path(__file__).resolve().parents[1]
WEB_FILES = [ROOT / "app.py", *sorted((ROOT / "webapp").rglob("*.py"))]


def test_status_counts_tokens_as_the_truncation_note_does_and_warns():
    from interpretability import InputReport

    status = translation.translation_status(0.5, "greedy", InputReport(127, 0, True, True), 9, 127)
    assert "127 English → 9 Italian tokens (not counting `</s>`)" in status
    assert "longer than the model reads (127 tokens): only the beginning was translated" in status
    assert "far longer" not in status  # truncation says it already
    status = translation.translation_status(0.5, decoding_label(4), InputReport(8, 4, False, False), 3, 127)
    assert "beam search (4 beams)" in status and "Warning: 4 of the 8 English tokens (50%)" in status
    assert "never learnt" not in translation.translation_status(0.5, "greedy", InputReport(8, 0, False, False), 3, 127)
    assert "far longer" in translation.translation_status(0.5, "greedy", InputReport(70, 0, True, False), 60, 127)


def test_a_translation_shown_again_from_the_recent_ones_says_so_with_the_time_it_took(served):
    """The second Translate of a sentence is answered from the recent inspections, in no time: the status line gives
    the time the translation took when it was made and says it was shown again, not "Translated in 0.00 s"."""
    sentence = "We like the red house."
    _, first, *_ = translated(served, sentence, "greedy", 2, 1.0, 0, 0)
    _, again, *_ = translated(served, sentence, "greedy", 2, 1.0, 0, 0)
    took = first.split(" s ")[0].removeprefix("Translated in ")
    assert "shown again" not in first
    assert again.startswith(f"Translated in {took} s (earlier: shown again from the recent translations) · greedy")


def test_token_chips_escape_html():
    chips = token_chips(["<script>", "▁a", "</s>"], "Eng<b>", highlight=1)
    assert "<script>" not in chips and "<b>" not in chips
    assert "&lt;script&gt;" in chips and "Eng&lt;b&gt;" in chips
    assert 'class="chip chosen"' in chips and 'class="chip special"' in chips


def test_decoding_settings_refuse_what_the_page_does_not_offer():
    assert translation.decoding_settings("greedy", 5, 1.0, 0, 0) == (1, None)
    assert translation.decoding_settings("beam", 3, 1.0, 0, 0) == (3, None)
    assert translation.decoding_settings("sampling", 3, 0.5, 4, 2) == (1, Sampling(0.5, 4, 2))
    with pytest.raises(gr.Error, match="Decoding settings: beam must be a whole number in 1..8, got 9"):
        translation.decoding_settings("beam", 9, 1.0, 0, 0)
    with pytest.raises(gr.Error, match="Decoding settings"):
        translation.decoding_settings("sampling", 1, "hot", 0, 0)


def test_decoding_controls_are_active_and_shown_for_their_decoding_only():
    """The accordion's title names the decoding; a control of another decoding is hidden and inactive."""
    for decoding, name in [("sampling", "Sampling"), ("beam", "Beam search"), ("greedy", "Greedy")]:
        settings, beam, temperature, top_k, seed = translation.decoding_controls_for(decoding)
        assert settings.label.startswith(f"Decoding: {name} (")
        assert beam.interactive == beam.visible == (decoding == "beam")
        for control in (temperature, top_k, seed):
            assert control.interactive == control.visible == (decoding == "sampling")


def test_line_breaks_are_read_as_spaces_and_said():
    """Shift+Enter's line breaks reach the model as spaces (never as the byte token <0x0A>), and the status line says
    the lines were joined."""
    from interpretability import InputReport

    assert one_line("Hello there.\nHow are you?") == ("Hello there. How are you?", 2)
    assert one_line("  a \r\n\n b\u2028c\n") == ("a b c", 3)
    assert one_line("I see the cat.") == ("I see the cat.", 1)  # untouched
    assert one_line("I see the cat.\n") == ("I see the cat.", 1)
    status = translation.translation_status(0.5, "greedy", InputReport(8, 0, False, False), 3, 127, joined_lines=2)
    assert "your 2 lines were joined into one text (each line break read as a space)" in status
    assert "joined" not in translation.translation_status(0.5, "greedy", InputReport(8, 0, False, False), 3, 127)


def test_the_status_names_the_words_read_in_lower_case():
    from interpretability import InputReport

    report = InputReport(8, 0, False, False)
    status = translation.translation_status(0.5, "greedy", report, 3, 127, lowered=["Attention", "Need"])
    assert "Read in lower case: 'Attention', 'Need'. The model met them capitalised in a handful" in status
    assert "The model met it capitalised" in translation.translation_status(
        0.5, "greedy", report, 3, 127, lowered=["Cat"]
    )
    assert "lower case" not in translation.translation_status(0.5, "greedy", report, 3, 127)


def test_the_status_names_the_digits_names_and_copies_the_rules_wrote():
    from interpretability import InputReport

    report = InputReport(8, 0, False, False)
    status = translation.translation_status(0.5, "greedy", report, 3, 127, overruled=[(4, "▁e", "0"), (7, "▁1", "5")])
    assert (
        "Numbers, names and characters as the English writes them, words as the training pairs (or a larger "
        "corpus's, for words they hold too rarely) translate them, no word three times in a row: '0' for its '▁e' "
        "(step 5), '5' for its '▁1' (step 8). The model's own first choice would have written a number the English "
        "does not hold, misspelt a name it never met in training or a character its vocabulary spells in bytes, "
        "copied an English word the pairs translate, made up a word for one, split a phrase the pairs write as one "
        "word, or written a word a third time in a row." in status
    )
    assert "as the English writes" not in translation.translation_status(0.5, "greedy", report, 3, 127)


def test_input_that_does_not_look_english_is_warned_about(served):
    """French or German in the English box: the status line says what it looks like and why the Italian may be
    nonsense (inputs.language decides); English gets no such warning."""
    for text, language in [
        ("Je voudrais un café, s'il vous plaît.", "French"),
        ("Ich habe heute keine Zeit.", "German"),
    ]:
        status = translation.translate(served, text, "greedy", 2, 1.0, 0, 0)[1]
        assert f"Warning: This looks like {language}" in status and "translates from English only" in status
    assert "This looks like" not in translation.translate(served, "I see the cat.", "greedy", 2, 1.0, 0, 0)[1]


def test_a_text_of_two_lines_is_translated_as_one(served, translator):
    italian, status, _, payload = translated(served, "I see\nthe cat.", "greedy", 2, 1.0, 0, 0)
    assert italian == translator.translate("I see the cat.") and "2 lines were joined" in status
    assert not any("0x0A" in token for token in payload["source_tokens"])
    assert payload["request"]["text"] == "I see the cat."  # what an experiment runs on: the text translated
    assert "never learnt" not in status  # no warning blaming characters the model lacks


def test_translate_gives_the_text_status_chips_and_payload(served, translator):
    italian, status, chips_html, payload = translated(served, "I see the cat.", "beam", 2, 1.0, 0, 0)
    inspection = inspect(translator, "I see the cat.", beam=2)
    assert italian == translator.translate("I see the cat.", beam=2) == inspection.translation
    assert "beam search (2 beams)" in status and "▁cat" in chips_html and payload["beam"] is not None
    assert payload["translation"] == italian and payload["decoding"] == "beam search (2 beams)"
    assert payload["source_tokens"] == inspection.source_tokens and len(payload["beam"]["steps"]) > 0
    assert payload["request"] == {
        "text": "I see the cat.",
        "decoding": "beam",
        "beam": 2,
        "temperature": 1.0,
        "top_k": 0,
        "seed": 0,
    }
    assert translation.translate(served, " ", "greedy", 2, 1.0, 0, 0) == ("", texts.EMPTY_MESSAGE, "", None)


def test_translate_runs_the_teacher_forced_pass_once_for_every_view(served):
    """The payload's views (attention, steps, the model map's numbers) and a map box's vectors all come from one
    teacher-forced pass: the one pass where the decoder reads the whole output at once (decoding feeds it one token at
    a time)."""
    from webapp.tabs import model_map

    passes = []  # the positions of each decoder call that reads more than one, but the copies rule's look aheads
    copies = served.translator.rule.rules[-1]  # `inputs.copies.CopiesTranslated`: it runs the decoder on prefixes
    ahead, looking_ahead = copies.ahead, []

    def flagged(*args):
        looking_ahead.append(True)
        try:
            return ahead(*args)
        finally:
            looking_ahead.pop()

    def count(module, args, output):
        if args[0].size(1) > 1 and not looking_ahead:
            passes.append(args[0].size(1))

    copies.ahead = flagged
    handle = served.translator.model.decoder.register_forward_hook(count)
    try:
        *_, payload = translated(served, "We love the dog and the cat.", "greedy", 2, 1.0, 0, 0)
        box = answered(
            model_map.map_numbers(
                served, question(shown=payload["request"], box="feed-forward", stack="decoder", index=0)
            )
        )
    finally:
        handle.remove()
        copies.ahead = ahead
    assert passes == [len(payload["target_tokens"])]
    assert payload["map"]["decoder"]["firing"] and box["hidden"]["shape"][0] == len(payload["target_tokens"])


def test_an_experiment_runs_on_the_translation_shown_made_again_from_its_request(served, translator):
    """The payload's request is what every experiment sends back (SHOWN_TRANSLATION): the same sentence, decoded the
    same way."""
    *_, payload = translated(served, "I see\nthe cat.", "sampling", 2, 1.5, 5, 7)
    request = payload["request"]
    assert request == {
        "text": "I see the cat.",
        "decoding": "sampling",
        "beam": 1,
        "temperature": 1.5,
        "top_k": 5,
        "seed": 7,
    }
    settings = [request[name] for name in ("decoding", "beam", "temperature", "top_k", "seed")]
    shown = translation.inspection_of(served, request["text"], *settings)
    assert shown.translation == payload["translation"] and shown.source_tokens == payload["source_tokens"]
    assert shown.target_tokens == payload["target_tokens"] and shown.sampling.seed == 7
    assert translation.inspection_of(served, " ", *settings) is None  # no translation shown
    with pytest.raises(gr.Error, match="decoding must be one of 'greedy', 'beam', 'sampling'"):
        translation.inspection_of(served, request["text"], "<script>", 2, 1.0, 0, 0)
    with pytest.raises(gr.Error, match="beam must be a whole number in"):
        translation.inspection_of(served, request["text"], "beam", 99, 1.0, 0, 0)
    assert "shownTranslation" in translation.SHOWN_TRANSLATION  # the page's translation (translation.js), not the box's
    assert 'store.get("translation")?.request' in (ROOT / "webapp" / "translation.js").read_text(encoding="utf-8")


def test_output_tokens_end_the_sentence(translator):
    inspection = inspect(translator, "I see the cat.")
    assert output_tokens(inspection) == inspection.target_tokens[1:] + ["</s>"]


def test_decoding_label_names_each_decoding():
    assert decoding_label(1) == "greedy"
    assert decoding_label(4) == "beam search (4 beams)"
    assert decoding_label(1, Sampling(temperature=0.7, top_k=5, seed=3)) == "sampling (temperature 0.7, top-5, seed 3)"
    assert decoding_label(1, Sampling(temperature=2.0)) == "sampling (temperature 2, seed 0)"


def test_token_chips_mark_exactly_the_changed_indices():
    tokens = ["▁a", "▁b", "▁c", "</s>"]
    marked = token_chips(tokens, "x", highlight=1, changed={0, 3})
    assert [changed for _, changed in chips(marked)] == [True, False, False, True]
    assert marked.count(" chosen") == 1 and 'class="chip chosen"' in marked  # highlight stays apart
    assert not changed_indices(token_chips(tokens, "x"))


def test_train_help_commands_work_as_written():
    assert "../shared" not in texts.TRAIN_HELP  # a path that exists only on the project's build machines
    assert "python -m training.prepare_data --out data/en-it" in texts.TRAIN_HELP
    assert "--train data/en-it/train.tsv --dev data/en-it/dev.tsv" in texts.TRAIN_HELP
    assert "rm -rf assets/model && cp -r runs/cpu/model assets/model" in texts.TRAIN_HELP  # replace, not copy into


def python_files(*folders):
    return sorted(path for folder in folders for path in (ROOT / folder).glob("*.py"))


def imported_modules(path):
    """Top-level names of the modules `path` imports; relative imports stay in its own package and are left out."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_model_library_holds_no_web_app_code():
    files = python_files("transformer")
    assert files and not (ROOT / "transformer" / "plots.py").exists()
    for path in files:
        web = set(imported_modules(path)) & {"gradio", "matplotlib", "html", "PIL", "app", "webapp"}
        assert not web, f"{path.name} imports {web}: web-app code belongs in webapp/"


def test_special_tokens_are_named_by_their_constants():
    """Code writes `EOS`, never "</s>": only transformer/tokenizer.py spells the special tokens."""
    from transformer.tokenizer import SPECIAL_TOKENS

    for path in [*WEB_FILES, *python_files("transformer")]:
        if path.name == "tokenizer.py":
            continue
        literals = [
            node.value
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and node.value in SPECIAL_TOKENS
        ]
        assert not literals, f"{path.name} spells {literals}"


def function_lengths(path):
    """(name, lines) of every function in `path`, nested ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def test_every_web_function_is_short():
    """app.py is wiring only, and the tabs' modules are read one function at a time: none over 80 lines."""
    long = [(path.relative_to(ROOT), name, n) for path in WEB_FILES for name, n in function_lengths(path) if n > 80]
    assert not long


def test_each_tab_has_a_module_with_a_build_function():
    tabs = sorted(path.stem for path in (ROOT / "webapp" / "tabs").glob("*.py") if path.stem != "__init__")
    assert tabs == [
        "attention",
        "heads",
        "how_it_learned",
        "inside_head",
        "model_card",
        "model_map",
        "positions",
        "steps",
    ]
    for name in tabs:
        tree = ast.parse((ROOT / "webapp" / "tabs" / f"{name}.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{name}.py says what its tab shows"
        assert "build" in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_page_scripts_rely_on_the_pages_own_ids():
    """No Gradio test id, no tab found by its text: the page's elem_ids (a tab's button: "tab-<id>-button")."""
    for path in sorted((ROOT / "webapp").rglob("*.js")):
        code = path.read_text(encoding="utf-8")
        assert "data-testid" not in code and 'role="tab"][' not in code, path  # Gradio's test ids, a tab by its text
    assert "tab-${id}-button" in (ROOT / "webapp" / "page.js").read_text(encoding="utf-8")
    assert "page.js" in PAGE_SCRIPT  # the page's script imports page.js, which holds the keyboard's groups of choices
    page = (ROOT / "webapp" / "page.js").read_text(encoding="utf-8")
    assert "plotly" not in page and "fieldset" in page


def test_page_css_sets_a_focus_ring_and_a_grid_for_every_head_count():
    from webapp.style import CSS, MAX_HEADS

    assert ":focus-visible" in CSS
    for n in range(1, MAX_HEADS + 1):
        assert f".head-grid.heads-{n} .wrap {{ grid-template-columns: repeat({n}, max-content); }}" in CSS
