"""The round-5 mix trained on a lent GPU in one call of the device tool, prepared here, brought back and scored.

A lent GPU machine comes rarely, for minutes, bare, with no network; it takes the working tree (at most 64 MiB, with
the folders named in `carry`) and gives back at most 8 files of 16 MiB from $OUT. So the run is three steps:

    python -m training.gpu_run prepare --data data/en-it --distilled KD --out .gpu  # here: the mix's files, gzipped
    python -m training.gpu_run train --bundle .gpu --out $OUT --minutes 5           # there (carry [".gpu"])
    python -m training.gpu_run join --parts DIR --out runs/gpu                      # here: DIR/<run>/model

`prepare` writes the round-5 mix (`BUNDLE`: Tatoeba in the informal singular, the shipped model's translations of it
that agree with the references (`--distilled`: `recipes.distill`, then `recipes.agree`), a sample of Europarl's pairs
of at most 25 words that do not say "you", train-extra, train-docs and the project's domain set) and the sets the run
is scored on. `train` runs `RUNS` side by side: the `wide` shape, the largest within the app's latency budget, from
scratch in bfloat16 for `--minutes`, and the shipped model continued two ways for half of them, keeping checkpoints.
Each run's checkpoints and their means are scored there as the app runs them (greedy, float32) on dev, the best few
(`CHOOSE_TOP`) on dev-news and the demo and held-out sets too. The wide run's choice and the better continuation's
are packed into parts of at most 15 MiB, with every score in `scores.json`. `--dry-run` does every step on this
machine's CPU with the `tiny` config for seconds, so the script is tested before a GPU is ever lent.
"""

import argparse
import gzip
import json
import random
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from modeldir.directory import open_model

from .cli import run_cli
from .data import read_tsv
from .demo_set import SETS, read_demo_set, translate_and_score
from .evaluate import pairs_to_score, score
from .recipes import average
from .recipes.distill import tsv_line
from .recipes.informal import SPEAKS_TO_SEVERAL, SPEAKS_TO_YOU, informal_english, keep_informal
from .train import WEIGHTS_KEPT, kept_step

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = ROOT / "data" / "domain"
SHIPPED = ROOT / "assets" / "model"
TOKENIZER = SHIPPED / "tokenizer.json"
EUROPARL_MAX_WORDS = 25
# All 340,290 of Europarl's pairs of at most 25 words without "you", gzipped, with the repository and the distilled
# file, would pass the 64 MiB the device tool carries (docs/deployment.md#training-on-gpus). A seeded sample of
# 120,000, seen 0.17 times an epoch, gives each epoch as many Europarl pairs as all of them did at round 5's 0.06.
EUROPARL_SAMPLE = 120_000
SAMPLE_SEED = 5
SCORED = ["dev.tsv", "dev-news.tsv"]
PART_BYTES = 15 * 2**20  # under the device tool's 16 MiB a file
CHOOSE_TOP = 3  # candidates of a run scored beyond dev
THREADS = 4  # CPU threads per training: three trainings and the scoring share the GPU machine's 16 cores
PACKING_SECONDS = 60  # kept at the end of the call to export and pack: no candidate is scored in them


@dataclass(frozen=True)
class Run:
    """One training of the call: its shape, what it starts from, how often each bundle file is seen per epoch, its
    settings, and the share of `--minutes` it trains for."""

    name: str
    config: str
    start: tuple  # ("--tokenizer", file): from scratch; ("--init-from", model directory): continued
    mix: dict
    settings: tuple
    minutes_share: float = 1.0


# The continuations' mix is run AV's (the distilled file beside the references), with round 5's Europarl added.
CONTINUED_MIX = {
    "train-tu.tsv.gz": 1,
    "distilled-tu.tsv.gz": 1,
    "europarl.tsv.gz": 0.17,
    "train-extra.tsv.gz": 2,
    "domain.tsv.gz": 6,
}
CONTINUED = ("max_tokens=16000", "warmup_steps=200", "eval_every=100", "eval_limit=500", "keep_weights=100")
RUNS = (
    # The largest shape within the app's 20 ms (`bench.model_shapes`), from scratch: round 4's 11 GPU minutes of it
    # came within 0.4 BLEU of the shipped model; this mix adds Europarl, the domain set and a better teacher.
    Run(
        "wide",
        "wide",
        ("--tokenizer", str(TOKENIZER)),
        {
            "train-tu.tsv.gz": 1,
            "distilled-tu.tsv.gz": 1,
            "europarl.tsv.gz": 0.17,
            "train-extra.tsv.gz": 2,
            "train-docs.tsv.gz": 0.25,
            "domain.tsv.gz": 8,
        },
        ("max_tokens=32000", "lr=1.5e-3", "warmup_steps=600", "eval_every=400", "eval_limit=1000", "keep_weights=8"),
    ),
    # The shipped model, every weight, at the peak rate of run AU's one check above it.
    Run("continued", "cpu", ("--init-from", str(SHIPPED)), CONTINUED_MIX, (*CONTINUED, "lr=5e-5"), 0.5),
    # Its cross-attention alone, as part 14 was made (run AF), at AF's rate.
    Run(
        "cross",
        "cpu",
        ("--init-from", str(SHIPPED)),
        CONTINUED_MIX,
        (*CONTINUED, "lr=3e-5", "train_only=decoder.layers.*.cross_attention"),
        0.5,
    ),
)
BUNDLE = sorted({name for run in RUNS for name in run.mix})
DRY_RUN_SETTINGS = ("max_tokens=400", "eval_every=10", "eval_limit=20", "keep_weights=4")
DRY_RUN_SENTENCES = 12  # of each demo set scored


