"""Rebuild the English-Italian data the shipped model was trained and scored on, from pinned public sources.

    python -m training.prepare_data --out data/en-it
    python -m training.prepare_data --out data/en-it --docs          # also train-docs.tsv, from Debian packages
    python -m training.prepare_data --out data/en-it --europarl      # also train-europarl.tsv.gz (774 files, 232 MB)
    python -m training.prepare_data --out data/en-it --names         # also train-names.tsv (CLDR, from babel)
    python -m training.prepare_data --out data/en-it --tatoeba ita-eng.zip --exclude more-tests.tsv

Every source is a URL at a fixed commit (training/data_sources.py). A source is checked against the sha256 recorded
in the code, or else against the one recorded in CACHE/sources.lock.json on its first download: a changed source is
an error that names it. The one source that cannot be pinned, manythings.org's ita-eng.zip (republished as Tatoeba
grows), gives a warning with the pair counts when it differs from the recorded one.

Writes OUT/test-tatoeba.tsv (the Tatoeba MT Challenge eng-ita test set v2020-07-28, as scored), OUT/dev-news.tsv (WMT
newssyscomb2009), OUT/train.tsv (shuffled) and OUT/dev.tsv (the Tatoeba pairs), OUT/train-extra.tsv (OLDI Seed,
MT-GenEval, CoCoA-MT), with --docs OUT/train-docs.tsv, with --europarl OUT/train-europarl.tsv.gz, with --names
OUT/train-names.tsv (the names of countries, languages, currencies, months and days), and OUT/manifest.json:
each source's URL, sha256, licence and credit, each output's pair count and sha256 (and whether it is the project's
file), what each filter removed. test-tatoeba.tsv and dev-news.tsv must be byte-identical to the files the scores are
on, or nothing is written.

Every pair whose English or Italian side occurs on either side of any public test set (the three Tatoeba releases,
FLORES-200 devtest, newstest2009, newssyscomb2009, NTREX-128) or of an `--exclude` file is removed from train, dev,
extra, docs, Europarl and names, ignoring case, spacing and Unicode composition; docs also loses every pair sharing a
side with dev or the UD PUD treebanks, Europarl and names every pair sharing a side with dev or the demo sets
(data/demo). The same inputs and `--seed` give byte-identical files.
"""

import argparse
import gzip
import json
import random
import zipfile
from pathlib import Path

from . import cldr_names, data_sources
from .cli import command_line, positive_int, run_cli
from .data import load_pairs
from .doc_pairs import build_docs
from .europarl import europarl_pairs, session_files
from .pinned import Lock, SourceChanged, checked_source, fetch, sha256, write_atomic
from .sentences import clean, normalise

NEWLINE = b"\n"
TREEBANK_TEXT = "# text = "
TRAIN, DEV, TEST, DEV_NEWS, EXTRA, DOCS, EUROPARL, NAMES, MANIFEST = (
    "train.tsv",
    "dev.tsv",
    "test-tatoeba.tsv",
    "dev-news.tsv",
    "train-extra.tsv",
    "train-docs.tsv",
    "train-europarl.tsv.gz",
    "train-names.tsv",
    "manifest.json",
)
OPTIONAL = {DOCS: "--docs", EUROPARL: "--europarl", NAMES: "--names"}  # output -> the flag that builds it
DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
DEMO_SETS = ("demo.tsv", "heldout.tsv")  # in data/demo, with the columns english and italian
EXCLUDED = {"licence": "not redistributed: only compared against"}


def decode(path, data):
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def lines(path):
    """The lines of a one-sentence-per-line file. Splits on "\\n" only: other line breaks can be inside a sentence."""
    text = decode(path, path.read_bytes())
    return [line.rstrip("\r") for line in text.removesuffix("\n").split("\n")] if text else []


def read_parallel(parallel, cache_dir, lock):
    """-> (pairs of a line-aligned English file and Italian file, their manifest entries)."""
    (en_path, en_entry), (it_path, it_entry) = (
        checked_source(s, cache_dir, lock) for s in (parallel.english, parallel.italian)
    )
    english, italian = lines(en_path), lines(it_path)
    if len(english) != len(italian):
        raise ValueError(
            f"{parallel.name}: {len(english)} English lines ({en_path}) but {len(italian)} Italian lines ({it_path})"
        )
    return list(zip(english, italian)), [en_entry, it_entry]


