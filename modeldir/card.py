"""A model described in Markdown, from its config and its metrics.json: the tables of the app's model card, and the
model directory's README.md in the Hugging Face Hub's model-card format (YAML metadata, then what it is, how it was
trained, its scores, how to use it, its limits and credits), so the directory can be uploaded to the Hub as it is.
A field metrics.json lacks, or holds in an older form, shows as "?": a card never fails on a partial file.

    python -m modeldir.card assets/model
    python -m modeldir.card runs/cpu/model --repo-id user/transformer-en-it

The export of `training.train` and `training.evaluate --record` write the card too; the command is for a directory
whose notes or metrics were edited by hand. `--repo-id` names the Hub repository in the card's usage examples and
metadata.
"""

import argparse
import re
from numbers import Real
from pathlib import Path

from inputs.command_line import run_cli
from transformer.model import Transformer

from .files import (
    ALL_LENGTHS,
    AS_GIVEN,
    EACH_SENTENCE_ONCE,
    LOSS_CURVE,
    METRICS,
    MODEL_CARD,
    REFERENCE_SNAPSHOTS,
    SNAPSHOTS,
    is_hub_repo_id,
    read_history,
    read_metrics,
    read_notes,
    scores,
    write_atomic,
)
from .loading import WEIGHTS_SHA256, dtype_name, read_config

UNKNOWN = "?"
# The trained weights' licence: share-alike, as the training data that asks for it (OLDI Seed, MT-GenEval, CoCoA-MT,
# the copyleft manuals) requires; the code is MIT (LICENSE). Every source's credit is in the card.
LICENSE = "cc-by-sa-4.0"
DEFAULT_NAME = "transformer-en-it"  # the model-index name when the card does not know the repository's id
# The data sets on the Hub behind the names scores are recorded under (`training.evaluate --record NAME`), so the
# card's metadata links to them; scores on other data are listed under their own name.
HUB_DATASETS = {
    "test-tatoeba": dict(
        type="Helsinki-NLP/tatoeba_mt", name="Tatoeba MT Challenge eng-ita (test)", config="eng-ita", split="test"
    ),
}
HUB_METRICS = (("sacrebleu", "BLEU", "bleu"), ("chrf", "chrF", "chrf"))  # Hub metric id, shown name, Score field


def _is_number(value):
    return isinstance(value, Real) and not isinstance(value, bool)


def _number(value, spec=","):
    """`value` formatted with `spec` if it is a number, else "?"."""
    return format(value, spec) if _is_number(value) else UNKNOWN


def _dict(value):
    return value if isinstance(value, dict) else {}


def table(header, rows):
    """Markdown table lines; a "|" inside a cell is escaped so it cannot split the cell."""

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *map(line, rows)]


def architecture_rows(cfg, parameters):
    """(part, size) rows of a TransformerConfig and its parameter count."""
    return [
        ("parameters", _number(parameters)),
        ("encoder / decoder layers", f"{cfg.n_encoder_layers} / {cfg.n_decoder_layers}"),
        ("d_model / heads / d_ff", f"{cfg.d_model} / {cfg.n_heads} (d_k = {cfg.d_model // cfg.n_heads}) / {cfg.d_ff}"),
        ("vocabulary", f"{cfg.vocab_size:,} BPE tokens shared by English and Italian"),
        ("longest input", f"{cfg.max_len - 1} tokens"),  # the last position is </s>
        ("layer norm", "pre-norm (before each sublayer)" if cfg.norm_first else "post-norm (as in the paper)"),
        ("tied embeddings", "yes (source = target = output projection)" if cfg.tie_embeddings else "no"),
    ]


def data_summary(data):
    """One run's training data, in either form metrics.json holds: weighted sources (`train` a list of paths,
    `weights`, `pairs_per_epoch`, `retype_share`, `join_share`, `long_weight`, `long_words`) or, before that, one
    file (`train`, `train_pairs`)."""
    data = _dict(data)
    paths = training_sources(data)
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
    if _is_number(data.get("long_weight")) and data["long_weight"] != 1:
        facts.append(f"pairs of {_number(data.get('long_words'))}+ English words ×{_number(data['long_weight'], 'g')}")
    text = ", ".join(names) or UNKNOWN
    return f"{text} ({', '.join(facts)})" if facts else text