def write_pairs_gz(path, pairs):
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        f.writelines(tsv_line(en, it) for en, it in pairs)


def speaks_to_anyone(english):
    """Whether the English says "you" to one person or several (`recipes.informal`'s patterns): Europarl's "you" is
    the House."""
    return bool(SPEAKS_TO_YOU.search(english) or SPEAKS_TO_SEVERAL.search(english))


def europarl_pairs(path):
    """A seeded sample of EUROPARL_SAMPLE of Europarl's pairs of at most EUROPARL_MAX_WORDS English words whose English
    does not address anyone: its "you" is the House, plural and formal, the register the app's visitors are not
    addressed in (run A of round 5)."""
    pairs, _ = read_tsv(path)
    kept = [(en, it) for en, it in pairs if len(en.split()) <= EUROPARL_MAX_WORDS and not speaks_to_anyone(en)]
    return random.Random(SAMPLE_SEED).sample(kept, min(EUROPARL_SAMPLE, len(kept)))


def prepare(data, distilled, out, limit=0):
    """The bundle of `BUNDLE` and `SCORED` in `out`, from the files `training.prepare_data` writes in `data` and the
    teacher's translations `distilled` (the first `limit` pairs of each, if > 0); returns its size in bytes."""
    data, out = Path(data), Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def first(pairs):
        return pairs[:limit] if limit else pairs

    tatoeba = first(read_tsv(data / "train.tsv")[0])
    sources = {
        "train-tu.tsv.gz": keep_informal(tatoeba, informal_english(tatoeba))[0],
        "distilled-tu.tsv.gz": first(read_tsv(distilled)[0]),
        "europarl.tsv.gz": first(europarl_pairs(data / "train-europarl.tsv.gz")),
        "train-extra.tsv.gz": first(read_tsv(data / "train-extra.tsv")[0]),
        "train-docs.tsv.gz": first(read_tsv(data / "train-docs.tsv")[0]),
        "domain.tsv.gz": [pair for path in sorted(DOMAIN.glob("*.tsv")) for pair in read_tsv(path)[0]],
    }
    for name, pairs in sources.items():
        write_pairs_gz(out / name, pairs)
        print(f"{name}: {len(pairs):,} pairs")
    for name in SCORED:
        shutil.copyfile(data / name, out / name)
    return sum(path.stat().st_size for path in out.iterdir())


def training_command(run, bundle, work, minutes, dry_run):
    """The `python -m training.train` arguments of `run`: the tiny config, tiny batches, for a dry run."""
    files, weights = zip(*run.mix.items())
    config = "tiny" if dry_run and run.start[0] == "--tokenizer" else run.config
    settings = (*run.settings, *DRY_RUN_SETTINGS) if dry_run else run.settings
    return [
        "training.train",
        "--config",
        config,
        *run.start,
        "--train",
        *(str(bundle / f) for f in files),
        "--train-weights",
        *map(str, weights),
        "--dev",
        str(bundle / "dev.tsv"),
        "--out",
        str(work / run.name),
        "--max-minutes",
        f"{minutes * run.minutes_share:g}",
        "--precision",
        "bfloat16",
        "--threads",
        str(THREADS),
        "--no-progress",
        "--set",
        *settings,
    ]


def start(command, log):
    """A `python -m` command started from the repository root, its output written to `log`."""
    print("$", " ".join(command), flush=True)
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(command) + "\n")
        f.flush()
        return subprocess.Popen([sys.executable, "-m", *command], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)


