"""Figure functions of the app: right titles, tick labels that are the tokens, images of the right shape, and no
figures left behind."""

import gc
import json

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from transformer import Translator, plots
from transformer.model import sinusoidal_positional_encoding


@pytest.fixture(scope="module", params=["float32", "float16"])
def translator(request, tiny_model_dir):
    """The tiny model in both precisions the app can run it in (MODEL_DTYPE)."""
    return Translator.load(tiny_model_dir, dtype=request.param)


@pytest.fixture(scope="module")
def inspection(translator):
    return translator.inspect("I see the cat.")


@pytest.fixture(scope="module")
def pe(translator):
    return sinusoidal_positional_encoding(translator.model.cfg.max_len, translator.model.cfg.d_model)


def tick_labels(axis):
    return [t.get_text() for t in axis.get_ticklabels()]


def heatmap_axes(fig):
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def assert_renders(fig):
    image = plots.to_image(fig)
    width, height = fig.get_size_inches() * fig.dpi
    assert image.dtype == np.uint8 and image.shape == (round(height), round(width), 3)
    assert image.std() > 0  # something was drawn
    assert plots.to_png(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("kind, head", [("encoder", 0), ("decoder", 1), ("cross", "mean")])
def test_attention_heatmap_labels_are_the_tokens(inspection, kind, head):
    fig = plots.attention_figure(inspection, kind, 0, head)
    maps, queries, keys = plots.attention_maps(inspection, kind)
    (ax,) = heatmap_axes(fig)
    assert ax.get_title() == f"{plots.ATTENTION_KINDS[kind].title} · layer 1 · {plots.head_label(head)}"
    assert tick_labels(ax.xaxis) == keys and tick_labels(ax.yaxis) == queries
    assert "Key" in ax.get_xlabel() and "(columns)" in ax.get_xlabel()
    assert "Query" in ax.get_ylabel() and "(rows)" in ax.get_ylabel()
    shown = ax.images[0].get_array()
    assert np.allclose(shown, maps[0].mean(axis=0) if head == "mean" else maps[0, head])
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert_renders(fig)


def test_attention_sides_and_languages(inspection):
    _, queries, keys = plots.attention_maps(inspection, "cross")
    assert queries == inspection.target_tokens and keys == inspection.source_tokens
    ax = heatmap_axes(plots.attention_figure(inspection, "cross", 0, "mean"))[0]
    assert "English" in ax.get_xlabel() and "Italian" in ax.get_ylabel()


def test_all_heads_grid(inspection, translator):
    fig = plots.attention_figure(inspection, "encoder", 0, "all")
    axes = heatmap_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"head {h + 1}" for h in range(translator.model.cfg.n_heads)]
    assert tick_labels(axes[0].yaxis) == inspection.source_tokens
    assert tick_labels(axes[-1].xaxis) == inspection.source_tokens
    assert fig.get_suptitle() == "Encoder self-attention · layer 1 · all heads"
    assert_renders(fig)


def test_overview_has_every_layer_and_head(inspection, translator):
    cfg = translator.model.cfg
    fig = plots.attention_overview(inspection, "decoder")
    assert len(heatmap_axes(fig)) == cfg.n_decoder_layers * cfg.n_heads
    assert fig.get_suptitle().startswith("Decoder self-attention")
    assert_renders(fig)


def test_attention_json_is_the_raw_weights(inspection):
    data = json.loads(plots.attention_json(inspection, "cross"))
    assert data["query_tokens"] == inspection.target_tokens and data["key_tokens"] == inspection.source_tokens
    assert np.allclose(np.array(data["attention"]), inspection.cross_attention, atol=1e-6)


def test_decoding_steps(inspection):
    steps = plots.decoding_steps(inspection)
    assert steps == len(inspection.top_candidates) == len(inspection.target_tokens)
    assert plots.step_tokens(inspection, 1) == (["<s>"], inspection.target_tokens[1])
    assert plots.step_tokens(inspection, steps) == (inspection.target_tokens, "</s>")
    for step in range(1, steps + 1):
        fig = plots.top_k_figure(inspection, step)
        ax = fig.axes[0]
        candidates = [token for token, _ in inspection.top_candidates[step - 1]]
        assert tick_labels(ax.yaxis) == candidates
        assert ax.get_title().startswith(f"Step {step}: top {len(candidates)} next tokens")
        _, chosen = plots.step_tokens(inspection, step)
        orange = [c for c, bar in zip(candidates, ax.patches) if bar.get_facecolor() == to_rgba("tab:orange")]
        assert orange == [chosen]  # greedy: the chosen token is the most probable, marked in orange
    assert_renders(fig)  # the last step


