"""The "Model map" tab (webapp/tabs/model_map.py), its Python side: each box's code panel is the class or function of
transformer/ that computes it, with the lines it has in its file now; the vectors a box's `map_numbers` request sends
are those `interpretability.inspect` recorded for the translation shown, within int16 rounding; a walk's are
`interpretability.walk`'s, to the bit, and a step's logits over the whole vocabulary the recorded ones; a box the
model lacks, or no translation, sends nothing; the view draws from a setup that holds the model's sizes and the code
panels.
What the page draws from them is tested in the browser (tests/test_browser_map.py)."""

import re
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from interpretability import inspect
from interpretability.walk import walk
from modeldir.seen import WordCounts
from web_helpers import answered, mounted, question, served_translator  # noqa: F401 (fixture: served)
from webapp.payload import dequantized
from webapp.tabs import model_map
from webapp.view_json import CODE, code_panels

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "we want the water."
SHOWN = {"text": SENTENCE, "decoding": "greedy", "beam": 1, "temperature": 1.0, "top_k": 0, "seed": 0}


@pytest.fixture(scope="module")
def internals(translator):
    return inspect(translator, SENTENCE).internals


def ask(served, shown=SHOWN, **data):
    return answered(model_map.map_numbers(served, question(shown=shown, translation=3, **data)))


def test_each_code_panel_is_the_functions_lines_in_its_file_now():
    panels = code_panels()
    assert set(panels) == set(CODE)
    for box, sources in panels.items():
        for source in sources:
            lines = (ROOT / source["file"]).read_text(encoding="utf-8").splitlines()
            assert source["lines"] == lines[source["start"] - 1 : source["end"]], (box, source["name"])
            definition = next(line for line in source["lines"] if not line.lstrip().startswith("@"))
            assert re.match(rf"\s*(def|class) {source['name'].split('.')[-1]}\b", definition), (box, definition)
    assert panels["feed-forward"][0]["name"] == "PositionwiseFeedForward"
    assert panels["feed-forward"][0]["file"] == "transformer/model.py"
    assert [s["name"] for s in panels["softmax"]] == ["tempered_distribution", "draw_tokens", "greedy_decode"]


def test_each_stacks_boxes_show_their_own_classes_code():
    """The decoder's "+" and final norm are DecoderLayer's and Decoder's, and the masked self-attention shows where
    its mask is made and applied."""
    names = lambda box: [s["name"] for s in code_panels()[box]]  # noqa: E731
    assert names("encoder residual") == ["SublayerConnection", "EncoderLayer"]
    assert names("decoder residual") == ["SublayerConnection", "DecoderLayer"]
    assert names("encoder final-norm") == ["Encoder"] and names("decoder final-norm") == ["Decoder"]
    masked = code_panels()["masked self-attention"]
    code = "\n".join(line for source in masked for line in source["lines"])
    assert "tgt_mask = causal_mask(" in code and "masked_fill(~mask" in code and "self_attention(h, h, tgt_mask" in code


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_the_vectors_sent_are_the_recorded_ones(served, internals, stack):
    recorded = internals.stack(stack)

    def within(packed, values):  # the int16 rounding: half a step of the largest magnitude sent
        return np.abs(dequantized(packed) - values).max() <= np.abs(values).max() / 65534 + 1e-6

    embedding = ask(served, box="embedding", stack=stack, index=0)
    assert (embedding["translation"], embedding["box"], embedding["stack"]) == (3, "embedding", stack)
    assert within(embedding["rows"], recorded.embedding) and within(embedding["position"], recorded.position)
    last = len(recorded.norm_inputs) - 1  # the stack's final norm
    norm = ask(served, box="norm", stack=stack, index=last)
    assert within(norm["inputs"], recorded.norm_inputs[last]) and within(norm["outputs"], recorded.norm_outputs[last])
    assert np.allclose(norm["gain"], internals.gains[stack][last], atol=1e-4)
    assert np.allclose(norm["bias"], internals.biases[stack][last], atol=1e-4)
    top = len(recorded.hidden) - 1
    ffn = ask(served, box="feed-forward", stack=stack, index=top)
    assert within(ffn["hidden"], recorded.hidden[top])


