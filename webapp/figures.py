"""The app's figures: attention heatmaps, decoding steps, positional encoding.

Every figure is drawn from one `Inspection` (one model pass serves them all) or from numbers the `Translator` gives
(its positional encoding table, its embedding norms). Figures are `matplotlib.figure.Figure` objects made without
pyplot, so no global figure registry fills up, nothing needs closing, and concurrent requests do not share state;
`to_png` / `to_image` render them. Fonts are sized for a projector.
"""

import io
import threading
from contextlib import contextmanager

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .views import ATTENTION_KINDS, attention_maps, axis_titles, head_label, step_tokens

STYLE = {
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.labelsize": 14,
    "figure.titlesize": 17,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 12,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "image.cmap": "viridis",
}
_style_lock = threading.Lock()  # rc_context changes global settings: one figure is built at a time


@contextmanager
def _styled():
    with _style_lock, matplotlib.rc_context(STYLE):
        yield


def to_png(fig):
    """PNG bytes of a figure."""
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def to_image(fig):
    """(H, W, 3) uint8 RGB array of a figure."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def _tick_size(n):
    """Smaller labels for longer sentences, so every token keeps its own tick."""
    return 13 if n <= 16 else 11 if n <= 32 else 8 if n <= 64 else 5


def _side(n, lo=6.0, hi=12.0):
    """Figure inches for n tokens: roomy for short sentences, bounded for long ones."""
    return min(hi, max(lo, 2.5 + 0.32 * n))


def _label_axes(ax, x_tokens, y_tokens, show_x=True, show_y=True):
    ax.set_xticks(range(len(x_tokens)), x_tokens if show_x else [""] * len(x_tokens),
                  rotation=60, ha="right", rotation_mode="anchor", fontsize=_tick_size(len(x_tokens)))
    ax.set_yticks(range(len(y_tokens)), y_tokens if show_y else [""] * len(y_tokens),
                  fontsize=_tick_size(len(y_tokens)))


# --- Attention -------------------------------------------------------------------------------------------------


def attention_figure(inspection, kind, layer, head):
    """Heatmap of one layer's attention (layer 0-based); `head` is a 0-based index, "mean" or "all" (a grid)."""
    maps, queries, keys = attention_maps(inspection, kind)
    layer_maps = maps[layer]  # (heads, Tq, Tk)
    title = f"{ATTENTION_KINDS[kind].title} · layer {layer + 1} · {head_label(head)}"
    x_title, y_title = axis_titles(kind)
    if head == "all":
        return _head_grid(layer_maps, queries, keys, title, x_title, y_title)
    weights = layer_maps.mean(axis=0) if head == "mean" else layer_maps[head]
    with _styled():
        w, h = _side(len(keys)), _side(len(queries))
        fig = Figure(figsize=(w + 1.6, h + 1.0), layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(weights, vmin=0.0, aspect="auto")
        _label_axes(ax, keys, queries)
        ax.set_xlabel(x_title)
        ax.set_ylabel(y_title)
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="attention weight (each row sums to 1)", shrink=0.8)
    return fig