def test_step_cross_attention(inspection, translator):
    fig = plots.step_cross_attention_figure(inspection, 2)
    (ax,) = heatmap_axes(fig)
    assert tick_labels(ax.xaxis) == inspection.source_tokens
    assert tick_labels(ax.yaxis) == [f"layer {i + 1}" for i in range(translator.model.cfg.n_decoder_layers)]
    assert np.allclose(ax.images[0].get_array(), inspection.cross_attention[:, :, 1, :].mean(axis=1))
    assert repr(inspection.target_tokens[2]) in ax.get_title()
    assert_renders(fig)


def test_positional_encoding_figures(pe, inspection):
    fig = plots.positional_encoding_figure(pe, len(inspection.source_tokens))
    (ax,) = heatmap_axes(fig)
    assert ax.images[0].get_array().shape == tuple(pe.shape)
    assert ax.get_title().startswith("Positional encoding")
    assert_renders(fig)

    fig = plots.positional_curves_figure(pe, [0, 1, 5])
    assert [line.get_label().split()[:3] for line in fig.axes[0].lines] == [
        ["dim", "0", "(sin,"], ["dim", "1", "(cos,"], ["dim", "5", "(cos,"]]
    assert np.allclose(fig.axes[0].lines[2].get_ydata(), pe[:, 5])
    assert_renders(fig)


def test_position_similarity(pe, inspection):
    similarity = plots.position_similarity(pe)
    d_model = pe.shape[1]
    assert similarity.shape == (len(pe), len(pe))
    assert np.allclose(similarity, similarity.T)
    assert np.allclose(np.diag(similarity), d_model / 2, atol=1e-3)  # sin² + cos² = 1 per pair of dimensions
    assert (similarity.argmax(axis=1) == np.arange(len(pe))).all()

    fig = plots.position_similarity_figure(pe, inspection.source_tokens)
    zoom = heatmap_axes(fig)[1]
    assert tick_labels(zoom.xaxis) == inspection.source_tokens == tick_labels(zoom.yaxis)
    assert_renders(fig)


def test_embedding_norms(translator, inspection, pe):
    tokens = inspection.source_tokens
    embedding, position = plots.embedding_norms(translator, tokens)
    d_model = translator.model.cfg.d_model
    assert np.allclose(position, np.sqrt(d_model / 2), atol=1e-3)
    first = translator.model.src_embed.lut.weight[translator.tokenizer.token_to_id(tokens[0])]
    assert np.isclose(embedding[0], first.float().norm().item() * np.sqrt(d_model), rtol=1e-3)
    fig = plots.embedding_norms_figure(tokens, embedding, position)
    assert tick_labels(fig.axes[0].xaxis) == tokens
    assert_renders(fig)


def test_token_chips_escape_html():
    chips = plots.token_chips(["<script>", "▁a", "</s>"], "Eng<b>", highlight=1)
    assert "<script>" not in chips and "<b>" not in chips
    assert "&lt;script&gt;" in chips and "Eng&lt;b&gt;" in chips
    assert 'class="chip chosen"' in chips and 'class="chip special"' in chips


def test_model_card(translator):
    card = plots.model_card_markdown(translator)
    assert f"{translator.model.num_parameters():,}" in card
    assert "| dev (during training) | greedy | float32 |" in card  # the score recorded by the training script
    scored = Translator(translator.model, translator.tokenizer,
                        {"scores": {"toy": {"beam4, float16": {"bleu": 12.5, "chrf": 40.0, "n": 7}}}})
    assert "| toy | beam4 | float16 | 12.5 | 40.0 | 7 |" in plots.model_card_markdown(scored)
    assert f"| runs in | {str(translator.model.src_embed.lut.weight.dtype).removeprefix('torch.')} |" in card


def test_no_figures_left_behind(inspection, pe):
    plots.to_png(plots.attention_figure(inspection, "cross", 0, "all"))
    plots.to_image(plots.attention_overview(inspection, "encoder"))
    gc.collect()
    assert plt.get_fignums() == []
    assert not [obj for obj in gc.get_objects() if type(obj) is Figure]
