"""How close the rebuilt train-europarl.tsv.gz comes to a given one (the project's, by default): the pairs
`training.prepare_data --europarl` writes, decontaminated as it does them, against the file's lines: how many are
shared, only rebuilt, only in the file, and whether the shared ones come in the same order.

    python -m bench.europarl_rebuild --europarl-from COPY --dev D/dev.tsv
    python -m bench.europarl_rebuild --cache data/downloads --show 20        # downloads the 774 files where missing

The test sets are read from CACHE as prepare_data leaves them (downloaded where missing); dev is the given dev.tsv;
about two minutes on one core. The last line of the output is a JSON summary; docs/data.md quotes it.
"""

import argparse
import gzip
from pathlib import Path

from bench.common import DATA_DIR, print_json, refuse_missing
from training import data_sources
from training.pinned import Lock
from training.prepare_data import build_europarl, demo_sentences, read_pairs, read_test_sets
from training.sentences import normalise


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.europarl_rebuild",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--against", default=str(DATA_DIR / "train-europarl.tsv.gz"), help="the file to compare with")
    p.add_argument("--dev", default=str(DATA_DIR / "dev.tsv"), help="the dev.tsv the rebuild is kept clear of")
    p.add_argument(
        "--europarl-from",
        type=Path,
        metavar="DIR",
        help="a copy of the Europarl repository (else the files are downloaded)",
    )
    p.add_argument("--cache", type=Path, default=Path("data/downloads"), help="prepare_data's download folder")
    p.add_argument("--show", type=int, default=0, metavar="N", help="also print N lines of each difference")
    args = p.parse_args(argv)
    refuse_missing(p, [args.against, args.dev])
    args.exclude = []
    return args


def main(argv=None):
    args = parse_args(argv)
    lock = Lock(args.cache)
    _, _, sides_to_avoid = read_test_sets(args, data_sources.PINNED, lock)
    dev_sides = {normalise(side) for pair in read_pairs(Path(args.dev))[0] for side in pair}
    pairs, _, removed = build_europarl(args, lock, sides_to_avoid | dev_sides | demo_sentences())
    rebuilt = [f"{en}\t{it}" for en, it in pairs]
    with gzip.open(args.against, "rt", encoding="utf-8") as f:
        target = f.read().splitlines()
    in_file, in_rebuild = set(target), set(rebuilt)
    only_rebuilt = [line for line in rebuilt if line not in in_file]
    only_in_file = [line for line in target if line not in in_rebuild]
    same_order = [line for line in rebuilt if line in in_file] == [line for line in target if line in in_rebuild]
    print(
        f"{len(rebuilt):,} pairs rebuilt, {len(target):,} in the file: {len(in_rebuild & in_file):,} shared (in the "
        f"same order: {same_order}), {len(only_rebuilt):,} only rebuilt, {len(only_in_file):,} only in the file"
    )
    for title, differences in (("only rebuilt", only_rebuilt), ("only in the file", only_in_file)):
        for line in differences[: args.show]:
            print(f"{title}: {line}")
    print_json(
        {
            "benchmark": "europarl_rebuild",
            "against": args.against,
            "rebuilt": len(rebuilt),
            "file_lines": len(target),
            "shared": len(in_rebuild & in_file),
            "same_order": same_order,
            "only_rebuilt": len(only_rebuilt),
            "only_in_file": len(only_in_file),
            "removed": removed,
        }
    )


if __name__ == "__main__":
    main()