def training_sources(data):
    """The training sources (TSV paths or Hub dataset ids) of one run's recorded data."""
    train = _dict(data).get("train")
    return train if isinstance(train, list) else [train] if train else []


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


def averaged_weights(run):
    """The checkpoint files a run's weights were averaged from (`training.recipes.average`), and the command;
    ([], None)."""
    averaged = _dict(run.get("averaged"))
    weights = [w for w in averaged.get("weights") or [] if isinstance(w, str)]
    command = averaged.get("command") if weights and isinstance(averaged.get("command"), str) else None
    return weights, command


def averaged_summary(run):
    """What the steps column adds for a run whose weights were averaged, else ""."""
    weights, _ = averaged_weights(run)
    if not weights:
        return ""
    steps = [int(m.group(1)) for w in weights if (m := re.search(r"step-(\d+)", w))]
    if len(weights) == 1:  # one file "averaged" is that checkpoint exported as a model
        return f", then its checkpoint of step {steps[0]:,} exported" if steps else ""
    # The files come in the order given, a shell's glob sorting step-1000 before step-200: the range is by number.
    which = f" (steps {min(steps):,} to {max(steps):,})" if len(steps) == len(weights) else ""
    return f", then {len(weights)} checkpoints averaged{which}"


def _before_and_after(value):
    """Whether `value` is a record's [before, after] pair of whole numbers."""
    return isinstance(value, list) and len(value) == 2 and all(isinstance(n, int) for n in value)


def grown_summary(run):
    """What the steps column adds for a run whose model was then grown deeper (`training.recipes.deepen`), else ""."""
    layers = _dict(run.get("grown")).get("encoder_layers")
    return f", then grown from {layers[0]} to {layers[1]} encoder layers" if _before_and_after(layers) else ""


def new_vocabulary_summary(run):
    """What the steps column adds for a run whose model then got a new vocabulary
    (`training.recipes.new_vocabulary`), else ""."""
    sizes = _dict(run.get("new_vocabulary")).get("vocab_size")
    return f", then given a vocabulary of {sizes[1]:,} tokens (was {sizes[0]:,})" if _before_and_after(sizes) else ""


def training_markdown(metrics, heading="### Training"):
    """A row per training run, and the time of all of them when there were several ("" without any)."""
    runs = training_runs(metrics)
    if not runs:
        return ""
    averaged, grown = [averaged_summary(run) for run in runs], [grown_summary(run) for run in runs]
    new_vocabularies = [new_vocabulary_summary(run) for run in runs]
    notes = [a + g + v for a, g, v in zip(averaged, grown, new_vocabularies)]
    rows = [
        (
            i,
            data_summary(run.get("data")),
            f"{_number(run.get('steps'))} / {_number(run.get('epochs'), 'g')}" + note,
            time_summary(run),
        )
        for i, (run, note) in enumerate(zip(runs, notes), 1)
    ]
    lines = [heading, *table(("run", "data", "steps / epochs", "time"), rows)]
    minutes = [run["minutes"] for run in runs if _is_number(run.get("minutes"))]
    if len(runs) > 1 and minutes:
        unknown = len(runs) - len(minutes)
        lines += [
            "",
            f"In all: {sum(minutes):,.1f} minutes of training in {len(runs)} runs"
            + (f" ({unknown} of them of unknown length)" if unknown else "")
            + ".",
        ]
    if any(averaged):
        lines += [
            "",
            "Each run is counted up to the model it exported, its best checkpoint; where its weights were "
            "then averaged (`training.recipes.average`), the steps column says which, and a run averaged "
            "beside its training log (`metrics.csv`) is counted up to the last of them.",
        ]
    if any(grown):
        lines += [
            "",
            "A model grown deeper (`training.recipes.deepen`) got new encoder layers that compute the "
            "identity: it translated as before, and the runs after it trained the new layers with the old.",
        ]
    if any(new_vocabularies):
        lines += [
            "",
            "A model given a new vocabulary (`training.recipes.new_vocabulary`) kept the embedding of every token "
            "the old one had; each new token started at the mean of the old pieces that spell it.",
        ]
    return "\n".join(lines)


