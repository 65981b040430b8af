"""The app's matplotlib figures: the attention heatmaps of the PNG downloads (the views on the page are drawn in the
browser: `interactive`).

Every figure is drawn from one `Inspection` (one model pass serves them all). Figures are `matplotlib.figure.Figure`
objects made without pyplot, so no global figure registry fills up, nothing needs closing, and concurrent requests do
not share state; `to_png` renders them. Fonts are sized for a projector.
"""

import io
import threading
from contextlib import contextmanager

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .views import ATTENTION_KINDS, MASKED, attention_maps, axis_titles, causal_masked, head_label

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
    layer_maps = causal_masked(maps[layer], kind)  # (heads, Tq, Tk), future positions NaN: grey
    title = f"{ATTENTION_KINDS[kind].title} · layer {layer + 1} · {head_label(head)}"
    x_title, y_title = axis_titles(kind)
    if head == "all":
        return _head_grid(layer_maps, queries, keys, title, x_title, y_title)
    weights = layer_maps.mean(axis=0) if head == "mean" else layer_maps[head]
    with _styled():
        w, h = _side(len(keys)), _side(len(queries))
        fig = Figure(figsize=(w + 1.6, h + 1.0), layout="constrained")
        ax = fig.add_subplot()
        ax.set_facecolor(MASKED)  # seen through the masked (NaN) cells
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
        vmax = float(np.nanmax(layer_maps))
        for i, ax in enumerate(axes.flat):
            if i >= n_heads:
                ax.set_axis_off()
                continue
            ax.set_facecolor(MASKED)
            image = ax.imshow(layer_maps[i], vmin=0.0, vmax=vmax, aspect="auto")
            _label_axes(ax, keys, queries, show_x=i // cols == rows - 1 or i + cols >= n_heads, show_y=i % cols == 0)
            ax.set_title(f"head {i + 1}")
        fig.supxlabel(x_title)
        fig.supylabel(y_title)
        fig.suptitle(title)
        fig.colorbar(image, ax=axes, label="attention weight", shrink=0.6)
    return fig
