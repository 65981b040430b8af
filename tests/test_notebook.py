"""The lesson as a notebook: notebooks/walkthrough.ipynb is stored without outputs, links code that exists, and runs
top to bottom with its checks holding (each part computed by hand equals the model's, the tiny run's loss falls); the
views of `webapp.notebook`, loaded in Chromium, draw the numbers the app draws, answer their controls with no
server and no network, and two on one page do not interfere."""

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from interpretability import head_details, inspect
from interpretability.head_details import ALL_QUERIES
from transformer import Translator
from webapp.notebook import show_attention, show_head, show_map
from webapp.payload import dequantized, translation_payload

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -r requirements-test.txt)")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "walkthrough.ipynb"
SENTENCE = "The cat sleeps on the sofa."
OTHER = "I see the dog."
WAIT = 60_000  # ms
LINK = re.compile(r"\[([^\]]+)\]\(\.\./((?:transformer|training)/[\w/]+\.py)\)")
# What the test asks the notebook once it has run: its checkable values.
REPORT = (
    "import json\nprint(json.dumps({'head_check_passed': head_check_passed, 'argmax_is_greedy': argmax_is_greedy, "
    "'first_loss': first_loss, 'last_loss': last_loss, 'cells': len(In), "
    "'gradio_imported': 'gradio' in __import__('sys').modules}))"
)


def cells(kind):
    return [cell for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == kind]


def defined_names(path):
    """Every class and function of a module, methods as Class.method."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{item.name}" for item in node.body if isinstance(item, ast.FunctionDef)}
    return names


def test_the_notebook_is_stored_without_outputs():
    for cell in cells("code"):
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_each_section_links_the_code_it_exercises_and_the_code_exists():
    sections = [cell.source for cell in cells("markdown") if cell.source.startswith("## ")]
    assert len(sections) >= 12
    for section in sections:
        links = LINK.findall(section)
        assert links, f"no link to transformer/ or training/ in {section.splitlines()[0]!r}"
        for text, path in links:
            assert (ROOT / path).is_file(), path
            _, _, named = text.partition(": ")
            missing = {name for name in named.split(", ") if name} - defined_names(ROOT / path)
            assert not missing, f"{path} has no {sorted(missing)}"


def test_the_rule_finds_a_name_the_code_lacks():
    assert "Transformer.decode" in defined_names(ROOT / "transformer" / "model.py")
    assert "Transformer.nowhere" not in defined_names(ROOT / "transformer" / "model.py")


@pytest.fixture(scope="module")
def executed():
    """The notebook run top to bottom in a fresh kernel (from its own folder, as Jupyter runs it), then asked for its
    checkable values (REPORT)."""
    nbclient = pytest.importorskip(
        "nbclient", reason="nbclient is not installed (pip install -r requirements-test.txt)"
    )
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(REPORT))
    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    return notebook


def text_of(cell):
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def test_the_notebook_runs_and_its_checks_hold(executed):
    assert not [
        o for cell in executed.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"
    ]
    printed = "".join(text_of(cell) for cell in executed.cells if cell.cell_type == "code")
    assert "Warning" not in printed  # e.g. tqdm's TqdmWarning, which importing webapp.notebook printed
    report = json.loads(text_of(executed.cells[-1]))
    assert report["head_check_passed"] is True  # one head by hand == the model's recorded weights (assert_close)
    assert report["argmax_is_greedy"] is True
    assert report["last_loss"] < 0.7 * report["first_loss"]  # the tiny run learnt
    assert report["gradio_imported"] is False  # the views in a notebook import no web framework (webapp.view_json)


def test_the_notebook_shows_the_apps_views(executed):
    shown = [
        output.data["text/html"]
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type in ("execute_result", "display_data") and "text/html" in output.data
    ]
    titles = [re.match(r'<iframe title="([^"]+)" srcdoc=', html).group(1) for html in shown]
    assert sorted(titles) == ["Attention", "Attention", "Inside one head", "Model map"]


# --- The views in Chromium ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return Translator.load(ROOT / "assets" / "model")


@pytest.fixture(scope="module")
def notebook_tab(chromium):
    """One tab for the module's tests (browser_helpers.ReusedTab, with no app): each sets its own content (`frames`),
    a new document as a notebook's output is."""
    from browser_helpers import ReusedTab

    return ReusedTab(chromium, url=None)