def _head_grid(layer_maps, queries, keys, title, x_title, y_title):
    n_heads = layer_maps.shape[0]
    cols = min(n_heads, 4)
    rows = -(-n_heads // cols)
    size = min(6.0, _side(max(len(keys), len(queries)), lo=3.5, hi=6.0))
    with _styled():
        fig = Figure(figsize=(cols * size + 1.5, rows * size + 1.2), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        vmax = float(layer_maps.max())
        for i, ax in enumerate(axes.flat):
            if i >= n_heads:
                ax.set_axis_off()
                continue
            image = ax.imshow(layer_maps[i], vmin=0.0, vmax=vmax, aspect="auto")
            _label_axes(ax, keys, queries, show_x=i // cols == rows - 1 or i + cols >= n_heads, show_y=i % cols == 0)
            ax.set_title(f"head {i + 1}")
        fig.supxlabel(x_title)
        fig.supylabel(y_title)
        fig.suptitle(title)
        fig.colorbar(image, ax=axes, label="attention weight", shrink=0.6)
    return fig


def attention_overview(inspection, kind):
    """Every layer (rows) × head (columns) of one kind, small and unlabelled: to spot patterns (diagonals,
    attention to the end of the sentence or punctuation, heads that look alike)."""
    maps, _, _ = attention_maps(inspection, kind)
    n_layers, n_heads = maps.shape[:2]
    cell = 2.4 if n_heads <= 4 else 1.8
    with _styled():
        fig = Figure(figsize=(n_heads * cell + 0.8, n_layers * cell + 1.0), layout="constrained")
        axes = fig.subplots(n_layers, n_heads, squeeze=False)
        for layer in range(n_layers):
            for head in range(n_heads):
                ax = axes[layer, head]
                ax.imshow(maps[layer, head], vmin=0.0, aspect="auto")
                ax.set_xticks([])
                ax.set_yticks([])
                if layer == 0:
                    ax.set_title(f"head {head + 1}", fontsize=12)
                if head == 0:
                    ax.set_ylabel(f"layer {layer + 1}", fontsize=12)
        fig.suptitle(f"{ATTENTION_KINDS[kind].title}: all layers × heads", fontsize=14)
    return fig


# --- Decoding step by step ----------------------------------------------------------------------------------


def top_k_figure(inspection, step):
    """Horizontal bars of the most probable next tokens at 1-based `step`, the chosen one highlighted. With beam
    search the chosen token need not be the most probable one: the beam looks ahead."""
    _, chosen = step_tokens(inspection, step)
    candidates = inspection.top_candidates[step - 1]
    tokens = [t for t, _ in candidates]
    probs = [p for _, p in candidates]
    colors = ["tab:orange" if t == chosen else "tab:blue" for t in tokens]
    with _styled():
        fig = Figure(figsize=(7.5, 0.55 * len(tokens) + 1.8), layout="constrained")
        ax = fig.add_subplot()
        bars = ax.barh(range(len(tokens)), probs, color=colors)
        ax.bar_label(bars, [f"{p:.0%}" for p in probs], padding=4)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.15)
        ax.set_xlabel("probability of the next token")
        note = "" if chosen in tokens else f" (chosen {chosen!r} is not in the top {len(tokens)})"
        ax.set_title(f"Step {step}: top {len(tokens)} next tokens, chosen in orange{note}")
    return fig


def step_cross_attention_figure(inspection, step):
    """Where the decoder looked in the English sentence while choosing the token of 1-based `step`: the
    cross-attention row of that query, averaged over heads, one row per layer."""
    weights = inspection.cross_attention[:, :, step - 1, :].mean(axis=1)  # (layers, S)
    sources = inspection.source_tokens
    _, chosen = step_tokens(inspection, step)
    with _styled():
        fig = Figure(figsize=(_side(len(sources), lo=7.0) + 1.5, 0.6 * len(weights) + 2.6), layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(weights, vmin=0.0, aspect="auto")
        _label_axes(ax, sources, [f"layer {i + 1}" for i in range(len(weights))])
        ax.set_xlabel("Key: English source token (columns)")
        ax.set_ylabel("decoder layer (mean over heads)")
        ax.set_title(f"Step {step}: cross-attention while choosing {chosen!r}")
        fig.colorbar(image, ax=ax, label="attention weight")
    return fig


# --- Positional encoding ------------------------------------------------------------------------------------


def positional_encoding_figure(pe, n_tokens=0):
    """The sinusoidal table (positions × dimensions); the rows the current sentence uses stay bright."""
    pe = np.asarray(pe)
    with _styled():
        fig = Figure(figsize=(10, 5.5), layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(pe, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        title = f"Positional encoding PE (max_len {pe.shape[0]} × d_model {pe.shape[1]})"
        if n_tokens:
            ax.axhline(n_tokens - 0.5, color="black", lw=2.5)
            title += f"\nyour sentence uses the {n_tokens} rows above the black line"
        ax.set_xlabel("dimension (even: sin, odd: cos; frequency falls to the right)")
        ax.set_ylabel("position in the sentence")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="value")
    return fig


def positional_curves_figure(pe, dims, n_positions=None):
    """PE values of the chosen dimensions along the positions: each pair of dimensions is a sin/cos wave of
    its own wavelength, from 2π (dimension 0) to 10000·2π (the last)."""
    pe = np.asarray(pe)
    n_positions = n_positions or pe.shape[0]
    d_model = pe.shape[1]
    with _styled():
        fig = Figure(figsize=(12, 4.8), layout="constrained")
        ax = fig.add_subplot()
        for d in dims:
            wavelength = 2 * np.pi * 10000 ** ((d - d % 2) / d_model)
            kind = "sin" if d % 2 == 0 else "cos"
            ax.plot(pe[:n_positions, d], lw=2, label=f"dim {d} ({kind}, wavelength {wavelength:,.1f})")
        ax.set_xlabel("position")
        ax.set_ylabel("PE value")
        ax.set_ylim(-1.15, 1.15)
        ax.grid(alpha=0.3)
        if dims:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title("Sine and cosine waves of the chosen dimensions")
    return fig


def position_similarity(pe):
    """Dot products of PE rows: (max_len, max_len), largest on the diagonal and falling off with distance."""
    pe = np.asarray(pe, dtype=np.float64)
    return pe @ pe.T


def position_similarity_figure(pe, tokens):
    """The full similarity matrix with the sentence's span outlined, and that span zoomed in with its tokens."""
    similarity = position_similarity(pe)
    n = min(len(tokens), len(similarity))
    tokens = tokens[:n]
    with _styled():
        fig = Figure(figsize=(15, 6.8), layout="constrained")
        left, right = fig.subplots(1, 2, width_ratios=[1, 1.25])
        image = left.imshow(similarity, aspect="auto", interpolation="nearest")
        left.add_patch(Rectangle((-0.5, -0.5), n, n, fill=False, edgecolor="red", lw=2))
        left.set_xlabel("position")
        left.set_ylabel("position")
        left.set_title(f"All {len(similarity)} positions (your sentence in red)")
        right.imshow(similarity[:n, :n], vmin=similarity.min(), vmax=similarity.max(), aspect="auto")
        _label_axes(right, tokens, tokens)
        right.set_title("Your sentence's positions, labelled by token")
        fig.colorbar(image, ax=[left, right], label="PE(i) · PE(j)", shrink=0.8)
        fig.suptitle("Position similarity: nearby positions have similar encodings")
    return fig


def embedding_norms_figure(tokens, embedding, position):
    """Bars of `Translator.embedding_norms` per token: the position signal next to the meaning it is added to."""
    x = np.arange(len(tokens))
    with _styled():
        fig = Figure(figsize=(_side(len(tokens), lo=8.0), 4.8), layout="constrained")
        ax = fig.add_subplot()
        ax.bar(x - 0.2, embedding, width=0.4, label="‖embedding × √d_model‖")
        ax.bar(x + 0.2, position, width=0.4, label="‖positional encoding‖")
        ax.set_xticks(x, tokens, rotation=60, ha="right", rotation_mode="anchor", fontsize=_tick_size(len(tokens)))
        ax.set_ylabel("vector length (L2 norm)")
        ax.set_ylim(0, max(embedding.max(), position.max()) * 1.3)  # headroom for the legend
        ax.legend(loc="upper center", ncol=2, framealpha=0.9)
        ax.set_title("What goes into the encoder: token meaning + position")
    return fig