def scores_markdown(metrics, heading="### Scores"):
    """The score records of metrics.json as a table ("" without any)."""
    rows = [
        (
            r.data,
            r.variant if r.subset == ALL_LENGTHS else f"{r.variant}, {r.subset}",
            r.decoding,
            r.precision,
            r.bleu,
            r.chrf,
            _number(r.n),
        )
        for r in scores(metrics)
    ]
    if not rows:
        return ""
    header = ("data", "English", "decoding", "precision", "BLEU", "chrF", "sentences")
    return "\n".join([heading, *table(header, rows)])


# --- The Hub model card (README.md of a model directory) ------------------------------------------------------------


def _slug(name):
    return re.sub(r"[^\w.-]+", "-", str(name)).strip("-").lower() or "data"


def eval_results(metrics):
    """The scores on whole data sets as given (one per data set, decoding and precision) as the Hub's EvalResults."""
    from huggingface_hub import EvalResult

    results = []
    for s in scores(metrics):
        if s.variant != AS_GIVEN or s.subset != ALL_LENGTHS:
            continue
        data = HUB_DATASETS.get(s.data, dict(type=_slug(s.data), name=str(s.data)))
        results += [
            EvalResult(
                task_type="translation",
                task_name="Translation",
                dataset_type=data["type"],
                dataset_name=data["name"],
                dataset_config=data.get("config"),
                dataset_split=data.get("split"),
                metric_type=metric,
                metric_value=getattr(s, field),
                metric_name=f"{shown} ({s.decoding}, {s.precision})",
            )
            for metric, shown, field in HUB_METRICS
            if _is_number(getattr(s, field))
        ]
    return results


def hub_datasets(metrics):
    """Hub ids of the data the model was trained on (sources that are Hub ids, not files) and scored on."""
    trained = [
        str(source)
        for run in training_runs(metrics)
        for source in training_sources(run.get("data"))
        if is_hub_repo_id(source) and not Path(str(source)).suffix
    ]
    scored = [HUB_DATASETS[s.data]["type"] for s in scores(metrics) if s.data in HUB_DATASETS]
    return list(dict.fromkeys(trained + scored))


def card_metadata(metrics, repo_id=None):
    """The card's YAML metadata: languages, licence, data sets, metrics, task and the recorded scores."""
    from huggingface_hub import ModelCardData

    results = eval_results(metrics)
    return ModelCardData(
        language=["en", "it"],
        license=LICENSE,
        datasets=hub_datasets(metrics) or None,
        metrics=[metric for metric, _, _ in HUB_METRICS],
        pipeline_tag="translation",
        tags=["translation", "transformer", "from-scratch", "pytorch"],
        model_name=(repo_id or DEFAULT_NAME) if results else None,
        eval_results=results or None,
    )


def training_card(metrics, loss_curve):
    """How the model was trained: its runs, the settings of the last one, the commands, the curve."""
    runs = training_runs(metrics)
    lines = [training_markdown(metrics, heading="## Training") or "## Training\n\nmetrics.json records no run."]
    settings = _dict(_dict(metrics.get("config")).get("train"))
    if settings:
        lines += [
            "",
            "Settings of the last run (`training/configs.py`):",
            "",
            *table(("setting", "value"), [(f"`{k}`", v) for k, v in settings.items()]),
        ]
    commands = [
        c for run in runs for c in [*(run.get("commands") or []), averaged_weights(run)[1]] if isinstance(c, str)
    ]
    if commands:
        lines += ["", "The commands that trained it, in order, as they were run:", "", "```bash", *commands, "```"]
    if loss_curve:
        lines += ["", f"![Training curve: train loss and dev BLEU]({LOSS_CURVE})"]
    return "\n".join(lines)


