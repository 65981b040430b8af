"""The "Positional encoding" tab (webapp/tabs/positions.py): what is left in Python is the table the page asks for once
(the model's own sinusoidal encoding, in both precisions the app runs it in, to 4 decimals and small enough to send)
and the view that draws it, with no Python event of its own. Its drawing is tested in a real browser
(tests/test_browser_positions.py)."""

import json
from types import SimpleNamespace

import gradio as gr
import numpy as np

from interpretability import positional_encoding
from web_helpers import mounted, served_translator, translator_in_each_precision  # noqa: F401
from webapp.payload import dequantized
from webapp.tabs import positions


def test_the_table_is_the_models_encoding_to_four_decimals(translator):
    table = positions.encoding_table(translator.model)
    pe = positional_encoding(translator.model)
    cfg = translator.model.cfg
    assert table["shape"] == [cfg.max_len, cfg.d_model] == list(pe.shape)
    values = dequantized(table)
    assert np.abs(values - pe).max() <= 0.5 / positions.SCALE + 1e-7
    assert np.abs(values - pe).max() > 0  # rounded: not the float32 bytes themselves
    assert values[0, 1] == 1.0 and values[0, 0] == 0.0  # PE(0) = (sin 0, cos 0, ...)


def test_the_shipped_models_table_is_under_100_kb_of_json():
    """128 positions × 256 dimensions: two bytes a value, 87 kB once base64 in JSON."""
    model = SimpleNamespace(cfg=SimpleNamespace(max_len=128, d_model=256))
    size = len(json.dumps(positions.encoding_table(model)))
    assert 85_000 < size < 90_000


def test_the_first_dimensions_plotted_go_from_fast_to_slow():
    assert positions.default_dims(256) == [0, 32, 64, 65]
    assert positions.default_dims(32) == [0, 4, 8, 9]
    assert positions.default_dims(4) == [0, 1, 2]  # never past the last dimension


def test_the_tab_is_one_view_with_no_python_event(served):
    """Nothing of this tab runs on a translation or on a control change: its one server function sends the table."""
    with gr.Blocks() as demo:
        view = positions.build(served)
    assert not demo.fns  # no event at all
    assert view.elem_id == "positional-encoding"
    assert [fn.__name__ for fn in view.server_fns] == ["positional_table"]
    table = json.loads(view.server_fns[0]().body)  # JSON encoded once, at start (views.prepared_json)
    assert np.allclose(dequantized(table), positional_encoding(served.translator.model), atol=5e-5)
    # encoded once, when the page was built: every call answers the same bytes
    assert view.server_fns[0]("anything the page passes").body is view.server_fns[0]().body
    assert view.props["setup"] == {"dims": "0, 4, 8, 9", "last": 31}  # the tiny model's d_model 32
    script = mounted(view)[0].read_text(encoding="utf-8")
    assert 'value="${dims}"' in script  # the dimensions' box starts with them
    assert 'store.on("translation"' in script and 'ask("positional_table")' in script
    markdown = [block for block in demo.blocks.values() if isinstance(block, gr.Markdown)]
    assert [m.value for m in markdown] == [positions.POSITION_HELP]  # the tab's explanation kept
