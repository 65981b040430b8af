"""Head diagnostics (`interpretability.diagnostics`): hand-made attention maps whose patterns are known get the right
numbers and names, and the real tiny model's maps give numbers in range."""

import numpy as np
import pytest

from interpretability import Inspection, inspect
from interpretability.diagnostics import BROAD, head_diagnostics, is_punctuation

SOURCE = ["▁I", "▁see", "▁the", "▁cat", ".", "</s>"]
TARGET = ["<s>", "▁io", "▁vedo", "▁il", "▁gatto", "."]  # as many as the source: a permutation fits
N = len(SOURCE)


def one_head(rows):
    """A (1 layer, 1 head, queries, keys) map from a (queries, keys) one."""
    return np.asarray(rows, dtype=np.float32)[None, None]


def on_column(column, n_queries=N, n_keys=N):
    """Every query puts all its weight on key `column`."""
    rows = np.zeros((n_queries, n_keys))
    rows[:, column] = 1
    return rows


def causal_uniform(n):
    """Each decoder row spread evenly over the positions up to itself."""
    rows = np.tril(np.ones((n, n)))
    return rows / rows.sum(-1, keepdims=True)


def previous_token(n):
    """Each row on the position before it; the first row, which has none, on itself."""
    return np.eye(n, k=-1) + np.eye(n) * (np.arange(n) == 0)


def stats_of(encoder=None, decoder=None, cross=None):
    """head_diagnostics of an Inspection of SOURCE -> TARGET with these (queries, keys) maps; the maps not given are
    even (causal for the decoder)."""
    inspection = Inspection(
        source_tokens=SOURCE,
        target_tokens=TARGET,
        translation="io vedo il gatto.",
        encoder_attention=one_head(np.full((N, N), 1 / N) if encoder is None else encoder),
        decoder_attention=one_head(causal_uniform(N) if decoder is None else decoder),
        cross_attention=one_head(np.full((N, N), 1 / N) if cross is None else cross),
    )
    return head_diagnostics(inspection)


def test_a_head_that_looks_at_itself():
    stats = stats_of(encoder=np.eye(N), decoder=np.eye(N))
    for kind in ("encoder", "decoder"):
        assert stats[kind].same[0, 0] == pytest.approx(1)
        assert stats[kind].previous[0, 0] == pytest.approx(0)
        assert stats[kind].entropy[0, 0] == pytest.approx(0)
        assert stats[kind].labels == [["looks at itself"]]


def test_a_previous_token_head():
    stats = stats_of(encoder=previous_token(N), decoder=previous_token(N))
    for kind in ("encoder", "decoder"):
        assert stats[kind].previous[0, 0] == pytest.approx(1)
        assert stats[kind].labels == [["previous-token head"]]
    assert stats["encoder"].same[0, 0] == pytest.approx(1 / N)  # the first row, on itself
    assert stats["decoder"].same[0, 0] == pytest.approx(0)  # the decoder's first row has no choice: left out


def test_a_head_that_looks_at_eos_in_the_source():
    eos = SOURCE.index("</s>")
    stats = stats_of(encoder=on_column(eos), cross=on_column(eos))
    for kind in ("encoder", "cross"):
        assert stats[kind].eos[0, 0] == pytest.approx(1)
        assert stats[kind].punctuation[0, 0] == pytest.approx(0)
        assert stats[kind].labels == [["looks at </s>"]]
    assert np.isnan(stats["decoder"].eos[0, 0])  # the decoder's keys are <s> and generated tokens, never </s>


def test_a_head_that_looks_at_punctuation():
    stats = stats_of(encoder=on_column(SOURCE.index(".")))
    assert stats["encoder"].punctuation[0, 0] == pytest.approx(1)
    assert stats["encoder"].labels == [["looks at punctuation"]]


def test_even_attention_has_the_largest_entropy_and_is_broad():
    stats = stats_of()  # every map even (over the positions each decoder row may see)
    for kind in ("encoder", "decoder", "cross"):
        assert stats[kind].entropy[0, 0] == pytest.approx(1)
        assert stats[kind].labels == [[BROAD]] == [["broad (averages the sentence)"]]