@pytest.fixture
def page(notebook_tab):
    return notebook_tab.blank()


def frames(page, *views):
    """Each view's frame, once `views` are on `page` as a notebook shows them (their _repr_html_ one after another)."""
    page.set_content("".join(view._repr_html_() for view in views))
    handles = page.locator("iframe").element_handles()
    assert len(handles) == len(views)
    return [handle.content_frame() for handle in handles]


def drawn_matrix(frame, layer, head):
    """The Attention view's drawn matrix, once it shows `layer` and `head`."""
    frame.wait_for_selector(
        f'#attention-heatmap[data-layer="{layer}"][data-head="{head}"]', state="attached", timeout=WAIT
    )
    return np.array(frame.evaluate("() => document.querySelector('#attention-heatmap canvas').__matrix"), dtype=float)


def app_payload(translator, sentence):
    return translation_payload(translator, inspect(translator, sentence), "greedy")


def test_show_attention_draws_the_apps_numbers_for_the_head_asked(page, shipped):
    (frame,) = frames(page, show_attention(shipped, SENTENCE, kind="encoder", layer=2, head=3))
    drawn = drawn_matrix(frame, 2, 3)
    assert frame.evaluate("() => document.querySelector('#attention-heatmap').dataset.kind") == "encoder"
    payload = app_payload(shipped, SENTENCE)
    np.testing.assert_allclose(drawn, dequantized(payload["attention"]["encoder"])[1, 2], atol=1e-9)
    np.testing.assert_allclose(drawn, inspect(shipped, SENTENCE).encoder_attention[1, 2], atol=1 / 510 + 1e-6)
    assert frame.locator(".view-sentence").text_content() == f"Sentence: “{SENTENCE}” → “{payload['translation']}”"


def test_two_views_on_one_page_keep_their_own_sentence_and_choices(page, shipped):
    first, second = frames(
        page,
        show_attention(shipped, SENTENCE, kind="cross", layer=1, head="mean"),
        show_attention(shipped, OTHER, kind="cross", layer=1, head="mean"),
    )
    maps = {
        sentence: dequantized(app_payload(shipped, sentence)["attention"]["cross"]) for sentence in (SENTENCE, OTHER)
    }
    np.testing.assert_allclose(drawn_matrix(first, 1, "mean"), maps[SENTENCE][0].mean(0), atol=1e-9)
    np.testing.assert_allclose(drawn_matrix(second, 1, "mean"), maps[OTHER][0].mean(0), atol=1e-9)

    first.locator("#layer label").filter(has_text=re.compile(r"^\s*2\s*$")).click()
    np.testing.assert_allclose(drawn_matrix(first, 2, "mean"), maps[SENTENCE][1].mean(0), atol=1e-9)
    np.testing.assert_allclose(drawn_matrix(second, 1, "mean"), maps[OTHER][0].mean(0), atol=1e-9)
    assert second.evaluate("() => translatorStore.get('attention')") == {"kind": "cross", "layer": 1, "head": "mean"}


def drawn_values(frame, name):
    """The numbers Inside one head drew in its figure `name` (inside_head.js: data-values, for the tests)."""
    return np.array(json.loads(frame.locator(f'.ih-matrix[data-name="{name}"] canvas').get_attribute("data-values")))