def treebank_sentences(sources, cache_dir, lock):
    """-> (the normalised sentences of CoNLL-U treebanks: their `# text = ` lines, manifest entries)."""
    sentences, entries = set(), []
    for source in sources:
        path, entry = checked_source(source, cache_dir, lock)
        found = [line.removeprefix(TREEBANK_TEXT) for line in lines(path) if line.startswith(TREEBANK_TEXT)]
        if not found:
            raise ValueError(f"{source.name}: {path} has no '{TREEBANK_TEXT}' lines; is it a CoNLL-U file?")
        sentences |= {normalise(sentence) for sentence in found}
        entries.append({**entry, "sentences": len(found)})
    return sentences, entries


def read_text(path):
    """A text file, or the one sentence file (like ita.txt) inside a manythings.org zip."""
    if path.suffix.lower() != ".zip":
        return decode(path, path.read_bytes())
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.endswith(".txt") and not Path(n).name.startswith("_")]
            if len(names) != 1:
                raise ValueError(f"{path}: expected one sentence file like ita.txt in the zip, found {names}")
            return decode(path, archive.read(names[0]))
    except zipfile.BadZipFile as e:
        raise ValueError(f"{path}: not a valid zip file ({e}); if it is a download, delete it and run again")


def line_pair(line):
    """(English, Italian) of `English<TAB>Italian` or manythings.org's `English<TAB>Italian<TAB>attribution`;
    None for any other line."""
    fields = line.split("\t")
    return (fields[0], fields[1]) if len(fields) in (2, 3) else None


def read_pairs(path):
    """-> (pairs as written, malformed lines)."""
    pairs, malformed = [], 0
    for line in read_text(path).split("\n"):
        if line.strip():
            pair = line_pair(line.rstrip("\r"))
            malformed += pair is None
            pairs += [pair] if pair else []
    if not pairs:
        raise ValueError(f"{path}: no English<TAB>Italian pairs ({malformed} malformed lines)")
    return pairs, malformed


def say_read(source, pairs, malformed):
    print(f"read {len(pairs)} pairs from {source}" + (f" (skipped {malformed} malformed)" if malformed else ""))


def given_file(path, flag):
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (given with {flag})")
    return Path(path)


def read_tatoeba(args, sources, lock):
    """-> (the Tatoeba pairs as read, malformed lines, manifest entry). ita-eng.zip moves: a file that differs from
    the one recorded in the lock is a warning with both pair counts, and becomes the recorded one."""
    source = sources.tatoeba_pairs
    if args.tatoeba_dataset:
        pairs, malformed = load_pairs(args.tatoeba_dataset, args.tatoeba_config)
        say_read(args.tatoeba_dataset, pairs, malformed)
        return (
            pairs,
            malformed,
            {
                "name": args.tatoeba_dataset,
                "config": args.tatoeba_config,
                "pairs": len(pairs),
                "licence": source.licence,
                "credit": source.credit,
            },
        )
    path = given_file(args.tatoeba, "--tatoeba") if args.tatoeba else fetch(source.url, args.cache)
    pairs, malformed = read_pairs(path)
    say_read(path, pairs, malformed)
    digest, recorded = sha256(path.read_bytes()), lock.entries.get(source.name)
    if recorded and recorded["sha256"] != digest:
        print(
            f"warning: {path} is not the {source.name} recorded in {lock.path} ({recorded['pairs']} pairs then, "
            f"{len(pairs)} now): train.tsv and dev.tsv differ from the ones built from it"
        )
    if recorded != {"sha256": digest, "pairs": len(pairs)}:
        lock.record(source.name, {"sha256": digest, "pairs": len(pairs)})
    entry = {
        "name": source.name,
        "url": None if args.tatoeba else source.url,
        "path": str(path),
        "sha256": digest,
        "pinned": "no: republished as Tatoeba grows",
        "pairs": len(pairs),
        "licence": source.licence,
        "credit": source.credit,
    }
    return pairs, malformed, entry


