"""The "Model map" tab in a real browser (webapp/tabs/model_map.py + .js): the map draws this model's layers; each box
opens numbers equal to the model's for the sentence translated (an embedding row, a layer norm's output, the
feed-forward's hidden units, the output layer's logits), asking the server at most once per box and translation; the
page's softmax at a temperature is softmax(logits / T) of the whole vocabulary for every token it shows; each code
panel shows the right function with its real line numbers; an attention box opens the Attention tab at its layer;
top-k and top-p count the whole vocabulary; a layer norm's normalised row is computed; "Follow a token" walks a token
through every box, each box's input the previous box's output, with one request."""

import inspect as python_inspect
import json
from pathlib import Path

import numpy as np
import pytest

from browser_helpers import NO_REQUEST_MS, WAIT, expect, no_error_shown, open_tab
from interpretability import inspect
from transformer import model as transformer_model

ROOT = Path(__file__).resolve().parents[1]
VIEW = "#model-map .model-map"
SENTENCE = "we want the water."


@pytest.fixture(scope="module")
def recorded(deep_translator):
    """(inspection, internals) of SENTENCE by the model the page runs."""
    inspection = inspect(deep_translator, SENTENCE)
    return inspection, inspection.internals


@pytest.fixture
def shown(reused_tab, deep_translator, recorded):
    """The page opened at SENTENCE's link on the map's tab: SENTENCE translated, the map shown."""
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE), tab="map")
    expect(page.locator(f"{VIEW} .map-svg .box").first).to_be_visible(timeout=WAIT)
    # the map drawn from this sentence's payload, not from the one the reused tab showed before
    expect(page.locator("#model-map .view-sentence")).to_contain_text(f"“{SENTENCE}”", timeout=WAIT)
    return page


def open_box(page, box):
    page.locator(f'{VIEW} [data-box="{box}"]').click()
    expect(page.locator(VIEW)).to_have_attribute("data-open", box, timeout=WAIT)
    expect(page.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)


def choose(page, name, value):
    page.locator(f'{VIEW} input[name="{name}"][value="{value}"]').click()
    expect(page.locator(f'{VIEW} input[name="{name}"][value="{value}"]')).to_be_checked()
    expect(page.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)


def drawn_rows(page, canvas):
    return np.array(page.locator(f"{VIEW} canvas.{canvas}").evaluate("c => c.__rows"))


def close_to(shown, expected, sent=None):
    """Within the int16 rounding the vectors travel in (`view_json.packed_vectors`: 1/65,534 of the largest magnitude
    of what was `sent`, by default `expected` itself)."""
    sent = expected if sent is None else sent
    return np.abs(shown - expected).max() <= np.abs(sent).max() / 65534 + 1e-5


def number(text):
    """A number as the page writes it (a minus sign for negatives; after a bar, its last word)."""
    return float(text.split()[-1].replace("−", "-"))


def map_requests(page):
    """The queue joins of the map's `map_numbers` event, from now on."""
    fn = page.evaluate("""() => window.gradio_config.dependencies.find((d) =>
        d.targets.some(([, name]) => name === "map_numbers")).id""")
    sent = []
    page.on(
        "request",
        lambda r: (
            "/queue/join" in r.url and json.loads(r.post_data or "{}").get("fn_index") == fn and sent.append(r.url)
        ),
    )
    return sent


def test_the_map_draws_this_models_layers_and_shapes(shown, deep_translator, recorded):
    inspection, _ = recorded
    cfg = deep_translator.model.cfg
    boxes = shown.locator(f"{VIEW} .map-svg .box")
    # per stack its embedding, + PE and final norm; per sublayer of its layer (drawn once, N×) its norm, itself and
    # its add; linear and softmax
    assert boxes.count() == 2 * 3 + 3 * (2 + 3) + 2
    text = shown.locator(f"{VIEW} .map-svg").text_content()
    assert f"{cfg.n_encoder_layers}× encoder layer" in text and f"{cfg.n_decoder_layers}× decoder layer" in text
    assert f"(1, {len(inspection.source_tokens)}, {cfg.d_model})" in text
    assert f"(1, {len(inspection.target_tokens)}, {cfg.vocab_size})" in text
    assert "pre-norm" in shown.locator(f"{VIEW} .map-norm-note").text_content()
    no_error_shown(shown)


