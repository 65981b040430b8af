"""The app's own package (webapp/): plotly views that show the model's numbers under every token's label, PNG
figures with the right titles and labels and no figures left behind; HTML chips; a model card that survives any
metrics.json; help texts that work as written. And the model library (transformer/) holds none of it."""

import ast
import gc
import html
import io
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from transformer import Translator
from webapp import figures, interactive, texts, views
from webapp.downloads import Downloads
from interpretability import embedding_norms, inspect, positional_encoding

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=["float32", "float16"])
def translator(request, tiny_model_dir):
    """The tiny model in both precisions the app can run it in (MODEL_DTYPE)."""
    return Translator.load(tiny_model_dir, dtype=request.param)


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, "I see the cat.")


@pytest.fixture(scope="module")
def pe(translator):
    return positional_encoding(translator.model)


def tick_labels(axis):
    return [t.get_text() for t in axis.get_ticklabels()]


def heatmap_axes(fig):
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def assert_renders(fig):
    image = Image.open(io.BytesIO(figures.to_png(fig)))
    width, height = fig.get_size_inches() * fig.dpi
    assert image.format == "PNG" and image.size == (round(width), round(height))
    assert np.asarray(image.convert("RGB")).std() > 0  # something was drawn


@pytest.mark.parametrize("kind, head", [("encoder", 0), ("decoder", 1), ("cross", "mean")])
def test_attention_heatmap_labels_are_the_tokens(inspection, kind, head):
    fig = figures.attention_figure(inspection, kind, 0, head)
    maps, queries, keys = views.attention_maps(inspection, kind)
    (ax,) = heatmap_axes(fig)
    assert ax.get_title() == f"{views.ATTENTION_KINDS[kind].title} · layer 1 · {views.head_label(head)}"
    assert tick_labels(ax.xaxis) == keys and tick_labels(ax.yaxis) == queries
    assert "Key" in ax.get_xlabel() and "(columns)" in ax.get_xlabel()
    assert "Query" in ax.get_ylabel() and "(rows)" in ax.get_ylabel()
    shown = np.ma.filled(ax.images[0].get_array(), np.nan)
    masked = views.causal_masked(maps[0], kind)  # decoder self-attention: future positions NaN, drawn grey
    assert np.allclose(shown, masked.mean(axis=0) if head == "mean" else masked[head], equal_nan=True)
    assert np.isnan(shown).any() == (kind == "decoder")
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert_renders(fig)


def test_attention_sides_and_languages(inspection):
    _, queries, keys = views.attention_maps(inspection, "cross")
    assert queries == inspection.target_tokens and keys == inspection.source_tokens
    ax = heatmap_axes(figures.attention_figure(inspection, "cross", 0, "mean"))[0]
    assert "English" in ax.get_xlabel() and "Italian" in ax.get_ylabel()


def test_all_heads_grid(inspection, translator):
    fig = figures.attention_figure(inspection, "encoder", 0, "all")
    axes = heatmap_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"head {h + 1}" for h in range(translator.model.cfg.n_heads)]
    assert tick_labels(axes[0].yaxis) == inspection.source_tokens
    assert tick_labels(axes[-1].xaxis) == inspection.source_tokens
    assert fig.get_suptitle() == "Encoder self-attention · layer 1 · all heads"
    assert_renders(fig)


def plotted_ticks(axis):
    return [html.unescape(t) for t in axis.ticktext]


@pytest.mark.parametrize("kind, head", [("encoder", 0), ("decoder", 1), ("cross", "mean")])
def test_interactive_heatmap_is_the_weights_labelled_by_the_tokens(inspection, kind, head):
    fig = interactive.attention_plot(inspection, kind, 0, head)
    maps, queries, keys = views.attention_maps(inspection, kind)
    (trace,) = fig.data
    assert fig.layout.title.text.startswith(f"{views.ATTENTION_KINDS[kind].title} · layer 1 · {views.head_label(head)}")
    assert plotted_ticks(fig.layout.xaxis) == keys and plotted_ticks(fig.layout.yaxis) == queries  # every token
    assert list(fig.layout.xaxis.tickvals) == list(range(len(keys)))  # by position: repeated tokens stay apart
    expected = maps[0].mean(axis=0) if head == "mean" else maps[0, head]
    shown = np.array(trace.z, dtype=np.float64)
    future = np.triu(np.ones_like(shown, dtype=bool), k=1)
    if kind == "decoder":  # masked keys: zero weight in the model, grey (NaN) on the page
        assert np.allclose(expected[future], 0.0, atol=1e-3) and np.isnan(shown[future]).all()
        assert "grey" in fig.layout.title.text
    else:
        assert not np.isnan(shown).any()
    assert np.allclose(shown[~future | (kind != "decoder")], expected[~future | (kind != "decoder")])
    i, j = len(queries) - 1, 0
    assert [html.unescape(c) for c in trace.customdata[i][j]] == [queries[i], keys[j]]  # the hover names both
    assert "weight" in trace.hovertemplate