def read_test_sets(args, sources, lock):
    """-> ({test set name: its pairs as published}, manifest entries, the normalised sides no training pair may
    share: those of every pinned test set and every `--exclude` file)."""
    test_sets, entries = {}, []
    for parallel in sources.test_sets:
        test_sets[parallel.name], more = read_parallel(parallel, args.cache, lock)
        entries += more
    excluded = []
    for path in args.exclude:
        pairs, _ = read_pairs(given_file(path, "--exclude"))
        excluded += pairs
        entries.append(
            {
                "name": Path(path).name,
                "path": str(path),
                "sha256": sha256(Path(path).read_bytes()),
                "pairs": len(pairs),
                **EXCLUDED,
            }
        )
    sides = {normalise(side) for pairs in [*test_sets.values(), excluded] for pair in pairs for side in pair} - {""}
    print(
        f"avoiding {len(sides)} distinct sentences of {len(test_sets)} test sets and {len(args.exclude)} "
        f"--exclude files"
    )
    return test_sets, entries, sides


def as_published(pairs):
    """A test set as it is scored: every pair kept, repeated ones too, each side made one TSV field."""
    cleaned = [(clean(en), clean(it)) for en, it in pairs]
    return [pair for pair in cleaned if all(pair)], {"empty": sum(not all(pair) for pair in cleaned)}


def filter_pairs(pairs, sides_to_avoid, dedupe=True):
    """-> (cleaned pairs, {filter: pairs it removed}): pairs with an empty side, repeats of an earlier pair (with
    `dedupe`) and pairs sharing a side with a test set are dropped."""
    kept, seen = [], set()
    removed = {"empty": 0, "duplicates": 0, "test_overlap": 0}
    for en, it in pairs:
        pair = clean(en), clean(it)
        if not all(pair):
            removed["empty"] += 1
        elif dedupe and pair in seen:
            removed["duplicates"] += 1
        elif normalise(pair[0]) in sides_to_avoid or normalise(pair[1]) in sides_to_avoid:
            removed["test_overlap"] += 1
        else:
            seen.add(pair)
            kept.append(pair)
    return kept, removed


def say_removed(what, removed):
    print(
        f"{what}: removed {removed['empty']} with an empty side, {removed['duplicates']} repeated, "
        f"{removed['test_overlap']} sharing a side with a test set"
    )


def read_extras(sources, cache_dir, lock, sides_to_avoid):
    """-> (train-extra pairs in the order of `sources.extra_sets`, manifest entries, what was removed). Repeats are
    kept: CoCoA-MT gives some sentences the same informal and formal reference, one line for each, as the project's
    file has them."""
    pairs, entries = [], []
    for parallel in sources.extra_sets:
        more, more_entries = read_parallel(parallel, cache_dir, lock)
        pairs += more
        entries += [entry for entry in more_entries if entry not in entries]
    pairs, removed = filter_pairs(pairs, sides_to_avoid, dedupe=False)
    say_removed("extra", removed)
    return pairs, entries, removed


def demo_sentences(folder=DEMO_DIR):
    """The normalised English and Italian sentences of the project's demo sets (DEMO_SETS in `folder`)."""
    sentences = set()
    for name in DEMO_SETS:
        header, *rows = [line.split("\t") for line in lines(Path(folder, name))]
        columns = [header.index("english"), header.index("italian")]
        sentences |= {normalise(row[i]) for row in rows for i in columns}
    return sentences


def build_europarl(args, lock, sides_to_avoid):
    """-> (Europarl's pairs in session order, manifest entry, what was removed): cleaned by training/europarl.py, then
    without repeated pairs and pairs sharing a side with `sides_to_avoid`."""
    files, entry = session_files(args.cache, lock, args.europarl_from)
    pairs, removed = europarl_pairs(files)
    pairs, more_removed = filter_pairs(pairs, sides_to_avoid)
    removed |= {"duplicates": more_removed["duplicates"], "test_overlap": more_removed["test_overlap"]}
    print(f"europarl: {len(pairs)} pairs; removed {json.dumps(removed)}")
    return pairs, {**entry, "pairs": len(pairs)}, removed


def build_names(sides_to_avoid):
    """-> (CLDR's names, manifest entry, what was removed): without repeated pairs and pairs sharing a side with
    `sides_to_avoid`."""
    by_kind = cldr_names.name_pairs()
    pairs, removed = filter_pairs([pair for names in by_kind.values() for pair in names], sides_to_avoid)
    say_removed("names", removed)
    entry = {
        "name": "cldr-names",
        "package": f"babel {cldr_names.BABEL}",
        "sha256": cldr_names.SHA256,
        "pairs": {kind: len(names) for kind, names in by_kind.items()},
        "licence": cldr_names.LICENCE,
        "credit": cldr_names.CREDIT,
    }
    return pairs, entry, removed


