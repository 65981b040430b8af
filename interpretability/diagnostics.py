"""What each attention head does in one sentence, in numbers and in plain words, read off the attention maps of an
`Inspection` (rows are queries, columns are keys; each row sums to 1).

Per head, weights are averaged over the query rows that have a choice of keys: the decoder's first row (<s>) may see
only itself, so it says nothing about the head and is left out. A statistic that does not apply is NaN: `same` and
`previous` in cross-attention (its queries are target tokens, its keys source tokens: position i of the translation
is not position i of the input), `eos` where no row may see a </s> key (decoder self-attention: its keys are <s> and
the generated tokens, never </s>), `alignment` outside cross-attention.
"""

import unicodedata
from dataclasses import dataclass

import numpy as np

from transformer.tokenizer import BYTE_TOKEN, EOS

from .kinds import ATTENTION_KINDS

WORD_START = "▁"  # the tokenizer's mark on a token that starts a word ("▁cat"); transformer/tokenizer.py

# A head is given a pattern's name when the pattern takes more than half of its attention on average (more than
# half of what it passes on comes from there), or for `alignment`, when most target tokens take most of their
# weight from a source token of their own.
PATTERN_THRESHOLD = 0.5
PATTERNS = (  # (statistic, label): when several pass the threshold, the largest names the head
    ("previous", "previous-token head"),
    ("same", "looks at itself"),
    ("eos", "looks at </s>"),
    ("punctuation", "looks at punctuation"),
    ("alignment", "aligns words one-to-one"),
)
# A head with no pattern is "broad" when its (normalised) entropy is at least this: its rows are close to even, so it
# passes on an average of the sentence. Lower, a head that splits its weight between two or three tokens would count
# as broad in a short sentence (half the weight on each of two keys out of four is already 0.5).
BROAD_ENTROPY = 0.85
BROAD = "broad (averages the sentence)"


@dataclass
class HeadStats:
    """The heads of one kind of attention in one sentence: each statistic a (layers, heads) float array, averaged
    over query rows; NaN where it does not apply (module docstring)."""

    # Peaked or diffuse: each row's entropy divided by log2(keys it may see), the entropy of even attention over them;
    # 0 when every row puts all its weight on one key, 1 when every row spreads it evenly.
    entropy: np.ndarray
    same: np.ndarray  # weight on the query's own position
    previous: np.ndarray  # weight on the position just before the query (rows that have one)
    eos: np.ndarray  # weight on the </s> key (rows that may see one)
    punctuation: np.ndarray  # weight on punctuation keys (`is_punctuation`; rows that may see one)
    alignment: np.ndarray  # in [0, 1], 1 for a one-to-one map (`alignment`); cross-attention only
    labels: list  # (layers, heads) short plain-words names of the pattern (PATTERNS, BROAD), "" when none is clear


def is_punctuation(token):
    """A token that is punctuation only, its word-start mark aside ("," "." "▁-" "'"), or a byte token spelling one
    ASCII punctuation mark the vocabulary lacks ("<0x28>" is "(")."""
    text = token.removeprefix(WORD_START)
    if BYTE_TOKEN.fullmatch(text):
        text = bytes([int(text[3:5], 16)]).decode("ascii", errors="ignore")  # "" for a byte of a longer character
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def alignment(weights):
    """How close cross-attention maps (..., T, S) are to a one-to-one alignment, per target row: the weight on
    the row's most attended source token times the share of that token's total weight (over all target rows)
    that this row holds. 1 for a permutation; 1/T when all T targets look at one source token. Shape (..., T)."""
    best = weights.argmax(-1)[..., None]  # (..., T, 1): each target row's most attended source position
    top = np.take_along_axis(weights, best, -1)[..., 0]  # (..., T)
    received = weights.sum(-2)[..., None, :]  # (..., 1, S): weight each source token gets from all target rows
    share = top / np.take_along_axis(received, best, -1)[..., 0]  # (..., T)
    return top * share


def _normalised_entropy(weights, visible):
    """Each row's entropy in bits over the keys it may see, divided by that of even attention over them, log2(keys):
    (..., queries), in [0, 1] for rows with a choice. Bits or nats, the share is the same."""
    bits = -(weights * np.log2(np.where(weights > 0, weights, 1.0))).sum(-1)  # (..., Tq): 0 log 0 = 0
    even = np.log2(np.maximum(visible.sum(-1), 2))  # (Tq,): a row without choice (0 bits) is divided by 1, not 0
    return bits / even


def _row_mean(values, rows):
    """values (layers, heads, queries) averaged over the query rows `rows` (bool); NaN when there are none."""
    if not rows.any():
        return np.full(values.shape[:2], np.nan)
    return values[..., rows].mean(-1)


def _weight_on(weights, visible, rows, is_key):
    """Mean total weight on the keys `is_key` (bool per key), over the rows of `rows` that may see one of them."""
    is_key = np.array(is_key, dtype=bool)
    return _row_mean((weights * is_key).sum(-1), rows & (visible & is_key).any(-1))


def _label(stats):
    """The name of what one head does, from its statistics (floats by name)."""
    passed = [(stats[name], label) for name, label in PATTERNS if stats[name] > PATTERN_THRESHOLD]  # NaN never does
    if passed:
        return max(passed, key=lambda value_and_label: value_and_label[0])[1]
    if stats["entropy"] >= BROAD_ENTROPY:
        return BROAD
    return ""


def _head_stats(kind, maps, query_tokens, key_tokens):
    """HeadStats of one kind's maps (layers, heads, queries, keys) between these query and key tokens."""
    expected = (len(query_tokens), len(key_tokens))
    if maps.ndim != 4 or maps.shape[2:] != expected:
        raise ValueError(
            f"{kind} attention must be (layers, heads, {expected[0]}, {expected[1]}) for the inspected "
            f"tokens, got {maps.shape}"
        )
    weights = maps.astype(np.float64)  # (L, H, Tq, Tk)
    visible = np.ones(expected, dtype=bool)  # (Tq, Tk): one sentence has no padding
    if kind == "decoder":
        visible = np.tril(visible)  # the future is hidden
    rows = visible.sum(-1) > 1  # (Tq,): rows with a choice of keys
    position = np.arange(expected[0])
    not_applicable = np.full(weights.shape[:2], np.nan)
    self_attention = kind != "cross"
    stats = dict(
        entropy=_row_mean(_normalised_entropy(weights, visible), rows),
        same=_row_mean(weights[..., position, position], rows) if self_attention else not_applicable,
        previous=(
            _row_mean(weights[..., position[1:], position[1:] - 1], rows[1:]) if self_attention else not_applicable
        ),
        eos=_weight_on(weights, visible, rows, [token == EOS for token in key_tokens]),
        punctuation=_weight_on(weights, visible, rows, [is_punctuation(token) for token in key_tokens]),
        alignment=_row_mean(alignment(weights), rows) if kind == "cross" else not_applicable,
    )
    n_layers, n_heads = weights.shape[:2]
    labels = [
        [_label({name: values[layer, head] for name, values in stats.items()}) for head in range(n_heads)]
        for layer in range(n_layers)
    ]
    return HeadStats(**stats, labels=labels)


def head_diagnostics(inspection):
    """{kind: HeadStats} for the three kinds of attention (ATTENTION_KINDS) of one inspected sentence."""
    return {kind: _head_stats(kind, *inspection.attention(kind)) for kind in ATTENTION_KINDS}
