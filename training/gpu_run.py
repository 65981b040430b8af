"""The round-5 mix trained on a lent GPU in one call of the device tool, prepared here, brought back and scored.

A lent GPU machine comes rarely, for minutes, bare, with no network; it takes the working tree (at most 64 MiB, with
the folders named in `carry`) and gives back at most 8 files of 16 MiB from $OUT. So the run is three steps:

    python -m training.gpu_run prepare --data data/en-it --out .gpu      # here: the mix's files, gzipped
    python -m training.gpu_run train --bundle .gpu --out $OUT --minutes 7 # there (device run, carry [".gpu"])
    python -m training.gpu_run join --parts DIR --out runs/gpu            # here: DIR/model, its scores in DIR

`prepare` writes the round-5 mix (`MIX`: Tatoeba in the informal singular, Europarl's pairs of at most 25 words that
do not say "you", train-extra, train-docs and the project's domain set) and the sets the run is scored on. `train`
trains the `wide` shape from scratch on the shipped tokenizer in bfloat16 for `--minutes`, scores the best
checkpoint on dev, dev-news, the demo set and the held-out set as the app runs it (greedy), and packs the model
directory with the scores and the log into parts of at most 15 MiB. `--dry-run` does every step on this machine's
CPU with the `tiny` config for seconds, so the script is tested before a GPU is ever lent.
"""

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from modeldir.directory import open_model

from .cli import run_cli
from .data import read_tsv
from .demo_set import SETS, read_demo_set, translate_and_score
from .evaluate import pairs_to_score, score
from .recipes.distill import tsv_line
from .recipes.informal import SPEAKS_TO_SEVERAL, SPEAKS_TO_YOU, informal_english, keep_informal

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = ROOT / "data" / "domain"
TOKENIZER = ROOT / "assets" / "model" / "tokenizer.json"
EUROPARL_MAX_WORDS = 25
# (file in the bundle, how often it is seen per epoch): round 5's run B, the best of its CPU runs on dev.
MIX = [
    ("train-tu.tsv.gz", 1),
    ("europarl-25-no-you.tsv.gz", 0.06),
    ("train-extra.tsv.gz", 1),
    ("train-docs.tsv.gz", 0.25),
    ("domain.tsv.gz", 8),
]
SCORED = ["dev.tsv", "dev-news.tsv"]
PART_BYTES = 15 * 2**20  # under the device tool's 16 MiB a file
GPU_SETTINGS = ["max_tokens=32000", "lr=1.5e-3", "warmup_steps=1000", "eval_every=2000", "eval_limit=1000"]
DRY_RUN_SETTINGS = ["max_tokens=400", "eval_every=10", "eval_limit=20"]
DRY_RUN_SENTENCES = 12  # of each demo set scored


def write_pairs_gz(path, pairs):
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        f.writelines(tsv_line(en, it) for en, it in pairs)


def speaks_to_anyone(english):
    """Whether the English says "you" to one person or several (`recipes.informal`'s patterns): Europarl's "you" is
    the House."""
    return bool(SPEAKS_TO_YOU.search(english) or SPEAKS_TO_SEVERAL.search(english))


def europarl_pairs(path):
    """Europarl's pairs of at most EUROPARL_MAX_WORDS English words whose English does not address anyone: its "you"
    is the House, plural and formal, the register the app's visitors are not addressed in (run A of round 5)."""
    pairs, _ = read_tsv(path)
    return [(en, it) for en, it in pairs if len(en.split()) <= EUROPARL_MAX_WORDS and not speaks_to_anyone(en)]


