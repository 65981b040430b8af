"""The "Decoding step by step" tab in a real browser (tests/browser_helpers.py): drawn in the page from the payload
of each translation, every control answered there with no request to the server (◀, ▶, the slider, five quick clicks),
the numbers the library's; a new sentence resets the step, never showing the old sentence's; the beam under beam
search and the tempered bars under sampling; the attribution asked of the server once, then redrawn in the page."""

import re
import statistics

import numpy as np
import pytest

from browser_helpers import (
    NO_REQUEST_MS,
    WAIT,
    choose_decoding,
    expect,
    joins,
    no_error_shown,
    server_requests,
    translate,
)
from interpretability import beam_trace, inspect
from interpretability.attribution import source_attribution
from transformer import Sampling
from web_helpers import decoding_steps, step_tokens

SENTENCE = "I see the cat."


def open_steps(page):
    page.locator("#tab-steps-button").click()
    expect(page.locator("#step-panel")).to_have_attribute("data-step", "1", timeout=WAIT)


def shown_step(page):
    return int(page.locator("#step-panel").get_attribute("data-step"))


def shown_candidates(page):
    """[(token, [probability per bar])] of the candidate bars, as drawn."""
    rows = page.locator("#step-candidates .bar-row")
    return [
        (
            rows.nth(i).get_attribute("data-token"),
            [float(p) for p in rows.nth(i).locator(".bar-value").evaluate_all("es => es.map(e => e.dataset.p)")],
        )
        for i in range(rows.count())
    ]


def assert_step_shown(page, inspection, step):
    """The panel draws `step` of `inspection`: its chosen token marked, its candidates the library's."""
    assert shown_step(page) == step
    prefix, chosen = step_tokens(inspection, step)
    expect(page.locator("#step-prefix .chip")).to_have_text([*prefix, chosen])
    expect(page.locator("#step-prefix .chip.chosen")).to_have_text(chosen)
    expect(page.locator("#step-candidates figcaption")).to_contain_text(f"Step {step}: top ")
    expect(page.locator("#step-attention figcaption")).to_have_text(
        f"Step {step}: cross-attention while choosing {chosen}"
    )
    shown = shown_candidates(page)
    expected = inspection.top_candidates[step - 1]
    assert [token for token, _ in shown] == [token for token, _ in expected]
    assert np.allclose([p for _, (p,) in shown], [p for _, p in expected], atol=2e-4)
    assert page.locator("#step-candidates .bar-row.chosen th").all_inner_texts() == [chosen]


def test_previous_next_and_the_slider_are_answered_in_the_page(reused_tab, deep_translator):
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    inspection = inspect(deep_translator, SENTENCE)
    open_steps(page)
    requests = server_requests(page)
    assert_step_shown(page, inspection, 1)
    page.locator("#step-view .step-next").click()
    assert_step_shown(page, inspection, 2)
    page.locator("#step-view .step-prev").click()
    page.locator("#step-view .step-prev").click()  # at step 1 already: stays
    assert_step_shown(page, inspection, 1)
    slider = page.locator("#step")
    expect(slider).to_have_attribute("max", str(decoding_steps(inspection)))
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert_step_shown(page, inspection, 4)
    page.keyboard.press("End")
    assert_step_shown(page, inspection, decoding_steps(inspection))  # the last: </s> chosen
    expect(page.locator("#step-beam")).to_be_hidden()  # greedy: no beam
    page.wait_for_timeout(NO_REQUEST_MS)
    assert requests == []


def test_five_quick_next_clicks_land_on_step_six_within_50_ms_each(reused_tab, deep_translator):
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    inspection = inspect(deep_translator, SENTENCE)
    open_steps(page)
    requests = server_requests(page)
    for _ in range(5):
        page.locator("#step-view .step-next").click()
    step = min(6, decoding_steps(inspection))
    assert_step_shown(page, inspection, step)
    # Each click drawn before it returns (the page draws synchronously): the time from click to figure.
    times = page.evaluate("""() => {
        const panel = document.querySelector('#step-view');
        const times = [];
        for (const button of ['.step-prev', '.step-next', '.step-prev', '.step-next', '.step-prev', '.step-next']) {
          const start = performance.now();
          panel.querySelector(button).click();
          times.push(performance.now() - start);
        }
        return times;
    }""")
    print(f"click -> step drawn: {', '.join(f'{t:.1f}' for t in times)} ms")
    assert statistics.median(times) <= 50, times
    assert requests == []


