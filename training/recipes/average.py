"""Average the weights of several checkpoints of one run into one model: the last few evaluations of a run sit around
the same minimum, and their mean usually scores a few tenths of BLEU above any one of them (Vaswani et al. 2017
average the last 5 or 20 checkpoints).

    python -m training.train ... --set keep_weights=5       # keeps OUT/weights/step-N.safetensors of 5 evaluations
    python -m training.recipes.average --model runs/part5/model --weights runs/part5/weights/step-*.safetensors \\
        --out runs/part5/averaged
    python -m training.evaluate --model runs/part5/averaged --data data/en-it/dev.tsv

`--model` is the run's exported model directory: the architecture, tokenizer, metrics and history of the result.
The exported model is the run's best checkpoint, often earlier than the checkpoints averaged; where the run directory
beside it holds the run's log and history (metrics.csv, training_snapshots.json), the averaged model's training
record and history go on to its last averaged checkpoint, so its card counts the minutes its weights trained for.
"""

import argparse
import csv
from pathlib import Path

from safetensors.torch import load_file

from modeldir.directory import copy_training_records, open_model, save_model_dir
from modeldir.files import METRICS, SNAPSHOTS
from modeldir.loading import DTYPES

from ..cli import check_writable, command_line, run_cli
from ..snapshots import History
from ..train import LOG, kept_step


def average_weights(paths):
    """The element-wise mean (float32) of the weights in the safetensors files `paths`, which must hold the same
    tensors of the same shapes."""
    total, names = None, None
    for path in paths:
        weights = load_file(str(path))
        if names is None:
            names, total = set(weights), {name: t.float().clone() for name, t in weights.items()}
            continue
        if set(weights) != names or any(weights[n].shape != total[n].shape for n in names):
            raise ValueError(f"{path}: its tensors differ from those of {paths[0]}: not a checkpoint of the same model")
        for name in names:
            total[name] += weights[name].float()
    return {name: t / len(paths) for name, t in total.items()}


def last_step(paths, run_dir):
    """The step of the latest checkpoint among `paths`, when all are the trainer's step-N.safetensors files of the
    run in `run_dir` (its weights/ folder); else None."""
    weights = (Path(run_dir) / "weights").resolve()
    steps = [kept_step(p) for p in paths if Path(p).resolve().parent == weights]
    return max(steps) if len(steps) == len(paths) and None not in steps else None


def record_up_to(training, run_dir, step):
    """The run's training record `training` (that of its best checkpoint) carried on to `step`, from the run's log
    (`run_dir`/metrics.csv): steps, minutes and target tokens as logged there, epochs in proportion to the tokens.
    Unchanged when the log has no readable row for `step` or the step is not later."""
    log = Path(run_dir) / LOG
    if step is None or step <= training.get("steps", 0) or not log.is_file():
        return training
    with open(log, newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if row.get("step") == str(step)]
    try:
        tokens, minutes = int(rows[-1]["target_tokens"]), float(rows[-1]["minutes"])
    except (IndexError, KeyError, TypeError, ValueError):
        return training
    record = {**training, "steps": step, "minutes": round(minutes, 1), "target_tokens_seen": tokens}
    if training.get("epochs") and training.get("target_tokens_seen"):
        record["epochs"] = round(training["epochs"] * tokens / training["target_tokens_seen"], 2)
    return record


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m training.recipes.average",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="the run's exported model directory (architecture, tokenizer)")
    p.add_argument("--weights", required=True, nargs="+", help="safetensors files of the run's weights to average")
    p.add_argument("--out", required=True, help="directory of the averaged model")
    p.add_argument("--export-dtype", choices=DTYPES, default="float16", help="precision of the written weights")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    check_writable(args.out, "--out")
    base = open_model(args.model, dtype="float32", device="cpu")
    model = base.translator.model
    model.load_state_dict(average_weights(args.weights), strict=False)  # tied matrices are stored once
    averaged = {
        "weights": [Path(p).name for p in args.weights],
        "command": command_line("training.recipes.average", argv),
    }
    run_dir = base.path.parent
    step = last_step(args.weights, run_dir)
    best = base.metrics.get("training", {})
    training = record_up_to(best, run_dir, step)
    # Recorded with the run it averages, so that a run continuing this model (--init-from) keeps it in its history.
    metrics = {**base.metrics, "training": {**training, "averaged": averaged}}
    metrics.pop("scores", None)  # scores of the model it started from: this one is scored anew
    out = Path(args.out)
    save_model_dir(model, base.translator.tokenizer, out, dtype=DTYPES[args.export_dtype], metrics=metrics)
    carried = training is not best and (run_dir / SNAPSHOTS).is_file()
    if carried:
        History.resume(run_dir, step).save(out / SNAPSHOTS)
    copy_training_records(base.path, out, skip=(SNAPSHOTS,) if carried else ())
    print(f"averaged {len(args.weights)} checkpoints into {out} ({METRICS} records them)")


if __name__ == "__main__":
    run_cli(main)
