"""The "How it learned" tab: which training histories it offers (the model's own when it starts at step 0; else a
from-scratch run of the same architecture, said plainly, then the model's own part), what it sends the page, and in a
real browser: the history arrives once, and every control after that is drawn in the page with no request."""

import copy
from pathlib import Path

import pytest

from modeldir.directory import ModelDirectory, open_model
from webapp.tabs.how_it_learned import learning_runs


@pytest.fixture(scope="module")
def history(tiny_model_dir):
    return open_model(tiny_model_dir).history


def later_part(history, first_step):
    """`history` as if its model had been trained by earlier parts that recorded nothing: steps start later."""
    later = copy.deepcopy(history)
    for snapshot in later["snapshots"]:
        snapshot["step"] += first_step
    return later


def test_a_history_from_step_zero_is_shown_as_the_models_own(history):
    (run,) = learning_runs(ModelDirectory(None, Path("."), history=history))
    assert run["note"].startswith("This model's own training, recorded from step 0")
    assert [s["step"] for s in run["snapshots"]] == [s["step"] for s in history["snapshots"]]
    assert set(run["snapshots"][0]) == {"step", "minutes", "train_loss", "dev_bleu", "probes"}  # no timings sent
    assert run["probes"] == history["probes"] and run["curve"] == history["curve"]


def test_a_history_that_starts_later_comes_after_a_from_scratch_run_said_plainly(history):
    own = later_part(history, 20_000)
    reference, mine = learning_runs(ModelDirectory(None, Path("."), history=own, reference_history=history))
    assert reference["note"].startswith(
        "Not this model's own history: a model of the same architecture, trained from scratch"
    )
    assert "training.train" in reference["note"] and reference["snapshots"][0]["step"] == 0
    assert mine["label"] == "this model, from step 20,000" and "recorded no snapshots" in mine["note"]


def test_without_any_history_the_tab_offers_none():
    assert learning_runs(ModelDirectory(None, Path("."))) == []


def test_the_page_gets_the_history_once_and_draws_every_control_itself(tab, browser, deep_model_dir):
    from browser_helpers import WAIT, expect, page_point, server_requests, translated  # here: skips without Chromium

    history = open_model(deep_model_dir).history  # the model of the browser tests' app (conftest.py: browser)
    last = history["snapshots"][-1]
    page = tab()
    page.goto(browser.app_url)
    page.locator("#tab-learned-button").click()
    view = page.locator("#how-it-learned .learn")
    expect(view).to_have_attribute("data-ready", "true", timeout=WAIT)
    assert view.get_attribute("data-step") == str(last["step"])  # the last snapshot first
    translated(page)  # the example on load
    page.wait_for_timeout(1000)  # and the views it draws
    requests = server_requests(page)
    slider = page.locator("#how-it-learned .learn-step")
    slider.evaluate("e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    assert view.get_attribute("data-step") == "0"
    first_probe = history["snapshots"][0]["probes"][0]
    assert page.locator("#how-it-learned .learn-text").inner_text() == first_probe["translation"]
    canvas = page.locator("#how-it-learned canvas.learn-map")
    rows, cols = canvas.evaluate("c => [c.__matrix.length, c.__matrix[0].length]")
    assert (rows, cols) == (len(first_probe["target_tokens"]), len(first_probe["source_tokens"]))
    page.locator("#how-it-learned .learn-probe").select_option("1")
    page.locator("#how-it-learned .learn-layer").select_option("0")
    page.locator("#how-it-learned .learn-head").select_option("1")
    page.locator("#how-it-learned .learn-next").click()
    assert view.get_attribute("data-step") == str(history["snapshots"][1]["step"])
    second = history["snapshots"][1]["probes"][1]
    assert page.locator("#how-it-learned .learn-text").inner_text() == second["translation"]
    weight = second["cross_attention"][0][1][0][0]  # layer 1, head 2, first row and column
    assert canvas.evaluate("c => c.__matrix[0][0]") == pytest.approx(weight, abs=1e-6)
    box = canvas.evaluate("c => c.__box")  # the mouse over the first cell reads its weight
    page.mouse.move(*page_point(canvas, box["left"] + box["cell"] / 2, box["top"] + box["cell"] / 2))
    read, shown = canvas.get_attribute("title").rsplit(": ", 1)
    assert read == f"{second['target_tokens'][0]} → {second['source_tokens'][0]}"
    assert float(shown) == pytest.approx(weight, abs=0.006)  # two decimals (JavaScript rounds its own way)
    page.locator("#how-it-learned .learn-play").click()  # plays to the end, a snapshot every 0.9 s
    expect(view).to_have_attribute("data-step", str(last["step"]), timeout=WAIT)
    assert requests == []  # every redraw above was made in the page
