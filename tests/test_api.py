"""The HTTP API's functions (webapp/api.py) and what keeps the server lean, in this process: every answer equals the
page's translation of the same text and settings, every bad argument is refused in words that name it and its range,
/inspect's JSON is the inspection's, the page's events are private and refuse inputs the page never sends, heavy
work waits its turn within a budget, and sessions are built on demand and forgotten. Through a running app:
tests/test_app.py."""

import math
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from deploy.routes import check_inputs, input_refusal, make_private
from interpretability import inspect
from interpretability.ablation import ablated
from transformer import Sampling
from web_helpers import served_translator  # noqa: F401 (fixture: served)
from webapp import api, translation

ROOT = Path(__file__).resolve().parents[1]
LONG = "I see the cat and we love the dog. " * 12  # more than the light lane's 40 tokens
SETTINGS = [
    ("greedy", 4, 1.0, 0, 0),
    ("beam", 2, 1.0, 0, 0),
    ("beam", 8, 1.0, 0, 0),
    ("sampling", 4, 1.5, 0, 7),
    ("sampling", 4, 0.7, 3, 2),
]
TEXTS = ["I see the cat.", "we love\nthe dog.", LONG, "Ça va? ☕ 😀", "I love \ud800 books.", "<b>the cat</b>"]


def page_translation(served, text, *settings):
    return translation.translate(served, text, *settings)[0]


@pytest.mark.parametrize("settings", SETTINGS)
def test_every_api_answer_equals_the_pages_translation(served, settings):
    for text in TEXTS:
        assert api.translate(served, text, *settings) == page_translation(served, text, *settings), (text, settings)


def test_light_requests_are_one_hypothesis_of_a_short_text(served):
    assert served.is_light("I see the cat.") and served.is_light("I see the cat.", 1, Sampling())
    assert not served.is_light(LONG) and not served.is_light(LONG, 1, Sampling())
    assert not served.is_light("I see the cat.", 2) and not served.is_light("x", 1, None, [("cross", 0, 0)])


def test_sample_and_ablate_answer_as_the_library_does(served, translator):
    assert api.sample(served, "I see the cat.", 1.5, 0, 7) == translator.translate(
        "I see the cat.", sampling=Sampling(1.5, 0, 7)
    )
    assert api.translate(served, "I see the cat.", "sampling", 4, 1.5, 0, 7) == api.sample(
        served, "I see the cat.", 1.5, 0, 7
    )
    off = ablated(translator, [("cross", 0, 0), ("encoder", 0, 1)])
    heads = ["cross L1 H1", "encoder L1 H2", "cross L1 H1"]  # a repeat counts once
    assert api.ablate(served, "I see the cat.", heads) == off.translate("I see the cat.")
    assert api.ablate(served, "I see the cat.", heads, 3) == off.translate("I see the cat.", beam=3)
    assert api.ablate(served, "I see the cat.", []) == translator.translate("I see the cat.")
    assert api.sample(served, "  ") == api.ablate(served, "", ["cross L1 H1"]) == api.translate(served, "\n") == ""


BAD_ARGUMENTS = [
    (api.sample, ("I see.", 1e39), "temperature must be a number in 0.01..100, got 1e+39"),
    (api.sample, ("I see.", 1e-46), "temperature must be a number in 0.01..100, got 1e-46"),
    (api.sample, ("I see.", math.nan), "temperature must be a number in 0.01..100, got nan"),
    (api.sample, ("I see.", "hot"), "temperature must be a number in 0.01..100, got 'hot'"),
    (api.sample, ("I see.", 1.0, math.inf), "top_k must be a whole number in 0..{vocab}, got inf"),
    (api.sample, ("I see.", 1.0, 2.5), "top_k must be a whole number in 0..{vocab}, got 2.5"),
    (api.sample, ("I see.", 1.0, 0, math.inf), "seed must be a whole number in 0..9223372036854775807, got inf"),
    (api.sample, ("I see.", 1.0, 0, -1), "seed must be a whole number in 0..9223372036854775807, got -1"),
    (api.sample, ("I see.", 1.0, 0, True), "seed must be a whole number in 0..9223372036854775807, got True"),
    (
        api.ablate,
        ("I see.", None),
        "heads must be a list of head names such as ['cross L2 H3', 'encoder L1 H1'], got None",
    ),
    (api.ablate, ("I see.", 5), "heads must be a list of head names"),
    (api.ablate, ("I see.", "cross L1 H1"), "heads must be a list of head names"),
    (api.ablate, ("I see.", [5]), "heads must be a list of head names"),
    (api.ablate, ("I see.", ["cross layer 1"]), "heads: 'cross layer 1' is not a head: write it as"),
    (
        api.ablate,
        ("I see.", ["cross L1 H9"]),
        "heads: 'cross L1 H9' is not a head of this model: its cross heads are L1..L1 H1..H2",
    ),
    (api.ablate, ("I see.", [], 50), "beam must be a whole number in 1..8, got 50"),
    (api.ablate, (5, []), "text must be a string, got int 5"),
    (api.ablate, (["a"], []), "text must be a string, got list ['a']"),
    (api.ablate, ({}, []), "text must be a string, got dict {}"),
    (api.translate, (None,), "text must be a string, got NoneType None"),
    (
        api.translate,
        ("I see.", "sampling", 4, 1.0, 0, math.nan),
        "seed must be a whole number in 0..9223372036854775807, got nan",
    ),
    (api.translate, ("I see.", "beam", 9), "beam must be a whole number in 1..8, got 9"),
    (api.translate, ("I see.", "beam", math.inf), "beam must be a whole number in 1..8, got inf"),
    (api.translate, ("I see.", "nucleus"), "decoding must be one of 'greedy', 'beam', 'sampling', got 'nucleus'"),
    (api.inspect, ("I see.", "greedy", 4, 1.0, 0, 0, 0), "candidates must be a whole number in 1..100, got 0"),
    (api.inspect, ("",), "text is empty"),
]


