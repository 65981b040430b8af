"""The training curve (OUT/loss_curve.png, copied into the exported model): train loss and dev BLEU against training
minutes, drawn without pyplot (a plain Figure rendered by the Agg canvas) like the app's figures."""

import csv


def plot_curve(log_path, png_path):
    """Draw the metrics.csv at `log_path` to `png_path`; nothing when it holds no row yet. matplotlib is imported here,
    by the process that draws (rank 0): a third of a second that the trainer's other processes never spend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with open(log_path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    fig = Figure(figsize=(7, 4), dpi=100)
    ax = fig.add_subplot()
    train = [(float(r["minutes"]), float(r["train_loss"])) for r in rows if r["train_loss"]]
    if train:
        ax.plot(*zip(*train), color="tab:blue", label="train loss")
    ax.set_xlabel("training minutes")
    ax.set_ylabel("train loss (label-smoothed cross-entropy)", color="tab:blue")
    dev = [(float(r["minutes"]), float(r["dev_bleu"])) for r in rows if r["dev_bleu"]]
    if dev:
        ax2 = ax.twinx()
        ax2.plot(*zip(*dev), "o-", color="tab:red", label="dev BLEU")
        ax2.set_ylabel("dev BLEU", color="tab:red")
    ax.set_title("Training curve")
    fig.tight_layout()
    FigureCanvasAgg(fig).print_png(str(png_path))
