"""How close the rebuilt train-docs.tsv comes to a given one (the project's, by default): for each manual, the pairs
`training.prepare_data --docs` aligns and filters (before decontamination) and how many of them are lines of the
file; then, over all manuals, the file's lines not rebuilt and the rebuilt pairs not in the file.

    python -m bench.docs_rebuild --cache data/downloads
    python -m bench.docs_rebuild --against D/train-docs.tsv --show 20

The twelve Debian packages are read from CACHE/debian as `prepare_data --docs` leaves them (downloaded with
`apt-get download` where missing). The last line of the output is a JSON summary; docs/data.md quotes it.
"""

import argparse

from bench.common import DATA_DIR, print_json, print_table, refuse_missing
from training import doc_pairs
from training.pinned import Lock


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.docs_rebuild", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--against", default=str(DATA_DIR / "train-docs.tsv"), help="the train-docs.tsv to compare with")
    p.add_argument("--cache", default="data/downloads", help="prepare_data's download folder (default: data/downloads)")
    p.add_argument("--show", type=int, default=0, metavar="N", help="also print N lines of each difference")
    args = p.parse_args(argv)
    refuse_missing(p, [args.against])
    return args


def rebuilt_pairs(cache):
    """-> {manual name: its pairs as TSV lines, in order}, aligned and filtered as `prepare_data --docs` does."""
    lock, pairs = Lock(cache), {}
    for manual in doc_pairs.MANUALS:
        kept, _ = doc_pairs.filter_doc_pairs(doc_pairs.aligned_manual(manual, cache, lock)[0], set())
        pairs[manual.name] = [f"{en}\t{it}" for en, it in kept]
    return pairs


def main(argv=None):
    args = parse_args(argv)
    with open(args.against, encoding="utf-8") as f:
        target = f.read().splitlines()
    by_manual = rebuilt_pairs(args.cache)
    lines = set(target)
    rows = [[name, len(set(pairs)), len(set(pairs) & lines)] for name, pairs in by_manual.items()]
    rebuilt = {line for pairs in by_manual.values() for line in pairs}
    not_rebuilt = [line for line in dict.fromkeys(target) if line not in rebuilt]
    not_in_file = sorted(rebuilt - lines)
    print_table(
        ["manual", "pairs rebuilt", "of them lines of the file"],
        [[name, f"{rebuilt_count:,}", f"{in_file:,}"] for name, rebuilt_count, in_file in rows],
    )
    print(
        f"{len(rebuilt):,} distinct pairs rebuilt, {len(rebuilt & lines):,} of the file's {len(lines):,} distinct "
        f"lines ({len(rebuilt & lines) / len(lines):.2%}); {len(not_in_file):,} pairs not in it, "
        f"{len(not_rebuilt):,} of its lines not rebuilt"
    )
    for title, differences in (("not rebuilt", not_rebuilt), ("not in the file", not_in_file)):
        for line in differences[: args.show]:
            print(f"{title}: {line}")
    print_json(
        {
            "benchmark": "docs_rebuild",
            "against": args.against,
            "manuals": [dict(zip(("name", "rebuilt", "in_file"), row)) for row in rows],
            "rebuilt": len(rebuilt),
            "file_lines": len(lines),
            "in_file": len(rebuilt & lines),
            "not_in_file": len(not_in_file),
            "not_rebuilt": len(not_rebuilt),
        }
    )


if __name__ == "__main__":
    main()
