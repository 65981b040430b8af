"""The model card: architecture from the model's config, training and scores from its metrics.json (read by
`Translator.load` through `transformer.model_dir`), and the model's own notes. A field metrics.json lacks, or holds
in an older form, shows as "?": the card never fails on a partial file."""

from numbers import Real
from pathlib import Path

from transformer.model_dir import ALL_LENGTHS, scores

from .texts import CREDITS

UNKNOWN = "?"


def _is_number(value):
    return isinstance(value, Real) and not isinstance(value, bool)


def _number(value, spec=","):
    """`value` formatted with `spec` if it is a number, else "?"."""
    return format(value, spec) if _is_number(value) else UNKNOWN


def _dict(value):
    return value if isinstance(value, dict) else {}


def _table(header, rows):
    """Markdown table lines; a "|" inside a cell is escaped so it cannot split the cell."""
    line = lambda cells: "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return [line(header), "|" + "---|" * len(header), *map(line, rows)]


def architecture_markdown(translator):
    cfg = translator.model.cfg
    rows = [
        ("parameters", f"{translator.model.num_parameters():,}"),
        ("encoder / decoder layers", f"{cfg.n_encoder_layers} / {cfg.n_decoder_layers}"),
        ("d_model / heads / d_ff", f"{cfg.d_model} / {cfg.n_heads} (d_k = {cfg.d_model // cfg.n_heads}) / {cfg.d_ff}"),
        ("vocabulary", f"{cfg.vocab_size:,} BPE tokens shared by English and Italian"),
        ("longest input", f"{translator.max_source_tokens} tokens"),
        ("layer norm", "pre-norm (before each sublayer)" if cfg.norm_first else "post-norm (as in the paper)"),
        ("tied embeddings", "yes (source = target = output projection)" if cfg.tie_embeddings else "no"),
        ("runs in", str(next(translator.model.parameters()).dtype).removeprefix("torch.")),
    ]
    return "\n".join(["### Architecture", *_table(("part", "size"), rows)])


def data_summary(data):
    """One run's training data, in either form metrics.json holds: weighted sources (`train` a list of paths,
    `weights`, `pairs_per_epoch`, `retype_share`, `join_share`) or, before that, one file (`train`, `train_pairs`)."""
    data = _dict(data)
    train = data.get("train")
    paths = train if isinstance(train, list) else [train] if train else []
    names = [f"`{Path(str(p)).name}`" for p in paths]
    weights = data.get("weights")
    if len(paths) > 1 and isinstance(weights, list) and len(weights) == len(paths):
        names = [f"{name} ×{_number(w, 'g')}" for name, w in zip(names, weights)]
    facts = []
    if "pairs_per_epoch" in data:
        facts.append(f"{_number(data['pairs_per_epoch'])} pairs per epoch")
    elif "train_pairs" in data:
        facts.append(f"{_number(data['train_pairs'])} sentence pairs")
    for key, what in (("retype_share", "re-typed as people type"), ("join_share", "joined into longer pairs")):
        if key in data:
            facts.append(f"{_number(data[key], '.0%')} {what}")
    text = ", ".join(names) or UNKNOWN
    return f"{text} ({', '.join(facts)})" if facts else text


def time_summary(run):
    """How long one run trained, on what and in which precision, from what it recorded ("?" for nothing)."""
    parts = [f"{_number(run['minutes'], ',.1f')} minutes" if _is_number(run.get("minutes")) else UNKNOWN]
    parts += [f"on {run['hardware']}"] if run.get("hardware") else []
    parts += [f"in {run['precision']}"] if run.get("precision") else []
    return " ".join(parts)


def training_runs(metrics):
    """The training runs that made the model, earliest first: its history (runs it was continued from), then its own."""
    history = metrics.get("history")
    runs = [run for run in history if isinstance(run, dict) and run] if isinstance(history, list) else []
    training = _dict(metrics.get("training"))
    return runs + [training] if training else runs


def training_markdown(metrics):
    """A row per training run, and the time of all of them when there were several ("" without any)."""
    runs = training_runs(metrics)
    if not runs:
        return ""
    rows = [(i, data_summary(run.get("data")), f"{_number(run.get('steps'))} / {_number(run.get('epochs'), 'g')}",
             time_summary(run)) for i, run in enumerate(runs, 1)]
    lines = ["### Training", *_table(("run", "data", "steps / epochs", "time"), rows)]
    minutes = [run["minutes"] for run in runs if _is_number(run.get("minutes"))]
    if len(runs) > 1 and minutes:
        unknown = len(runs) - len(minutes)
        lines += ["", f"In all: {sum(minutes):,.1f} minutes of training in {len(runs)} runs"
                      + (f" ({unknown} of them of unknown length)" if unknown else "") + "."]
    return "\n".join(lines)


def scores_markdown(metrics):
    """The score records of metrics.json as a table ("" without any)."""
    rows = [(r.data, r.variant if r.subset == ALL_LENGTHS else f"{r.variant}, {r.subset}", r.decoding, r.precision,
             r.bleu, r.chrf, _number(r.n)) for r in scores(metrics)]
    if not rows:
        return ""
    header = ("data", "English", "decoding", "precision", "BLEU", "chrF", "sentences")
    return "\n".join(["### Scores", *_table(header, rows)])


def model_card_markdown(translator):
    """Architecture, size, training and scores, read from the model's config and metrics.json."""
    sections = [architecture_markdown(translator), training_markdown(translator.metrics),
                scores_markdown(translator.metrics)]
    return "\n\n".join(section for section in sections if section)


def about_markdown(translator):
    """The model's own notes (its directory's notes.md, when there is one), then the app's credits."""
    return "\n\n".join(text for text in (translator.notes.strip(), CREDITS) if text)