@pytest.mark.parametrize("endpoint, arguments, message", BAD_ARGUMENTS)
def test_every_bad_argument_is_named_with_its_range(served, endpoint, arguments, message):
    with pytest.raises(gr.Error) as refused:
        endpoint(served, *arguments)
    assert message.replace("{vocab}", str(served.cfg.vocab_size)) in refused.value.message


def test_settings_a_decoding_does_not_use_are_not_read(served, translator):
    """As on the page: a beam width under greedy decoding, or a seed under beam search, changes nothing."""
    assert api.translate(served, "I see the cat.", "greedy", math.nan, None, None, "x") == translator.translate(
        "I see the cat."
    )
    assert api.translate(served, "I see the cat.", "beam", 2.0, "hot") == translator.translate("I see the cat.", beam=2)


def test_inspect_is_the_inspection_as_json(served, translator):
    answer = api.inspect(served, "we love the dog.", "greedy", 4, 1.0, 0, 0, 3)
    alone = inspect(translator, "we love the dog.", top_k=3)
    assert answer["translation"] == alone.translation == api.translate(served, "we love the dog.")
    assert answer["source_tokens"] == alone.source_tokens and answer["target_tokens"] == alone.target_tokens
    for kind in ("encoder", "decoder", "cross"):
        maps = np.array(answer["attention"][kind])
        assert maps.shape == getattr(alone, f"{kind}_attention").shape
        np.testing.assert_allclose(maps, getattr(alone, f"{kind}_attention"), atol=1e-4)
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-3)
        assert all(len(repr(x)) <= 6 for x in maps.ravel().tolist())  # rounded: 0.1234, not 0.12340000271797180
    assert [[token for token, _ in step] for step in answer["candidates"]] == [
        [token for token, _ in step] for step in alone.top_candidates
    ]
    assert answer["input"] == {
        "tokens": len(alone.source_tokens) - 1,
        "unreadable": 0,
        "long": False,
        "truncated": False,
    }
    assert answer["decoding"] == "greedy" and "sampled_from" not in answer
    sampled = api.inspect(served, "we love the dog.", "sampling", 4, 1.5, 2, 7, 5)
    assert sampled["translation"] == api.sample(served, "we love the dog.", 1.5, 2, 7)
    assert all(len(step) <= 2 for step in sampled["sampled_from"])  # top-2 sampling: two tokens to draw from
    beam = api.inspect(served, "we love the dog.", "beam", 3, 1.0, 0, 0, 5)
    assert beam["translation"] == translator.translate("we love the dog.", beam=3)


def test_heavy_work_out_of_budget_says_so(served, monkeypatch):
    monkeypatch.setattr(served, "heavy_budget", 0.0)
    with pytest.raises(gr.Error, match="needed more than the 0 s each heavy request may take"):
        api.translate(served, "I see the cat.", "beam", 2)
    assert api.translate(served, "I see the cat.") == served.translator.translate("I see the cat.")  # light: no budget


def test_the_page_events_become_private_and_check_what_the_page_never_sends():
    def draw(numbers, dims):
        return f"{numbers} {dims}"

    with gr.Blocks() as demo:
        number, dims = gr.Slider(0, 10), gr.Dropdown(list(range(8)), multiselect=True)
        out = gr.Textbox()
        dims.input(draw, [number, dims], out, api_name="translate")
        number.change(draw, [number, dims], out, api_visibility="private")
    made_private = make_private(demo, reserved=api.ENDPOINTS)
    assert made_private == ["translate"]
    assert [(fn.api_name, fn.api_visibility) for fn in demo.fns.values()] == [
        ("page_translate", "private"),
        ("draw", "private"),
    ]
    assert check_inputs(demo) == 2
    fn = next(iter(demo.fns.values())).fn
    assert fn(3.0, [0, 1]) == "3.0 [0, 1]"
    number, dims = next(iter(demo.fns.values())).inputs
    assert input_refusal(number, 3.0) is None and input_refusal(dims, [0, 1]) is None
    assert input_refusal(dims, [0] * 20_000).endswith("each choice at most once, got 20000 with repeats")
    assert input_refusal(number, math.nan).endswith("must be a finite number, got nan")
    assert input_refusal(number, 11).endswith("not a value it offers, got 11")  # Gradio's bounds, said in one line
    assert input_refusal(dims, ["<b>9</b>"]).endswith("not a value it offers, got ['<b>9</b>']")


def test_api_groups_leave_room_for_heavy_requests_beside_light_ones(served):
    with gr.Blocks() as demo:
        api.register(served)
    groups = {fn.api_name: (fn.concurrency_id, fn.concurrency_limit, fn.api_visibility) for fn in demo.fns.values()}
    assert groups == {
        "translate": ("api-translate", served.concurrency, "public"),
        **{name: ("api-heavy", served.batch_size, "public") for name in ("inspect", "sample", "ablate")},
    }
    # a full batch of light requests beside every heavy one the lane holds, running or in line (the rest: refused)
    assert served.concurrency == served.batch_size + served.lane.slots + served.lane.max_waiting