def test_embedding_norm_and_feed_forward_boxes_show_the_models_numbers(shown, recorded):
    _, internals = recorded
    requests = map_requests(shown)
    open_box(shown, "encoder-embedding")
    assert close_to(drawn_rows(shown, "map-embedding"), internals.encoder.embedding)
    cells = shown.locator(f"{VIEW} .map-panel table.map-table tbody tr").first.locator("td").all_inner_texts()
    assert number(cells[2]) == pytest.approx(np.linalg.norm(internals.encoder.embedding[0]) * internals.scale, abs=2e-3)
    open_box(shown, "encoder-position")  # its own panel, from the same vectors
    assert close_to(drawn_rows(shown, "map-position"), internals.encoder.position)
    cells = shown.locator(f"{VIEW} .map-panel table.map-table tbody tr").first.locator("td").all_inner_texts()
    assert number(cells[3]) == pytest.approx(np.linalg.norm(internals.encoder.stream[0][0]), abs=2e-3)

    open_box(shown, "encoder-norm-feed-forward")
    choose(shown, "map-layer", 2)
    choose(shown, "map-token", 2)
    index = 2 * 1 + 1  # layer 2's norm before its feed-forward: sublayers in order, two per encoder layer
    before, after = drawn_rows(shown, "map-norm")[:2]
    assert close_to(before, internals.encoder.norm_inputs[index][2], internals.encoder.norm_inputs[index])
    assert close_to(after, internals.encoder.norm_outputs[index][2], internals.encoder.norm_outputs[index])
    stats = shown.locator(f"{VIEW} .map-panel table.map-table tbody tr").first.locator("td").all_inner_texts()
    assert number(stats[1]) == pytest.approx(internals.encoder.norm_inputs[index][2].mean(), abs=2e-3)
    assert number(stats[2]) == pytest.approx(internals.encoder.norm_inputs[index][2].std(), abs=2e-3)

    open_box(shown, "decoder-feed-forward")
    choose(shown, "map-layer", 3)
    choose(shown, "map-token", 1)
    hidden = internals.decoder.hidden[2][1]
    assert close_to(drawn_rows(shown, "map-hidden")[0], hidden, internals.decoder.hidden[2])
    assert (
        f"{np.count_nonzero(hidden)} of {hidden.size} units fire"
        in shown.locator(f"{VIEW} .map-ffn-summary").text_content()
    )
    asked = len(requests)
    assert asked == 5  # one per box and layer shown: embedding; a norm in layers 1, 2; the feed-forward in 1, 3
    open_box(shown, "encoder-embedding")  # opened before for this translation: drawn with no request
    shown.wait_for_timeout(NO_REQUEST_MS)
    assert len(requests) == asked


def test_the_pages_softmax_at_a_temperature_and_its_top_k_are_the_models(shown, recorded):
    """softmax(logits / T) of the whole vocabulary at each temperature; top-k keeps k tokens and renormalises."""
    _, internals = recorded
    open_box(shown, "softmax")
    step = 1
    choose(shown, "map-step", step)

    def table():
        return [
            row.locator("td").all_inner_texts() for row in shown.locator(f"{VIEW} .map-output-table tbody tr").all()
        ]

    for temperature in (0.5, 1.0, 2.0):
        shown.locator(f"{VIEW} .map-temperature").fill(str(temperature))
        expect(shown.locator(f"{VIEW} .map-t")).to_have_text(f"{temperature:.1f}")
        rows = table()
        logits = internals.logits[step].astype(np.float64)
        probs = np.exp(logits / temperature - np.logaddexp.reduce(logits / temperature))  # the whole vocabulary
        order = np.argsort(-logits)[: len(rows)]
        assert [number(r[1]) for r in rows] == pytest.approx(logits[order].tolist(), abs=1e-3)
        assert [number(r[2]) for r in rows] == pytest.approx(probs[order].tolist(), abs=2e-4)
        assert rows[0][0].endswith("← greedy")

    shown.locator(f"{VIEW} .map-topk").fill("3")
    rows = table()
    kept = [number(r[3]) for r in rows if r[3] != "cut"]
    assert len(kept) == 3 and sum(kept) == pytest.approx(1, abs=2e-3)
    at_t = [number(r[2]) for r in rows[:3]]
    assert kept == pytest.approx([p / sum(at_t) for p in at_t], abs=2e-3)


def test_each_code_panel_shows_the_function_with_its_real_line_numbers(shown):
    file_lines = (ROOT / "transformer/model.py").read_text(encoding="utf-8").splitlines()
    for box, obj in [
        ("decoder-feed-forward", transformer_model.PositionwiseFeedForward),
        ("encoder-norm-self-attention", transformer_model.SublayerConnection),
        ("decoder-embedding", transformer_model.InputEmbedding),
    ]:
        open_box(shown, box)
        lines, start = python_inspect.getsourcelines(obj)
        summary = shown.locator(f"{VIEW} details.map-code summary").first.text_content()
        assert obj.__name__ in summary and f"transformer/model.py, lines {start}–{start + len(lines) - 1}" in summary
        code = shown.locator(f"{VIEW} pre.map-source").first
        numbers = code.locator(".ln").all_inner_texts()
        assert numbers[0] == str(start) and len(numbers) == len(lines)
        assert code.text_content().splitlines()[1] == f"{start + 1}{file_lines[start]}"