@pytest.mark.parametrize("stack, position", [("encoder", 1), ("decoder", 2)])
def test_a_walk_sent_is_the_walks_own_numbers(served, translator, stack, position):
    steps = walk(inspect(translator, SENTENCE), translator.model, stack, position)
    sent = ask(served, box="walk", stack=stack, index=position)
    assert (sent["box"], sent["stack"], sent["index"]) == ("walk", stack, position)
    assert [(s["box"], s["layer"], s["kind"]) for s in sent["steps"]] == [(s.box, s.layer, s.kind) for s in steps]
    for mine, theirs in zip(sent["steps"], steps):
        assert np.array_equal(dequantized(mine["output"]), theirs.output.astype(np.float32))  # float32: to the bit
        for name, value in theirs.numbers.items():
            if isinstance(value, np.ndarray) and name != "ids":
                assert np.array_equal(dequantized(mine["numbers"][name]), value.astype(np.float32)), name
    if stack == "decoder":
        tokens = [translator.tokenizer.id_to_token(int(i)) for i in steps[-1].numbers["ids"]]
        assert sent["steps"][-1]["numbers"]["tokens"] == sent["steps"][-2]["numbers"]["tokens"] == tokens
    assert ask(served, box="walk", stack=stack, index=99) is None


def test_the_embedding_shows_how_many_training_pairs_held_each_word(served, translator, monkeypatch):
    counts = WordCounts(0)
    counts.add([("we want the water.", "vogliamo l'acqua.")] * 3 + [("the cat.", "il gatto.")] * 20)
    monkeypatch.setattr(served.directory, "word_counts", counts)
    seen = ask(served, box="embedding", stack="encoder", index=0)["seen"]
    tokens = inspect(translator, SENTENCE).source_tokens
    by_token = dict(zip(tokens, seen["words"]))
    assert seen["pairs"] == 23 and tuple(by_token["▁the"]) == ("the", 23) and by_token["</s>"] is None
    assert seen["rare"][tokens.index("▁the")] is False and seen["rare"][tokens.index("▁want")] is True
    first = ask(served, box="walk", stack="encoder", index=tokens.index("▁want"))["steps"][0]["numbers"]
    assert tuple(first["seen"]["word"]) == ("want", 3) and first["seen"]["rare"] and first["seen"]["pairs"] == 23


def test_a_steps_logits_over_the_whole_vocabulary(served, internals):
    sent = dequantized(ask(served, box="output", stack="decoder", index=1)["sorted"])
    logits = internals.logits[1]
    assert np.array_equal(sent, np.sort(logits[np.isfinite(logits)])[::-1].astype(np.float32))


@pytest.mark.parametrize(
    "asked",
    [
        dict(box="norm", stack="encoder", index=99),
        dict(box="feed-forward", stack="encoder", index=-1),
        dict(box="attention", stack="encoder", index=0),
        dict(box="embedding", stack="sideways", index=0),
    ],
)
def test_a_box_the_model_lacks_sends_nothing(served, asked):
    assert ask(served, **asked) is None


def test_before_a_translation_nothing_is_sent(served):
    assert ask(served, shown=None, box="embedding", stack="encoder", index=0) is None


def test_the_view_draws_from_its_setup_the_models_sizes_and_code(served):
    with gr.Blocks():
        view = model_map.build(served)
    assert mounted(view) == (Path(model_map.__file__).with_suffix(".js"), ["map_numbers"])
    assert 'ask("map_numbers"' in mounted(view)[0].read_text(encoding="utf-8")
    assert callable(view.map_numbers) and view.elem_id == "model-map"
    setup = view.props["setup"]
    assert setup["layers"] == {"encoder": served.cfg.n_encoder_layers, "decoder": served.cfg.n_decoder_layers}
    assert setup["d_k"] == served.cfg.d_model // served.cfg.n_heads and setup["d_ff"] == served.cfg.d_ff
    assert setup["code"] == code_panels()