def scores_card(metrics):
    """The score records, and how they were scored ("" without any)."""
    lines = scores_markdown(metrics, heading="## Scores")
    once = any(s.subset == EACH_SENTENCE_ONCE for s in scores(metrics))
    exception = f' ("{EACH_SENTENCE_ONCE}": each English sentence once, against all the lines translating it)'
    return lines and (
        f"{lines}\n\nsacreBLEU (13a tokenisation) and chrF, every line scored against its own reference"
        f"{exception if once else ''}; metrics.json holds the command behind each record."
    )


def usage_card(repo_id, sha256=None):
    """How to run the model: with the code of the project that trained it, not `transformers`; `sha256`: the
    weights' (metrics.json), which `open_model` checks."""
    repo = repo_id or "USER/NAME"
    checked = f", sha256 `{sha256}`, checked when `open_model` loads it" if isinstance(sha256, str) else ""
    where = "" if repo_id else " (`USER/NAME`: the id of the Hub repository that holds this model)"
    return f"""## How to use it

This is not a `transformers` model: it runs with the `transformer` package of the project that trained it (PyTorch,
`tokenizers`, `safetensors`, `huggingface_hub`). From a checkout of the project{where}:

```python
from modeldir.directory import open_model

tr = open_model("{repo}").translator  # fetched once into the Hugging Face cache, read from it offline afterwards
tr.translate("I love books.")
tr.translate(["Good morning.", "Where is the station?"], beam=4)
```

The project's web app shows every attention map while it translates: `MODEL_DIR={repo} python app.py`. The files:
`model.safetensors` (weights; tied matrices stored once{checked}), `config.json` (the architecture), `tokenizer.json`
(the BPE tokenizer), `metrics.json` (training runs and scores, each with the command that produced it)."""


def limits_card(cfg, notes):
    """What the model cannot do, then its own notes (notes.md: what it is good and bad at, its data credits)."""
    lines = [
        "## Limits",
        "",
        f"- It reads at most {cfg.max_len - 1} subword tokens of an input and translates only those.",
        "- It translates one sentence at a time and sees nothing of the text around it.",
        "- It is a small model trained from scratch on little data: check what it says.",
    ]
    return "\n".join(lines + (["", notes.strip()] if notes.strip() else []))


CREDITS = """## Licence and credits

- The weights are released under **CC BY-SA 4.0** (share-alike, as some of the training data asks); the code that
  trained them is MIT.
- The architecture: Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
- The data: the sources named under Training and in the model's notes above, each under its own licence, credited
  there as it asks."""


def history_markdown(history, reference, heading="### How it learned"):
    """What the training histories beside the model show (`history`: its own, training_snapshots.json; `reference`:
    from_scratch_snapshots.json), and that the app plays them; "" without either."""
    lines = []
    if history:
        snapshots, first = history["snapshots"], history["snapshots"][0]["step"]
        start = "from step 0" if first == 0 else f"from step {first:,} (its earlier training recorded none)"
        lines.append(
            f"`{SNAPSHOTS}` holds this model's own training history {start}: at each of {len(snapshots)} "
            f"evaluations, the greedy translation and cross-attention of {len(history['probes'])} probe "
            f"sentences, with the train loss and dev BLEU of that moment."
        )
    if reference:
        minutes = reference["snapshots"][-1]["minutes"]
        evaluations, probes = len(reference["snapshots"]), len(reference["probes"])
        lines.append(
            f"`{REFERENCE_SNAPSHOTS}` holds, at each of {evaluations} evaluations from step 0, "
            f"the greedy translation and cross-attention of {probes} probe sentences for a "
            f"model of the same architecture and data trained from scratch for {minutes:.0f} minutes by "
            f"`training.train` — not this model's own history, but how such a model learns."
        )
    if not lines:
        return ""
    lines.append(
        "The app's *How it learned* tab plays them: the translations going from noise to sentences, and the "
        "cross-attention finding the diagonal."
    )
    return "\n\n".join([heading, *lines])