def test_an_attention_box_opens_the_attention_tabs_at_its_layer(shown):
    open_box(shown, "decoder-cross-attention")
    choose(shown, "map-layer", 2)
    shown.locator(f'{VIEW} button.map-show[data-tab="attention"]').click()
    expect(shown.get_by_role("tab", name="Attention", exact=True)).to_have_attribute("aria-selected", "true")
    figure = shown.locator("#attention-heatmap")
    expect(figure).to_have_attribute("data-kind", "cross", timeout=WAIT)
    expect(figure).to_have_attribute("data-layer", "2", timeout=WAIT)
    open_tab(shown, "Model map")
    shown.locator(f'{VIEW} button.map-show[data-tab="head"]').click()
    expect(shown.get_by_role("tab", name="Inside one head", exact=True)).to_have_attribute("aria-selected", "true")
    for name, value in [("ih-kind", "cross"), ("ih-layer", "2")]:
        expect(shown.locator(f'#inside-head input[name="{name}"][value="{value}"]')).to_be_checked()
    expect(shown.locator("#inside-head .inside-head")).to_have_attribute("data-state", "drawn", timeout=WAIT)


def nucleus(logits, temperature, top_p, top_k=0):
    """(tokens kept, their probability) by top-k, then top-p over what top-k kept (renormalised), over the whole
    vocabulary: what the page must show."""
    finite = np.sort(logits[np.isfinite(logits)].astype(np.float64))[::-1] / temperature
    probs = np.exp(finite - np.logaddexp.reduce(finite))
    k = top_k if 0 < top_k < len(probs) else len(probs)
    sums = np.cumsum(probs[:k])
    kept = k if top_p >= 1 else int(np.argmax(sums >= top_p * sums[-1] - 1e-12)) + 1
    return kept, sums[kept - 1]


def test_top_p_and_top_k_are_exact_over_the_whole_vocabulary(shown, recorded):
    """The nucleus and a top-k past the 50 tokens shown are counted over the whole vocabulary (one request for the
    step's logits); at top-p 1 nothing is cut, however low the temperature."""
    _, internals = recorded
    requests = map_requests(shown)
    open_box(shown, "softmax")
    step = 1
    choose(shown, "map-step", step)
    note = shown.locator(f"{VIEW} .map-output-note")

    def rows():
        return [
            row.locator("td").all_inner_texts()  # noqa: E731
            for row in shown.locator(f"{VIEW} .map-output-table tbody tr").all()
        ]

    shown.locator(f"{VIEW} .map-temperature").fill("0.1")
    expect(shown.locator(f"{VIEW} .map-t")).to_have_text("0.1")
    assert not [r for r in rows() if r[3] == "cut"]  # top-k 0, top-p 1: every token kept
    assert len(requests) == 0

    logits = internals.logits[step]
    for temperature, top_p, top_k in [(1.0, 0.95, 0), (1.0, 1.0, 60), (2.0, 0.9, 70)]:
        shown.locator(f"{VIEW} .map-temperature").fill(str(temperature))
        shown.locator(f"{VIEW} .map-topk").fill(str(top_k))
        shown.locator(f"{VIEW} .map-topp").fill(str(top_p))
        kept, mass = nucleus(logits, temperature, top_p, top_k)
        expect(note).to_have_attribute("data-kept", str(kept), timeout=WAIT)
        assert float(note.get_attribute("data-mass")) == pytest.approx(mass, abs=1e-4)
        table = rows()
        assert all((r[3] == "cut") == (i >= kept) for i, r in enumerate(table))
        shown_kept = [number(r[3]) for r in table if r[3] != "cut"]
        assert sum(shown_kept) == pytest.approx(min(1, sum(number(r[2]) for r in table[:kept]) / mass), abs=2e-3)
    assert len(requests) <= 1  # the step's logits over the whole vocabulary, once


def test_the_normalised_row_of_a_layer_norm_is_computed(shown, recorded):
    _, internals = recorded
    open_box(shown, "encoder-norm-self-attention")
    x = internals.encoder.norm_inputs[0][0].astype(np.float64)
    normalised = (x - x.mean()) / np.sqrt(x.var() + internals.eps)
    row = shown.locator(f"{VIEW} .map-panel table.map-table tbody tr").nth(1).locator("td").all_inner_texts()
    assert number(row[1]) == pytest.approx(normalised.mean(), abs=2e-3)
    assert number(row[2]) == pytest.approx(normalised.std(), abs=2e-3)


