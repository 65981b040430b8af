"""The "Heads: switch off" tab in a real browser (tests/browser_helpers.py): the head diagnostics drawn in the page
from the payload, kind and measure answered there with no request, the numbers the library's; a head clicked opens it
in the Attention tab; switching heads off is one request whose answer, the comparison and the new run's steps, is
drawn in the page; a new translation clears it there."""

import math

from browser_helpers import NO_REQUEST_MS, WAIT, expect, joins, server_requests, translate
from interpretability import inspect
from interpretability.ablation import ablated
from interpretability.diagnostics import head_diagnostics
from web_helpers import decoding_steps, step_tokens
from webapp.tabs.heads import MEASURES

SENTENCE = "I see the cat."


def open_heads(page):
    page.locator("#tab-heads-button").click()
    expect(page.locator("#head-diagnostics .diagnostics-table")).to_have_count(1, timeout=WAIT)


def pick(page, name, value):
    page.locator(f'#head-diagnostics input[name="{name}"][value="{value}"]').check()


def shown_grid(page):
    """(numbers, labels) of the diagnostics grid: rows are layers, columns heads."""
    rows = page.locator("#head-diagnostics .diagnostics-table tr").all()[1:]
    numbers = [row.locator(".diagnostics-number").all_inner_texts() for row in rows]
    labels = [row.locator(".diagnostics-label").all_inner_texts() for row in rows]
    return numbers, labels


def test_kind_and_measure_are_answered_in_the_page_with_the_librarys_numbers(reused_tab, deep_translator):
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    stats = head_diagnostics(inspect(deep_translator, SENTENCE))
    open_heads(page)
    requests = server_requests(page)
    for kind in ["cross", "encoder", "decoder"]:
        pick(page, "diagnosed-kind", kind)
        for measure in MEASURES:
            pick(page, "measure", measure)
            table = page.locator("#head-diagnostics .diagnostics-table")
            expect(table).to_have_attribute("data-kind", kind)
            expect(table).to_have_attribute("data-measure", measure)
            numbers, labels = shown_grid(page)
            values = getattr(stats[kind], measure)
            assert len(numbers) == values.shape[0] and all(len(row) == values.shape[1] for row in numbers)
            for shown_row, row in zip(numbers, values):
                for shown, value in zip(shown_row, row):
                    if math.isnan(value):
                        assert shown == "–"
                    else:
                        assert abs(float(shown) - value) <= 0.0051, (kind, measure, shown, value)
            assert labels == stats[kind].labels
        expect(page.locator("#head-diagnostics caption")).to_contain_text(f": {MEASURES['alignment']}, per head")
    page.wait_for_timeout(NO_REQUEST_MS)
    assert requests == []


def test_a_head_clicked_opens_it_in_the_attention_tab(page):
    """The click writes the store's "attention" (that kind, layer and head, 1-based: what attention.js shows) and
    "tab" (the Attention tab, opened)."""
    open_heads(page)
    page.evaluate("""() => { window.__shown = [];
        window.translatorStore.on("attention", (head) => window.__shown.push(head)); window.__shown = []; }""")
    pick(page, "diagnosed-kind", "encoder")
    page.locator('#head-diagnostics .diagnostics-cell[data-layer="2"][data-head="1"]').click()
    expect(page.get_by_role("tab", name="Attention", exact=True)).to_have_attribute(
        "aria-selected", "true", timeout=10_000
    )
    assert page.evaluate("window.__shown") == [{"kind": "encoder", "layer": 2, "head": 1}]
    expect(page.locator("#attention-heatmap .attn-title")).to_contain_text("Encoder self-attention · layer 2 · head 1")


def test_switching_heads_off_shows_the_comparison_and_its_steps_then_a_translation_clears_it(
    reused_tab, deep_translator
):
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    open_heads(page)
    result, steps = page.locator("#ablation-result"), page.locator("#ablation-steps")
    expect(result).to_contain_text("No heads switched off yet for this sentence. Tick one or more heads")
    expect(steps).to_be_hidden()
    heads = [("cross", layer, head) for layer in range(3) for head in range(2)]  # every cross head: the source unseen
    for _, layer, head in heads:
        page.locator("#off-cross").get_by_text(f"L{layer + 1} H{head + 1}", exact=True).click()
    requests = server_requests(page)
    page.locator("#ablate").click()
    expect(result).to_contain_text("Heads switched off: cross L1 H1, cross L1 H2", timeout=WAIT)
    assert len(joins(requests)) == 1
    off_translator = ablated(deep_translator, heads)
    expect(result).to_contain_text(f"Normal: {deep_translator.translate(SENTENCE)}")
    expect(result).to_contain_text(f"With the heads off: {off_translator.translate(SENTENCE)}")
    expect(steps).to_be_visible()
    off = inspect(off_translator, SENTENCE)
    panel = page.locator("#ablation-step-panel")
    expect(panel).to_have_attribute("data-steps", str(decoding_steps(off)))
    requests.clear()
    for step in (1, 2):
        if step == 2:
            page.locator("#ablation-result .step-next").click()
        expect(panel).to_have_attribute("data-step", str(step))
        expect(page.locator("#ablation-step-prefix .chip.chosen")).to_have_text(step_tokens(off, step)[1])
        expect(page.locator("#ablation-step-candidates figcaption")).to_contain_text(f"Step {step}: top ")
        shown = page.locator("#ablation-step-candidates .bar-row").evaluate_all(
            "rows => rows.map(r => r.dataset.token)"
        )
        assert shown == [token for token, _ in off.top_candidates[step - 1]]
    assert requests == []

    other = "we love the dog."
    translate(page, other, deep_translator.translate(other))
    expect(result).to_contain_text("No heads switched off yet for this sentence.", timeout=WAIT)
    expect(result).not_to_contain_text("Normal:")
    expect(steps).to_be_hidden()
    assert len(joins(requests)) == 1, requests  # the translation alone: no event of this tab ran on it