def test_interactive_labels_are_escaped_and_rows_can_be_the_produced_tokens(inspection):
    fig = interactive.attention_plot(inspection, "cross", 0, "mean", rows="produced")
    assert plotted_ticks(fig.layout.yaxis) == views.output_tokens(inspection)  # row i: the token chosen there
    assert "&lt;/s&gt;" in fig.layout.yaxis.ticktext  # plotly would read "</s>" as markup and show nothing
    assert "produced" in fig.layout.yaxis.title.text
    assert plotted_ticks(interactive.attention_plot(inspection, "cross", 0, "mean").layout.yaxis) == \
        inspection.target_tokens


def test_interactive_head_grid_and_lines(inspection, translator):
    n_heads = translator.model.cfg.n_heads
    grid = interactive.attention_plot(inspection, "encoder", 0, "all")
    assert len(grid.data) == n_heads and [a.text for a in grid.layout.annotations][:n_heads] == [
        f"head {h + 1}" for h in range(n_heads)]
    lines = interactive.attention_plot(inspection, "cross", 0, "all", style="lines")
    *links, queries, keys = lines.data
    assert [html.unescape(t) for t in queries.text] == inspection.target_tokens
    assert [html.unescape(t) for t in keys.text] == inspection.source_tokens
    weights = inspection.cross_attention[0]
    drawn = sum(np.isfinite(np.asarray(t.x, dtype=float)).sum() // 2 for t in links)  # two ends a line
    assert drawn == (np.round(weights * 10) >= 1).sum()  # a line per pair of weight >= 0.05, every head
    assert {t.opacity for t in links} <= {level / 10 for level in range(1, 11)}


def test_interactive_overview_outlines_the_shown_layer_and_head(inspection, translator):
    cfg = translator.model.cfg
    cells = cfg.n_decoder_layers * cfg.n_heads
    fig = interactive.attention_overview(inspection, "decoder", cfg.n_decoder_layers - 1, cfg.n_heads - 1)
    assert len(fig.data) == cells
    assert fig.layout.title.text.startswith("Decoder self-attention")
    (outline,) = fig.layout.shapes
    assert (outline.xref, outline.yref) == (f"x{cells} domain", f"y{cells} domain")  # the last layer and head
    assert len(interactive.attention_overview(inspection, "decoder", 0, "mean").layout.shapes) == cfg.n_heads


def test_attention_json_is_the_raw_weights(inspection):
    data = json.loads(views.attention_json(inspection, "cross"))
    assert data["query_tokens"] == inspection.target_tokens and data["key_tokens"] == inspection.source_tokens
    assert np.allclose(np.array(data["attention"]), inspection.cross_attention, atol=1e-6)


def test_decoding_steps(inspection):
    steps = views.decoding_steps(inspection)
    assert steps == len(inspection.top_candidates) == len(inspection.target_tokens)
    assert views.step_tokens(inspection, 1) == (["<s>"], inspection.target_tokens[1])
    assert views.step_tokens(inspection, steps) == (inspection.target_tokens, "</s>")
    for step in range(1, steps + 1):
        fig = interactive.top_k_plot(inspection, step)
        (bars,) = fig.data
        candidates = [token for token, _ in inspection.top_candidates[step - 1]]
        assert plotted_ticks(fig.layout.yaxis) == candidates
        assert fig.layout.title.text.startswith(f"Step {step}: top {len(candidates)} next tokens")
        _, chosen = views.step_tokens(inspection, step)
        orange = [c for c, color in zip(candidates, bars.marker.color) if color == "#ff9f43"]
        assert orange == [chosen]  # greedy: the chosen token is the most probable, marked in orange


def test_step_cross_attention(inspection, translator):
    fig = interactive.step_attention_plot(inspection, 2)
    assert plotted_ticks(fig.layout.xaxis) == inspection.source_tokens
    assert plotted_ticks(fig.layout.yaxis) == [f"layer {i + 1}" for i in range(translator.model.cfg.n_decoder_layers)]
    assert np.allclose(np.array(fig.data[0].z), inspection.cross_attention[:, :, 1, :].mean(axis=1))
    assert fig.layout.title.text.startswith("Step 2: cross-attention while choosing " +
                                            html.escape(inspection.target_tokens[2], quote=False))


def test_positional_encoding_figures(pe, inspection):
    n = len(inspection.source_tokens)
    fig = interactive.positional_table_plot(pe, n)
    assert np.allclose(np.array(fig.data[0].z), pe, atol=5e-4)  # to 3 decimals
    assert fig.layout.title.text.startswith("Positional encoding") and f"the {n} rows" in fig.layout.title.text
    assert fig.layout.shapes[0].y0 == n - 0.5  # the line under the sentence's rows

    fig = interactive.positional_curves_plot(pe, [0, 1, 5])
    assert [trace.name.split()[:3] for trace in fig.data] == [
        ["dim", "0", "(sin,"], ["dim", "1", "(cos,"], ["dim", "5", "(cos,"]]
    assert np.allclose(fig.data[2].y, pe[:, 5])


def test_position_similarity(pe, inspection):
    similarity = interactive.position_similarity(pe)
    d_model = pe.shape[1]
    assert similarity.shape == (len(pe), len(pe))
    assert np.allclose(similarity, similarity.T)
    assert np.allclose(np.diag(similarity), d_model / 2, atol=1e-3)  # sin² + cos² = 1 per pair of dimensions
    assert (similarity.argmax(axis=1) == np.arange(len(pe))).all()

    fig = interactive.position_similarity_plot(pe, inspection.source_tokens)
    assert plotted_ticks(fig.layout.xaxis2) == inspection.source_tokens == plotted_ticks(fig.layout.yaxis2)
    n = len(inspection.source_tokens)
    assert np.allclose(np.array(fig.data[1].z), similarity[:n, :n], atol=5e-3)


def test_embedding_norms(translator, inspection, pe):
    tokens = inspection.source_tokens
    embedding, position = embedding_norms(translator, tokens)
    d_model = translator.model.cfg.d_model
    assert np.allclose(position, np.sqrt(d_model / 2), atol=1e-3)
    first = translator.model.src_embed.embedding.weight[translator.tokenizer.token_to_id(tokens[0])]
    assert np.isclose(embedding[0], first.float().norm().item() * np.sqrt(d_model), rtol=1e-3)
    fig = interactive.embedding_norms_plot(tokens, embedding, position)
    assert plotted_ticks(fig.layout.xaxis) == tokens
    assert np.allclose(fig.data[0].y, embedding) and np.allclose(fig.data[1].y, position)


def test_status_counts_tokens_as_the_truncation_note_does_and_warns():
    from interpretability import InputReport

    status = views.translation_status(0.5, "greedy", InputReport(127, 0, True, True), 9, 127)
    assert "127 English → 9 Italian tokens (not counting `</s>`)" in status
    assert "longer than the model reads (127 tokens): only the beginning was translated" in status
    assert "far longer" not in status  # truncation says it already
    status = views.translation_status(0.5, views.decoding_label(4), InputReport(8, 4, False, False), 3, 127)
    assert "beam search (4 beams)" in status and "Warning: 4 of the 8 English tokens (50%)" in status
    assert "never learnt" not in views.translation_status(0.5, "greedy", InputReport(8, 0, False, False), 3, 127)
    assert "far longer" in views.translation_status(0.5, "greedy", InputReport(70, 0, True, False), 60, 127)


def test_token_chips_escape_html():
    chips = views.token_chips(["<script>", "▁a", "</s>"], "Eng<b>", highlight=1)
    assert "<script>" not in chips and "<b>" not in chips
    assert "&lt;script&gt;" in chips and "Eng&lt;b&gt;" in chips
    assert 'class="chip chosen"' in chips and 'class="chip special"' in chips


def test_no_figures_left_behind(inspection, pe):
    figures.to_png(figures.attention_figure(inspection, "cross", 0, "all"))
    gc.collect()
    assert plt.get_fignums() == []
    assert not [obj for obj in gc.get_objects() if type(obj) is Figure]


def test_output_tokens_end_the_sentence(inspection):
    assert views.output_tokens(inspection) == inspection.target_tokens[1:] + ["</s>"]





def test_train_help_commands_work_as_written():
    assert "../shared/data/en-it/train.tsv" in texts.TRAIN_HELP and " data/en-it" not in texts.TRAIN_HELP
    assert "rm -rf assets/model && cp -r runs/cpu/model assets/model" in texts.TRAIN_HELP  # replace, not copy into


def test_downloads_are_named_by_content():
    downloads = Downloads()
    first = downloads.file(b"one", "a.json")
    assert Path(first).read_bytes() == b"one" and Path(first).name == "a.json"
    assert downloads.file(b"one", "a.json") == first and downloads.file(b"two", "a.json") != first
    assert Path(first).is_relative_to(downloads.root)


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

    for path in [ROOT / "app.py", *python_files("webapp", "transformer")]:
        if path.name == "tokenizer.py":
            continue
        literals = [node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.Constant) and node.value in SPECIAL_TOKENS]
        assert not literals, f"{path.name} spells {literals}"