def walk_values(page, which):
    return page.locator(f"{VIEW} .map-walk-{which}").get_attribute("data-values")


def test_follow_a_token_through_every_box(shown, deep_translator, recorded):
    """Next and → go box by box, lighting the box and the arrows into it, each box's input the previous box's
    output; Previous and ← go back; one request for the token's vectors, none after; an Italian step ends on the
    output layer computing h · E[token], the model's logits."""
    inspection, internals = recorded
    cfg = deep_translator.model.cfg
    requests = map_requests(shown)
    shown.locator(f'{VIEW} input[name="map-walk-encoder"][value="2"]').click()
    expect(shown.locator(VIEW)).to_have_attribute("data-walk", "encoder:2:0", timeout=WAIT)
    expect(shown.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    assert shown.locator(VIEW).get_attribute("data-open") == "encoder-embedding"
    boxes = (
        ["encoder-embedding", "encoder-position"]
        + [
            f"encoder-{what}"
            for _ in range(cfg.n_encoder_layers)
            for kind in ("self-attention", "feed-forward")
            for what in (f"norm-{kind}", kind, f"add-{kind}")
        ]
        + ["encoder-final-norm"]
    )
    for i in range(1, len(boxes)):
        before = walk_values(shown, "out")
        if i % 2:
            shown.locator(f"{VIEW} .map-walk-next").click()
        else:
            shown.keyboard.press("ArrowRight")
        expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"encoder:2:{i}")
        assert shown.locator(VIEW).get_attribute("data-open") == boxes[i]
        assert walk_values(shown, "in") == before  # the vector that came out of the box before
        lit = shown.locator(f"{VIEW} .arrow.lit")
        assert lit.count() >= 1 and {lit.nth(j).get_attribute("data-to") for j in range(lit.count())} == {boxes[i]}
    last = np.array([float(v) for v in walk_values(shown, "out").split()])
    assert last == pytest.approx(internals.encoder.norm_outputs[-1][2][:6], abs=1e-4)  # the encoder's memory row
    shown.keyboard.press("ArrowLeft")
    expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"encoder:2:{len(boxes) - 2}")
    shown.locator(f"{VIEW} .map-walk-prev").click()
    expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"encoder:2:{len(boxes) - 3}")
    assert len(requests) == 1

    step = 1
    shown.locator(f'{VIEW} input[name="map-walk-decoder"][value="{step}"]').click()
    expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"decoder:{step}:0", timeout=WAIT)
    expect(shown.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    total = 2 + 3 * 3 * cfg.n_decoder_layers + 3
    for i in range(1, total):
        shown.keyboard.press("ArrowRight")
        expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"decoder:{step}:{i}")
        if i == total - 2:
            assert shown.locator(VIEW).get_attribute("data-open") == "linear"
            rows = [r.locator("td").all_inner_texts() for r in shown.locator(f"{VIEW} .map-panel tbody tr").all()]
            logits = internals.logits[step]
            top = np.sort(logits)[::-1][: len(rows)]
            assert [number(r[1]) for r in rows] == pytest.approx(top.tolist(), abs=1e-3)  # h · E[token]
            assert [number(r[2]) for r in rows] == pytest.approx(top.tolist(), abs=1e-3)
    assert shown.locator(VIEW).get_attribute("data-open") == "softmax"
    shown.keyboard.press("ArrowRight")  # the last box: stays
    expect(shown.locator(VIEW)).to_have_attribute("data-walk", f"decoder:{step}:{total - 1}")
    assert len(requests) == 2
    no_error_shown(shown)


def test_a_walks_attention_box_shows_the_tokens_weights_per_head(shown, recorded):
    inspection, _ = recorded
    shown.locator(f'{VIEW} input[name="map-walk-decoder"][value="2"]').click()
    expect(shown.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    for _ in range(3):  # embedding, + PE, norm: then the masked self-attention of layer 1
        shown.keyboard.press("ArrowRight")
    expect(shown.locator(VIEW)).to_have_attribute("data-open", "decoder-masked-self-attention")
    weights = np.array(shown.locator(f"{VIEW} canvas.map-walk-weights").evaluate("c => c.__matrix"))
    assert weights == pytest.approx(inspection.decoder_attention[0, :, 2, :3], abs=1e-5)
    shown.locator(f'{VIEW} button.map-show[data-tab="attention"]').click()
    expect(shown.locator("#attention-heatmap")).to_have_attribute("data-kind", "decoder", timeout=WAIT)