def finish(process, log):
    """Wait for a `start`ed training; if it failed, stop the call with the end of its log."""
    if process.wait():
        raise RuntimeError(
            f"{' '.join(process.args[2:4])} failed ({process.returncode}); the end of {log}:\n"
            + "\n".join(Path(log).read_text(encoding="utf-8").splitlines()[-20:])
        )


def scored(translator, bundle, limit=None):
    """`translator` scored as the app runs it (greedy) on the bundle's dev sets and on the demo and held-out sets;
    `limit`: the first few sentences of each demo set (a dry run checks the step, not the score)."""
    scores = {}
    for name in SCORED:
        result = score(translator, pairs_to_score(bundle / name), progress=False)
        scores[name] = {key: result[key] for key in ("bleu", "chrf", "n")}
    for demo_set, tsv in SETS.items():
        result = translate_and_score(translator, read_demo_set(tsv)[:limit])
        scores[demo_set] = {"right": result["all"]["right"], "of": len(result["sentences"])}
    return scores


def candidates(weights):
    """The means to score of a run's kept checkpoints `weights` (in step order), in the order they are scored: six
    consecutive ones ending at each (the latest first), all of them, then each one alone; about twelve ends when there
    are more."""
    stride = max(1, len(weights) // 12)
    ends = range(len(weights) - 1, -1, -stride)
    windows = (
        [weights[max(0, end - 5) : end + 1] for end in ends] + [weights] + [weights[end : end + 1] for end in ends]
    )
    found = {}
    for window in windows:  # consecutive checkpoints: the name says which, so a window met twice is scored once
        first, last = kept_step(window[0]), kept_step(window[-1])
        found.setdefault(f"step-{first}" if len(window) == 1 else f"steps-{first}-{last}", window)
    return found


def beats(scores, shipped):
    """Whether `scores` are above the shipped model's on dev, dev-news and the demo set together (the ship rule)."""
    return (
        scores["dev.tsv"]["bleu"] > shipped["dev.tsv"]["bleu"]
        and scores["dev-news.tsv"]["bleu"] > shipped["dev-news.tsv"]["bleu"]
        and scores["demo"]["right"] > shipped["demo"]["right"]
    )


def choose(run_dir, bundle, shipped, deadline, limit=None):
    """Each candidate of the run in `run_dir` scored on dev (the latest first, none begun after `deadline`, a
    `time.monotonic()`), the best CHOOSE_TOP on every set; returns the scores and the chosen one's name and
    checkpoints: the best on dev of those that beat `shipped`, else of all."""
    translator = open_model(run_dir / "model", dtype="float32").translator
    weights = sorted((run_dir / WEIGHTS_KEPT).glob("step-*.safetensors"), key=kept_step)
    found = candidates(weights)
    dev_pairs = pairs_to_score(bundle / "dev.tsv")
    dev = {}
    for name, paths in found.items():
        if dev and time.monotonic() > deadline:
            break
        translator.model.load_state_dict(average.average_weights(paths), strict=False)  # tied matrices stored once
        dev[name] = score(translator, dev_pairs, progress=False)["bleu"]
    top = sorted(dev, key=dev.get, reverse=True)[:CHOOSE_TOP]
    full = {}
    for name in top:
        translator.model.load_state_dict(average.average_weights(found[name]), strict=False)
        full[name] = scored(translator, bundle, limit)
    winners = [name for name in top if beats(full[name], shipped)] or top
    chosen = max(winners, key=lambda name: full[name]["dev.tsv"]["bleu"])
    return {"dev": dev, "scored": full, "chosen": chosen}, found[chosen]


def export(run_dir, weights, log, out):
    """The mean of `weights` as a model directory `out` with the run's records and its training `log`."""
    average.main(["--model", str(run_dir / "model"), "--weights", *map(str, weights), "--out", str(out)])
    shutil.copyfile(log, Path(out) / "gpu_train.log")


def train(bundle, out, minutes, call_minutes, work, dry_run=False):
    """Train `RUNS` side by side on `bundle`, choose each run's best mean of checkpoints, and pack the best
    continuation and the wide model, with every score in `out`/scores.json, all within `call_minutes`."""
    bundle, out, work = Path(bundle), Path(out), Path(work)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    deadline = began + call_minutes * 60 - PACKING_SECONDS
    logs = {run.name: work / f"{run.name}.log" for run in RUNS}
    processes = {run.name: start(training_command(run, bundle, work, minutes, dry_run), logs[run.name]) for run in RUNS}
    limit = DRY_RUN_SENTENCES if dry_run else None
    report = {"shipped": scored(open_model(SHIPPED, dtype="float32").translator, bundle, limit), "runs": {}}
    # The shortest runs end first: their checkpoints are scored while the longer ones still train.
    for run in sorted(RUNS, key=lambda run: run.minutes_share):
        finish(processes[run.name], logs[run.name])
        report["runs"][run.name], weights = choose(work / run.name, bundle, report["shipped"], deadline, limit)
        export(work / run.name, weights, logs[run.name], work / "chosen" / run.name)
        chosen = report["runs"][run.name]["chosen"]
        print(f"{run.name}: {chosen}", json.dumps(report["runs"][run.name]["scored"][chosen]), flush=True)
    report["seconds"] = round(time.monotonic() - began)
    (out / "scores.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    continuations = [run.name for run in RUNS if run.start[0] == "--init-from"]
    best = max(continuations, key=lambda name: chosen_scores(report, name, report["shipped"]))
    for name in ("wide", best):
        pack(work / "chosen" / name, out, name)


def chosen_scores(report, name, shipped):
    """How run `name`'s choice ranks: first whether it beats the shipped model, then its dev BLEU."""
    scores = report["runs"][name]["scored"][report["runs"][name]["chosen"]]
    return beats(scores, shipped), scores["dev.tsv"]["bleu"]


def pack(model, out, name):
    """`model` (a directory) as `name`.tar, gzipped (its JSON compresses well: the two models fit the 64 MiB that
    come back), split into parts of at most PART_BYTES in `out`."""
    Path(out).mkdir(parents=True, exist_ok=True)
    archive = Path(out) / f"{name}.tar"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        tar.add(model, arcname=f"{name}/model")
    with open(archive, "rb") as f:
        for i, part in enumerate(iter(lambda: f.read(PART_BYTES), b"")):
            (Path(out) / f"{name}.tar.{i:02d}").write_bytes(part)
    archive.unlink()


def join(parts, out):
    """The model directories that `pack` split into `parts`, in `out`/<name>/model; returns their paths."""
    names = sorted({piece.name.split(".tar.")[0] for piece in Path(parts).glob("*.tar.[0-9][0-9]")})
    if not names:
        raise ValueError(f"{parts}: no NAME.tar.00, NAME.tar.01, ... (what `train` writes)")
    Path(out).mkdir(parents=True, exist_ok=True)
    models = []
    for name in names:
        archive = Path(out) / f"{name}.tar"
        with open(archive, "wb") as f:
            for piece in sorted(Path(parts).glob(f"{name}.tar.[0-9][0-9]")):
                f.write(piece.read_bytes())
        with tarfile.open(archive) as tar:
            tar.extractall(out, filter="data")
        archive.unlink()
        models.append(Path(out) / name / "model")
    return models


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.gpu_run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    steps = parser.add_subparsers(dest="step", required=True)
    p = steps.add_parser("prepare", help="write the mix's files (here)")
    p.add_argument(
        "--data", default="data/en-it", help="what `python -m training.prepare_data --europarl --docs` writes"
    )
    p.add_argument(
        "--distilled",
        required=True,
        help="the shipped model's translations of the informal Tatoeba file, kept where they agree with the "
        "references (`recipes.distill --beam 1`, then `recipes.agree`)",
    )
    p.add_argument("--out", default=".gpu", help="the bundle's folder (list it in .git/info/exclude and carry it)")
    p.add_argument("--limit", type=int, default=0, help="only the first N pairs of each file (a trial)")
    t = steps.add_parser("train", help="train, score and pack (on the GPU machine)")
    t.add_argument("--bundle", default=".gpu")
    t.add_argument("--out", required=True, help="where the parts go ($OUT on the device machine)")
    t.add_argument(
        "--minutes", type=float, default=5.0, help="the wide model's training time; leave the call room to score"
    )
    t.add_argument(
        "--call-minutes", type=float, default=9.0, help="the whole call's time: scoring stops in time to pack"
    )
    t.add_argument("--work", default="runs/gpu", help="the runs' directory")
    t.add_argument("--dry-run", action="store_true", help="the `tiny` config on this machine's CPU")
    j = steps.add_parser("join", help="the model directories again from the parts (here)")
    j.add_argument("--parts", required=True)
    j.add_argument("--out", required=True)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.step == "prepare":
        size = prepare(args.data, args.distilled, args.out, args.limit)
        print(f"{args.out}: {size / 2**20:.1f} MiB (the device tool carries at most 64 MiB with the working tree)")
    elif args.step == "train":
        train(args.bundle, args.out, args.minutes, args.call_minutes, args.work, args.dry_run)
    else:
        print("model directories:", *join(args.parts, args.out))


if __name__ == "__main__":
    run_cli(main)