def split_dev(pairs, dev_size, seed):
    """-> (train shuffled, dev in reading order). Dev takes whole English sentences (normalised; all their
    translations) in a seeded random order until it holds at least `dev_size` pairs, so it shares none with train."""
    by_english = {}
    for pair in pairs:
        by_english.setdefault(normalise(pair[0]), []).append(pair)
    rng = random.Random(seed)
    sentences = list(by_english)
    rng.shuffle(sentences)
    dev_sentences, n_dev = set(), 0
    for sentence in sentences:
        if n_dev >= dev_size:
            break
        dev_sentences.add(sentence)
        n_dev += len(by_english[sentence])
    dev = [pair for pair in pairs if normalise(pair[0]) in dev_sentences]
    train = [pair for pair in pairs if normalise(pair[0]) not in dev_sentences]
    if not train:
        raise ValueError(f"--dev-size {dev_size} leaves no training pairs ({len(pairs)} Tatoeba pairs remain)")
    rng.shuffle(train)
    print(f"split: {len(dev)} dev pairs ({len(dev_sentences)} English sentences), {len(train)} train pairs")
    return train, dev


def tsv_bytes(pairs):
    return "".join(f"{en}\t{it}\n" for en, it in pairs).encode("utf-8")


def as_written(name, data):
    """A file's bytes as written: a .gz one gzip-compressed without a time stamp, so the same pairs give the same
    bytes."""
    return gzip.compress(data, mtime=0) if name.endswith(".gz") else data


def checked_outputs(files, project_outputs, sources_of):
    """-> ({name: bytes}, {name: manifest entry}), once every file the scores are on is byte-identical to the
    project's: otherwise nothing is written and the error names the file and the sources (`sources_of[name]`) it
    was built from."""
    contents, entries = {}, {}
    for name, pairs in files.items():
        contents[name] = tsv_bytes(pairs)
        entries[name] = {"pairs": len(pairs), "sha256": sha256(contents[name])}
        if name in project_outputs:
            entries[name]["same_as_project_file"] = entries[name]["sha256"] == project_outputs[name]
            if name in data_sources.MUST_MATCH and not entries[name]["same_as_project_file"]:
                raise SourceChanged(
                    f"{name}: the rebuild has sha256 {entries[name]['sha256']}, not the "
                    f"{project_outputs[name]} of the file the scores are on; its sources "
                    f"({', '.join(sources_of[name])}) are not the files it was made from: delete them "
                    f"and their lines in the lock file to download them again"
                )
    return contents, entries


def write_outputs(out, contents):
    """Write each file (a .gz one compressed). An optional file of an earlier run that this one did not build is
    removed, so the folder holds what the manifest lists."""
    out.mkdir(parents=True, exist_ok=True)
    for name, flag in OPTIONAL.items():
        if name not in contents and (out / name).exists():
            (out / name).unlink()
            print(f"removed {out / name} of an earlier run (no {flag} given)")
    for name, data in contents.items():
        write_atomic(out / name, as_written(name, data))
        print(f"wrote {out / name} ({data.count(NEWLINE)} pairs)")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.prepare_data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, type=Path, help="folder the files are written to")
    tatoeba = parser.add_mutually_exclusive_group()
    tatoeba.add_argument(
        "--tatoeba", metavar="PATH", help=f"ita-eng.zip or its ita.txt (default: {data_sources.TATOEBA_PAIRS.url})"
    )
    tatoeba.add_argument("--tatoeba-dataset", metavar="ID", help="Hugging Face dataset id of the Tatoeba pairs")
    parser.add_argument("--tatoeba-config", metavar="NAME", help="the dataset's configuration, if it has several")
    parser.add_argument(
        "--exclude",
        metavar="PATH",
        nargs="+",
        default=[],
        help="more test sets (TSV) to keep out, besides the pinned public ones",
    )
    parser.add_argument(
        "--docs",
        action="store_true",
        help="also build train-docs.tsv from the Debian documentation packages (apt-get download)",
    )
    parser.add_argument(
        "--europarl",
        action="store_true",
        help="also build train-europarl.tsv.gz from Europarl's it-en release (774 files, 232 MB)",
    )
    parser.add_argument(
        "--europarl-from",
        metavar="DIR",
        type=Path,
        help="read Europarl's files from DIR, a copy of the repository at its pinned commit, "
        "instead of downloading them (still checked by sha256); implies --europarl",
    )
    parser.add_argument(
        "--names",
        action="store_true",
        help="also build train-names.tsv: the names of countries, languages, currencies, months and days in both "
        f"languages, from the CLDR data of babel {cldr_names.BABEL} (no download)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        type=Path,
        default=Path("data/downloads"),
        help="folder downloads and the lock file of their hashes are kept in (default: data/downloads)",
    )
    parser.add_argument(
        "--dev-size",
        metavar="N",
        type=positive_int,
        default=2000,
        help="dev pairs, as whole English sentences (default: 2000)",
    )
    parser.add_argument(
        "--seed",
        metavar="N",
        type=int,
        default=1234,
        help="seed of the dev split and the train shuffle (default: 1234)",
    )
    return parser.parse_args(argv)