def test_a_new_sentence_resets_the_step_and_clears_the_attribution(reused_tab, deep_translator):
    """At step 6 of a long sentence, a shorter one translated: one request (the translation), no error pop-up, the
    panel at step 1 of the new sentence (never a step of the old one), the attribution of the old one gone."""
    shorts = ["we.", "the cat.", "I.", "cat.", ".", "dog.", "the dog."]
    short = next(s for s in shorts if decoding_steps(inspect(deep_translator, s)) < 6)
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    open_steps(page)
    for _ in range(5):
        page.locator("#step-view .step-next").click()
    assert shown_step(page) == 6
    page.locator("#attribution-panel summary").click()
    expect(page.locator("#attribution")).to_have_attribute("data-step", "6", timeout=WAIT)
    # Every step the panel draws from now on, as it draws it.
    page.evaluate("""() => { window.__drawn = []; new MutationObserver(() => window.__drawn.push([
        document.querySelector('#step-panel').dataset.step, document.querySelector('#step-panel').dataset.steps]))
        .observe(document.querySelector('#step-panel'), {attributes: true}); }""")
    requests = server_requests(page)
    translate(page, short, deep_translator.translate(short))
    inspection = inspect(deep_translator, short)
    expect(page.locator("#step-panel")).to_have_attribute("data-steps", str(decoding_steps(inspection)), timeout=WAIT)
    assert_step_shown(page, inspection, 1)
    expect(page.locator("#step")).to_have_attribute("max", str(decoding_steps(inspection)))
    expect(page.locator("#step-view .step-label")).to_have_text(f"step 1 of {decoding_steps(inspection)}")
    drawn = page.evaluate("window.__drawn")
    assert all(int(step) <= int(steps) for step, steps in drawn), drawn  # never a step beyond the sentence
    expect(page.locator("#attribution")).to_be_hidden()
    expect(page.locator("#step-view .attribution-status")).to_contain_text("A new sentence")
    no_error_shown(page)
    assert len(joins(requests)) == 1, requests  # the translation: no event of this tab ran on it


def test_beam_search_shows_the_beam_step_by_step(page, deep_translator):
    sentence = "we love the dog."
    choose_decoding(page, "Beam search")
    expect(page.locator("#beam input[type=range]")).to_be_enabled(timeout=WAIT)
    expected = deep_translator.translate(sentence, beam=4)
    translate(page, sentence, expected)
    open_steps(page)
    trace = beam_trace(deep_translator, sentence, beam=4)
    beam = page.locator("#step-beam")
    expect(beam).to_be_visible()
    expect(beam).to_contain_text(
        re.compile(r"Winner \(best score ÷ length penalty, α = [\d.]+\): " + re.escape(expected) + " — ")
    )
    requests = server_requests(page)
    steps = decoding_steps(inspect(deep_translator, sentence, beam=4))
    expect(page.locator("#step")).to_have_attribute("max", str(steps))
    for step in range(1, steps + 1):  # the search may go on after the winner ended: the panel has its steps
        if step > 1:
            page.locator("#step-view .step-next").click()
        shown = trace.steps[min(step, len(trace.steps)) - 1]
        expect(beam).to_contain_text(f"Beam after step {step} ({len(shown.live)} of 4 kept")
        live = beam.locator("table.beam").first.locator("tr")
        assert live.count() == len(shown.live) + 1  # a header row, then one row per hypothesis, best first
        for i, h in enumerate(shown.live, start=1):
            cells = live.nth(i).locator("td").all_inner_texts()
            assert cells[1] == (" ".join(h.tokens) or "(empty)") and cells[2] == f"{h.score:.2f}"
            assert cells[3] == ("the most probable" if h.rank == 1 else f"number {h.rank} at its step")
        assert ("No hypothesis ended at this step." in beam.inner_text()) == (not shown.finished)
    assert requests == []