def test_show_head_draws_the_heads_numbers_and_answers_its_head_radio_in_the_page(page, shipped):
    (frame,) = frames(page, show_head(shipped, SENTENCE, kind="cross", layer=2, head=2))
    frame.wait_for_selector('.inside-head[data-state="drawn"]', state="attached", timeout=WAIT)
    inspection = inspect(shipped, SENTENCE)
    numbers = lambda head: head_details(shipped, inspection, "cross", 1, head, ALL_QUERIES)  # noqa: E731
    np.testing.assert_allclose(drawn_values(frame, "q"), numbers(1).q[:1], atol=1e-4)
    np.testing.assert_allclose(drawn_values(frame, "k"), numbers(1).k, atol=1e-4)

    frame.locator('input[name="ih-head"][value="4"]').click()
    frame.wait_for_function("() => document.querySelector('.ih-title').textContent.includes('head 4')", timeout=WAIT)
    np.testing.assert_allclose(drawn_values(frame, "k"), numbers(3).k, atol=1e-4)
    assert frame.locator("#view-note").is_hidden()

    frame.locator('input[name="ih-layer"][value="1"]').click()  # a layer not computed: the call that shows it
    note = frame.locator("#view-note")
    note.wait_for(state="visible", timeout=WAIT)
    assert note.text_content() == (
        "Not computed for this notebook view: show_head(translator, 'The cat sleeps on the "
        'sofa.\', kind="cross", layer=1, head=4)'
    )


def test_show_map_opens_each_boxs_numbers_and_walks_with_no_server(page, shipped):
    (frame,) = frames(page, show_map(shipped, SENTENCE))
    frame.wait_for_selector('.model-map[data-state="ready"]', state="attached", timeout=WAIT)
    internals = inspect(shipped, SENTENCE).internals
    for box, expected in [
        ("encoder-embedding", internals.encoder.embedding),
        ("decoder-feed-forward", internals.decoder.hidden[0][:1]),
    ]:
        frame.locator(f'.box[data-box="{box}"]').click()
        frame.wait_for_selector(f'.model-map[data-open="{box}"][data-state="drawn"]', state="attached", timeout=WAIT)
        rows = frame.evaluate("() => [...document.querySelectorAll('.map-panel canvas')].find(c => c.__rows).__rows")
        np.testing.assert_allclose(np.array(rows), expected, atol=float(np.abs(expected).max()) / 32767 + 1e-6)
    frame.locator('input[name="map-walk-decoder"][value="1"]').click()  # a walk, its vectors computed with the view
    frame.wait_for_selector('.model-map[data-walk="decoder:1:0"][data-state="drawn"]', state="attached", timeout=WAIT)
    out = frame.locator(".map-walk-out").get_attribute("data-values")
    frame.locator(".map-walk-next").click()
    frame.wait_for_selector('.model-map[data-walk="decoder:1:1"]', state="attached", timeout=WAIT)
    assert frame.locator(".map-walk-in").get_attribute("data-values") == out


def test_the_views_are_whole_documents_that_fetch_nothing(page, shipped):
    views = [show_attention(shipped, OTHER), show_head(shipped, OTHER), show_map(shipped, OTHER)]
    assert not any(re.search(r'<script[^>]*\bsrc=|<link\b|(?:src|href)="https?:', view.document) for view in views)
    requests = []
    page.route("**/*", lambda route: (requests.append(route.request.url), route.abort()))
    drawn = frames(page, *views)
    drawn[0].wait_for_selector("#attention-heatmap canvas:not([hidden])", timeout=WAIT)
    drawn[1].wait_for_selector('.inside-head[data-state="drawn"]', state="attached", timeout=WAIT)
    drawn[2].wait_for_selector('.model-map[data-state="ready"]', state="attached", timeout=WAIT)
    assert requests == []


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda t: show_attention(t, "   "), "Give an English sentence"),
        (lambda t: show_attention(t, SENTENCE, kind="self"), "kind must be one of encoder, decoder, cross, got 'self'"),
        (lambda t: show_head(t, SENTENCE, kind="decoder", layer=4), "layer must be 1..3 for decoder attention, got 4"),
        (lambda t: show_head(t, SENTENCE, head="mean"), "head must be 1..4, got 'mean'"),
        (lambda t: show_attention(t, SENTENCE, head=0), "head must be 1..4 or 'mean' or 'all', got 0"),
    ],
)
def test_a_bad_argument_gets_a_one_line_message(shipped, call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call(shipped)