def main(argv=None, sources=data_sources.PINNED):
    args = parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out}: is a file, not a folder")
    for path, flag in [(args.tatoeba, "--tatoeba"), *((path, "--exclude") for path in args.exclude)]:
        if path:
            given_file(path, flag)  # before any download
    if args.europarl_from and not args.europarl_from.is_dir():
        raise FileNotFoundError(f"{args.europarl_from}: no such folder (given with --europarl-from)")
    lock = Lock(args.cache)
    test_sets, source_entries, sides_to_avoid = read_test_sets(args, sources, lock)
    test, removed_from_test = as_published(test_sets[sources.benchmark])
    dev_news, removed_from_dev_news = as_published(test_sets[sources.dev_news])
    tatoeba, malformed, tatoeba_entry = read_tatoeba(args, sources, lock)
    tatoeba, removed_from_tatoeba = filter_pairs(tatoeba, sides_to_avoid)
    say_removed("tatoeba", removed_from_tatoeba)
    train, dev = split_dev(tatoeba, args.dev_size, args.seed)
    extra, extra_entries, removed_from_extra = read_extras(sources, args.cache, lock, sides_to_avoid)
    files = {TRAIN: train, DEV: dev, TEST: test, DEV_NEWS: dev_news, EXTRA: extra}
    removed = {
        "tatoeba": {"malformed": malformed, **removed_from_tatoeba},
        "test_set": removed_from_test,
        "dev_news": removed_from_dev_news,
        "extra": removed_from_extra,
    }
    source_entries += [tatoeba_entry, *extra_entries]
    dev_sides = {normalise(side) for pair in dev for side in pair}
    if args.docs:
        treebank_sides, treebank_entries = treebank_sentences(sources.docs_also_avoid, args.cache, lock)
        files[DOCS], docs_entries, removed["docs"] = build_docs(
            args.cache, lock, sides_to_avoid | dev_sides | treebank_sides, args.seed
        )
        source_entries += treebank_entries + docs_entries
    if args.europarl or args.europarl_from:
        files[EUROPARL], europarl_entry, removed["europarl"] = build_europarl(
            args, lock, sides_to_avoid | dev_sides | demo_sentences()
        )
        source_entries.append(europarl_entry)
    if args.names:
        files[NAMES], names_entry, removed["names"] = build_names(sides_to_avoid | dev_sides | demo_sentences())
        source_entries.append(names_entry)
    test_set_files = {parallel.name: [parallel.english.name, parallel.italian.name] for parallel in sources.test_sets}
    sources_of = {TEST: test_set_files[sources.benchmark], DEV_NEWS: test_set_files[sources.dev_news]}
    contents, outputs = checked_outputs(files, sources.project_outputs, sources_of)
    write_outputs(args.out, contents)
    manifest = {
        "command": command_line("training.prepare_data", argv),
        "seed": args.seed,
        "dev_size": args.dev_size,
        "sources": source_entries,
        "outputs": outputs,
        "removed": removed,
    }
    write_atomic(args.out / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    print(f"wrote {args.out / MANIFEST}")


if __name__ == "__main__":
    run_cli(main)