def prepare(data, out, limit=0):
    """The bundle of `MIX` and `SCORED` in `out`, from the files `training.prepare_data` writes in `data` (the first
    `limit` pairs of each, if > 0); returns its size in bytes."""
    data, out = Path(data), Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def first(pairs):
        return pairs[:limit] if limit else pairs

    tatoeba = first(read_tsv(data / "train.tsv")[0])
    sources = {
        "train-tu.tsv.gz": keep_informal(tatoeba, informal_english(tatoeba))[0],
        "europarl-25-no-you.tsv.gz": first(europarl_pairs(data / "train-europarl.tsv.gz")),
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


def run(command, log):
    """Run a `python -m` command from the repository root, its output appended to `log` and shown."""
    print("$", " ".join(command), flush=True)
    with open(log, "a", encoding="utf-8") as f:
        f.write("$ " + " ".join(command) + "\n")
        f.flush()
        subprocess.run([sys.executable, "-m", *command], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, check=True)


def scored(model, bundle, limit=None):
    """`model` scored as the app runs it (greedy) on the bundle's dev sets and on the demo and held-out sets, in this
    process (the model opened once, on the GPU where there is one); `limit`: the first few sentences of each demo set
    (a dry run checks the step, not the score)."""
    translator = open_model(model).translator
    scores = {}
    for name in SCORED:
        result = score(translator, pairs_to_score(bundle / name), progress=False)
        scores[name] = {key: result[key] for key in ("bleu", "chrf", "n", "beam", "seconds")}
    for demo_set, tsv in SETS.items():
        scores[demo_set] = translate_and_score(translator, read_demo_set(tsv)[:limit])
    return scores


def train(bundle, out, minutes, work, dry_run=False):
    """Train the mix of `bundle` for `minutes`, score the model, and pack it into parts in `out`."""
    bundle, out, work = Path(bundle), Path(out), Path(work)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "train.log"
    files, weights = zip(*MIX)
    config, settings = ("tiny", DRY_RUN_SETTINGS) if dry_run else ("wide", GPU_SETTINGS)
    run(
        [
            "training.train",
            "--config",
            config,
            "--tokenizer",
            str(TOKENIZER),
            "--train",
            *(str(bundle / f) for f in files),
            "--train-weights",
            *map(str, weights),
            "--dev",
            str(bundle / "dev.tsv"),
            "--out",
            str(work / "run"),
            "--max-minutes",
            str(minutes),
            "--precision",
            "bfloat16",
            "--no-progress",
            "--set",
            *settings,
        ],
        log,
    )
    model = work / "run" / "model"
    scores = scored(model, bundle, DRY_RUN_SENTENCES if dry_run else None)
    print(
        ", ".join(f"{name} BLEU {scores[name]['bleu']}" for name in SCORED),
        ", ".join(f"{name} {scores[name]['all']['right']}/{len(scores[name]['sentences'])} right" for name in SETS),
        sep=", ",
    )
    (model / "gpu_scores.json").write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    shutil.copyfile(log, model / "gpu_train.log")
    pack(model, out)


def pack(model, out):
    """`model` (a directory) as model.tar split into parts of at most PART_BYTES in `out`."""
    Path(out).mkdir(parents=True, exist_ok=True)
    archive = Path(out) / "model.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(model, arcname="model")
    with open(archive, "rb") as f:
        for i, part in enumerate(iter(lambda: f.read(PART_BYTES), b"")):
            (Path(out) / f"model.tar.{i:02d}").write_bytes(part)
    archive.unlink()


def join(parts, out):
    """The model directory that `pack` split into `parts`, in `out`/model; returns its path."""
    pieces = sorted(Path(parts).glob("model.tar.[0-9][0-9]"))
    if not pieces:
        raise ValueError(f"{parts}: no model.tar.00, model.tar.01, ... (what `train` writes)")
    Path(out).mkdir(parents=True, exist_ok=True)
    archive = Path(out) / "model.tar"
    with open(archive, "wb") as f:
        for piece in pieces:
            f.write(piece.read_bytes())
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    archive.unlink()
    return Path(out) / "model"


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.gpu_run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    steps = parser.add_subparsers(dest="step", required=True)
    p = steps.add_parser("prepare", help="write the mix's files (here)")
    p.add_argument(
        "--data", default="data/en-it", help="what `python -m training.prepare_data --europarl --docs` writes"
    )
    p.add_argument("--out", default=".gpu", help="the bundle's folder (list it in .git/info/exclude and carry it)")
    p.add_argument("--limit", type=int, default=0, help="only the first N pairs of each file (a trial)")
    t = steps.add_parser("train", help="train, score and pack (on the GPU machine)")
    t.add_argument("--bundle", default=".gpu")
    t.add_argument("--out", required=True, help="where the parts go ($OUT on the device machine)")
    t.add_argument("--minutes", type=float, default=7.0, help="training time; leave the call room to score and pack")
    t.add_argument("--work", default="runs/gpu", help="the run's directory")
    t.add_argument("--dry-run", action="store_true", help="the `tiny` config on this machine's CPU")
    j = steps.add_parser("join", help="the model directory again from the parts (here)")
    j.add_argument("--parts", required=True)
    j.add_argument("--out", required=True)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.step == "prepare":
        size = prepare(args.data, args.out, args.limit)
        print(f"{args.out}: {size / 2**20:.1f} MiB (the device tool carries at most 64 MiB with the working tree)")
    elif args.step == "train":
        train(args.bundle, args.out, args.minutes, args.work, args.dry_run)
    else:
        print(f"model directory: {join(args.parts, args.out)}")


if __name__ == "__main__":
    run_cli(main)