def test_sampling_shows_the_distribution_drawn_from_beside_temperature_one(page, deep_translator):
    temperature, top_k, seed = 1.5, 5, 3
    sampling = Sampling(temperature, top_k, seed)
    choose_decoding(page, "Sampling")
    for elem_id, value in [("temperature", temperature), ("top-k-sampling", top_k)]:
        box = page.locator(f"#{elem_id} input[type=number]")
        expect(box).to_be_enabled(timeout=WAIT)
        box.fill(str(value))
        box.press("Tab")
    page.locator("#seed input").fill(str(seed))
    page.locator("#seed input").press("Tab")
    translate(page, SENTENCE, deep_translator.translate(SENTENCE, sampling=sampling))
    inspection = inspect(deep_translator, SENTENCE, sampling=sampling)
    open_steps(page)
    requests = server_requests(page)
    for step in (1, 2):
        if step == 2:
            page.locator("#step-view .step-next").click()
        expect(page.locator("#step-candidates figcaption")).to_have_text(
            f"Step {step}: the next token drawn at temperature {temperature:g}, top-{top_k} (orange: the one drawn)"
        )
        shown = shown_candidates(page)
        at_one, drawn = dict(inspection.top_candidates[step - 1]), dict(inspection.tempered_candidates[step - 1])
        assert {token for token, _ in shown} == set(at_one) | set(drawn)
        for token, (p_one, p_drawn) in shown:  # two bars a token: temperature 1, then what was drawn from
            assert p_one == pytest.approx(at_one.get(token, 0.0), abs=2e-4)
            assert p_drawn == pytest.approx(drawn.get(token, 0.0), abs=2e-4)
        _, chosen = step_tokens(inspection, step)
        assert page.locator("#step-candidates .bar-row.chosen").get_attribute("data-token") == chosen
    assert requests == []


def test_opening_the_attribution_asks_once_and_steps_redraw_in_the_page(reused_tab, deep_translator):
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    inspection = inspect(deep_translator, SENTENCE)
    open_steps(page)
    figure = page.locator("#attribution")
    expect(figure).to_be_hidden()  # computed only once the panel is open
    requests = server_requests(page)
    page.locator("#attribution-panel summary").click()
    expect(figure).to_have_attribute("data-step", "1", timeout=WAIT)
    expect(figure.locator("figcaption")).to_contain_text("Spearman")
    assert len(joins(requests)) == 1
    expected = source_attribution(deep_translator, inspection)
    requests.clear()
    for step in range(2, decoding_steps(inspection) + 1):
        page.locator("#step-view .step-next").click()
        expect(figure).to_have_attribute("data-step", str(step))
        token = expected.output_tokens[step - 1]
        expect(figure.locator("figcaption")).to_contain_text(
            f"Step {step}: where the decoder looked vs what the choice of {token} depended on"
        )
        rho = expected.agreement[step - 1]
        if not np.isnan(rho):
            expect(figure.locator("figcaption")).to_contain_text(f"(Spearman ρ) {rho:+.2f}")
    page.wait_for_timeout(NO_REQUEST_MS)
    assert requests == []
    page.locator('#step-view input[name="attribution-method"][value="integrated_gradients"]').check()
    expect(figure).to_have_attribute("data-method", "integrated_gradients", timeout=WAIT)
    assert len(joins(requests)) == 1
    page.locator('#step-view input[name="attribution-method"][value="gradient_x_input"]').check()
    expect(figure).to_have_attribute("data-method", "gradient_x_input")  # computed before: drawn from the page
    page.wait_for_timeout(NO_REQUEST_MS)
    assert len(joins(requests)) == 1