def test_entropy_is_in_bits_divided_by_those_of_even_attention():
    halves = np.zeros((N, N))
    halves[:, :2] = 0.5  # 1 bit per row; even over N keys is log2(N) bits
    stats = stats_of(encoder=halves)
    assert stats["encoder"].entropy[0, 0] == pytest.approx(1 / np.log2(N))
    assert stats["encoder"].labels == [[""]]


def test_a_peaked_head_on_an_ordinary_word_has_no_label():
    stats = stats_of(encoder=on_column(SOURCE.index("▁the")))
    assert stats["encoder"].entropy[0, 0] == pytest.approx(0)
    assert stats["encoder"].labels == [[""]]


def test_a_permutation_is_a_one_to_one_alignment():
    permutation = [5, 0, 1, 3, 2, 4]  # target row -> source column
    stats = stats_of(cross=np.eye(N)[permutation])
    assert stats["cross"].alignment[0, 0] == pytest.approx(1)
    assert stats["cross"].labels == [["aligns words one-to-one"]]


def test_every_target_on_one_source_token_is_not_an_alignment():
    stats = stats_of(cross=on_column(SOURCE.index("▁cat")))
    assert stats["cross"].alignment[0, 0] == pytest.approx(1 / N)
    assert stats["cross"].labels == [[""]]


def test_statistics_that_do_not_apply_are_nan():
    stats = stats_of()
    assert np.isnan(stats["cross"].same).all() and np.isnan(stats["cross"].previous).all()
    assert np.isnan(stats["encoder"].alignment).all() and np.isnan(stats["decoder"].alignment).all()


@pytest.mark.parametrize(
    "token, expected",
    [
        (".", True),
        (",", True),
        ("▁-", True),
        ("'", True),
        ('"', True),
        ("<0x28>", True),
        ("...", True),
        ("▁cat", False),
        ("▁", False),
        ("</s>", False),
        ("<s>", False),
        ("<0xC3>", False),
        ("▁1", False),
        ("ità", False),
    ],
)
def test_punctuation_tokens(token, expected):
    assert is_punctuation(token) is expected


def test_a_map_that_does_not_fit_the_tokens_is_rejected():
    with pytest.raises(ValueError, match=r"encoder attention must be \(layers, heads, 6, 6\)"):
        stats_of(encoder=np.eye(N - 1))


def test_the_tiny_models_heads(translator):
    inspection = inspect(translator, "they love the city.")
    maps = {
        "encoder": inspection.encoder_attention,
        "decoder": inspection.decoder_attention,
        "cross": inspection.cross_attention,
    }
    for attention in maps.values():
        np.testing.assert_allclose(attention.sum(-1), 1, atol=1e-5)  # what the statistics assume
    cfg = translator.model.cfg
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    stats = head_diagnostics(inspection)
    assert set(stats) == {"encoder", "decoder", "cross"}
    allowed = {
        "",
        BROAD,
        "previous-token head",
        "looks at itself",
        "looks at </s>",
        "looks at punctuation",
        "aligns words one-to-one",
    }
    for kind, s in stats.items():
        shape = (layers[kind], cfg.n_heads)
        for name in ("entropy", "same", "previous", "eos", "punctuation", "alignment"):
            assert getattr(s, name).shape == shape
            values = getattr(s, name)[~np.isnan(getattr(s, name))]
            assert ((values >= -1e-6) & (values <= 1 + 1e-6)).all(), (kind, name)
        assert not np.isnan(s.entropy).any()
        assert len(s.labels) == shape[0] and all(len(row) == shape[1] and set(row) <= allowed for row in s.labels)
    assert not np.isnan(stats["encoder"].eos).any() and not np.isnan(stats["cross"].eos).any()  # source ends in </s>
    assert not np.isnan(stats["cross"].alignment).any() and not np.isnan(stats["cross"].punctuation).any()