def hub_model_card(cfg, parameters, metrics, notes="", repo_id=None, loss_curve=False, histories=(None, None)):
    """README.md of a model directory in the Hub's format: YAML metadata, then the card. `cfg`: TransformerConfig;
    `metrics`: its metrics.json; `notes`: its notes.md; `loss_curve`: whether the directory holds the curve;
    `histories`: its own training history and a from-scratch one (`history_markdown`)."""
    intro = (
        f"An encoder–decoder Transformer that translates English into Italian, written and trained from scratch "
        f'in PyTorch after "Attention Is All You Need" (Vaswani et al., 2017): {_number(parameters)} '
        "parameters, one BPE vocabulary shared by both languages, greedy or beam-search decoding with a "
        "key/value cache."
    )
    sections = [
        "# English → Italian Transformer, trained from scratch",
        intro,
        "\n".join(["## Architecture", "", *table(("part", "size"), architecture_rows(cfg, parameters))]),
        training_card(metrics, loss_curve),
        history_markdown(*histories, heading="## How it learned"),
        scores_card(metrics),
        usage_card(repo_id, metrics.get(WEIGHTS_SHA256)),
        limits_card(cfg, notes),
        CREDITS,
    ]
    return f"---\n{card_metadata(metrics, repo_id).to_yaml()}\n---\n\n" + "\n\n".join(s for s in sections if s) + "\n"


def write_model_card(model_dir, repo_id=None):
    """Write the Hub model card, README.md, into `model_dir` from its config.json, metrics.json and notes.md (what
    the export and `training.evaluate --record` do, and `python -m modeldir.card DIR`); returns its path."""
    model_dir = Path(model_dir)
    cfg = read_config(model_dir)
    metrics = read_metrics(model_dir / METRICS)
    parameters = metrics.get("parameters")
    if not _is_number(parameters):
        parameters = Transformer(cfg).num_parameters()
    histories = read_history(model_dir), read_history(model_dir, REFERENCE_SNAPSHOTS)
    card = hub_model_card(
        cfg,
        parameters,
        metrics,
        read_notes(model_dir),
        repo_id,
        loss_curve=(model_dir / LOSS_CURVE).is_file(),
        histories=histories,
    )
    path = model_dir / MODEL_CARD
    write_atomic(path, card)
    return path


# --- The app's model card tab ---------------------------------------------------------------------------------------


def architecture_markdown(translator):
    rows = architecture_rows(translator.model.cfg, translator.model.num_parameters())
    rows.append(("runs in", dtype_name(translator.model)))
    return "\n".join(["### Architecture", *table(("part", "size"), rows)])


def model_card_markdown(directory, scores_help=""):
    """Architecture, size, training and scores of a `model_dir.ModelDirectory`, read from its config and
    metrics.json; `scores_help` (Markdown) follows the scores."""
    scores = scores_markdown(directory.metrics)
    sections = [
        architecture_markdown(directory.translator),
        training_markdown(directory.metrics),
        history_markdown(directory.history, directory.reference_history),
        scores and f"{scores}\n\n{scores_help}".strip(),
    ]
    return "\n\n".join(section for section in sections if section)


def about_markdown(directory, credits):
    """The model's own notes (its directory's notes.md, when there is one), then the page's `credits`."""
    return "\n\n".join(text for text in (directory.notes.strip(), credits) if text)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m modeldir.card", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model_dir", help="model directory (config.json, metrics.json, optional notes.md)")
    parser.add_argument("--repo-id", help="the Hub repository the model is (to be) uploaded to, user/name")
    args = parser.parse_args(argv)
    print(write_model_card(args.model_dir, repo_id=args.repo_id))


if __name__ == "__main__":
    run_cli(main)
