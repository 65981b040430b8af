"""Rebuild the English-Italian train/dev/test files from their public sources, decontaminated against test sets.

    python -m training.prepare_data --out data/en-it
    python -m training.prepare_data --out data/en-it --tatoeba ita-eng.zip --test-tatoeba test.txt
    python -m training.prepare_data --out data/en-it --exclude flores-devtest.tsv newstest2009.tsv \\
        --extra oldi-seed.tsv mt-geneval.tsv cocoa-mt.tsv

Sources: the Tatoeba pairs from manythings.org's ita-eng.zip (or its ita.txt, or a Hugging Face dataset id with
`--tatoeba-dataset`) and the Tatoeba MT Challenge eng-ita test set; each is downloaded into `--cache` when no path
is given. Every pair whose English or Italian side occurs on either side of the test set or of an `--exclude` test
set (ignoring case, spacing and Unicode composition) is removed from train, dev and extra, as are repeated pairs
and pairs with an empty side. Dev (`--dev-size` pairs or a few more) shares no English sentence with train.

Writes OUT/train.tsv (shuffled), OUT/dev.tsv, OUT/test-tatoeba.tsv, OUT/train-extra.tsv (with `--extra`: OLDI
Seed, MT-GenEval, CoCoA-MT, recognised by file name) and OUT/manifest.json: each source's path or URL, licence,
credit line and sha256, each output's pair count and sha256, and what each filter removed. The same inputs and
`--seed` give byte-identical files.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import re
import unicodedata
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from tqdm import tqdm

from .cli import command_line, positive_int, run_cli
from .data import load_pairs

TATOEBA_URL = "https://www.manythings.org/anki/ita-eng.zip"
TEST_URL = "https://raw.githubusercontent.com/Helsinki-NLP/Tatoeba-Challenge/master/data/test/eng-ita/test.txt"
TATOEBA = {"name": "Tatoeba English-Italian sentence pairs, as collected by manythings.org/anki",
           "licence": "CC-BY 2.0 FR", "credit": "Tatoeba.org contributors (CC-BY 2.0 FR)"}
TEST_SET = {"name": "Tatoeba MT Challenge eng-ita test set (Helsinki-NLP)", "licence": "CC-BY 2.0 FR",
            "credit": "Tatoeba MT Challenge eng-ita test set (Helsinki-NLP); Tatoeba.org contributors (CC-BY 2.0 FR)"}
EXCLUDED = {"name": "test set to decontaminate against", "licence": "not redistributed: only compared against"}
# Extra training sets, recognised by a word in their file name (lower-cased, without "-" and "_").
EXTRAS = {"seed": {"name": "OLDI Seed (openlanguagedata/seed)", "licence": "CC BY-SA 4.0",
                   "credit": "OLDI Seed, Open Language Data Initiative (CC BY-SA 4.0)"},
          "geneval": {"name": "MT-GenEval (amazon-science/machine-translation-gender-eval)", "licence": "CC BY-SA 3.0",
                      "credit": "MT-GenEval, Amazon Science (CC BY-SA 3.0)"},
          "cocoa": {"name": "CoCoA-MT (amazon-science/contrastive-controlled-mt)", "licence": "CDLA-Sharing 1.0",
                    "credit": "CoCoA-MT, Amazon Science (CDLA-Sharing 1.0)"}}
UNKNOWN_EXTRA = {"name": "extra training set", "licence": "unknown: check it before publishing a model trained on it"}
# Characters that would end a TSV field or line for some reader (str.splitlines splits on all of them).
LINE_BREAKS = re.compile(r"[\t\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")
TRAIN, DEV, TEST, EXTRA, MANIFEST = "train.tsv", "dev.tsv", "test-tatoeba.tsv", "train-extra.tsv", "manifest.json"


class DownloadError(FileNotFoundError):
    """A source that could not be downloaded: like a missing file, the user fixes it by giving a path."""


def normalise(text):
    """The form two sentences are compared in: NFC, lower-cased, runs of whitespace collapsed, stripped."""
    return " ".join(unicodedata.normalize("NFC", text.lower()).split())


def clean(text):
    """`text` as one TSV field: tabs and line breaks become a space."""
    return LINE_BREAKS.sub(" ", text).strip()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def download(url, path):
    """`url` -> `path`, with a progress bar, through a temporary file so no half download is ever cached."""
    part = path.with_name(path.name + ".part")
    request = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (training.prepare_data)"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open(part, "wb") as f:
            size = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=size, unit="B", unit_scale=True, desc=f"downloading {path.name}") as bar:
                while chunk := response.read(1 << 16):
                    f.write(chunk)
                    bar.update(len(chunk))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, path)


def fetch(url, cache_dir, flag):
    """The cached download of `url` (downloaded first when absent), kept as CACHE/FOLDER/NAME from the URL's
    last two parts. A failure names the URL and the flag that gives the file instead."""
    path = Path(cache_dir, *urllib.parse.urlsplit(url).path.split("/")[-2:])
    if path.is_file():
        print(f"using {path} (cached download of {url})")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        download(url, path)
    except (OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"could not download {url} ({reason}); download it elsewhere and give its path "
                            f"with {flag} PATH") from e
    return path


def input_file(path, flag, cache_dir=None, url=None):
    """-> (the file given with `flag`, or else the cached download of `url`; its manifest entry)."""
    if path is None:
        path = fetch(url, cache_dir, flag)
        entry = {"url": url, "path": str(path)}
    elif not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (given with {flag})")
    else:
        entry = {"path": str(path)}
    return Path(path), entry


def read_text(path):
    """A text file, or the one sentence file (like ita.txt) inside a manythings.org zip."""
    if path.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith(".txt") and not Path(n).name.startswith("_")]
                if len(names) != 1:
                    raise ValueError(f"{path}: expected one sentence file like ita.txt in the zip, found {names}")
                data = archive.read(names[0])
        except zipfile.BadZipFile as e:
            raise ValueError(f"{path}: not a valid zip file ({e}); if it is a download, delete it and run again")
    else:
        data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def line_pair(line):
    """(English, Italian) of `English<TAB>Italian`, manythings.org's `English<TAB>Italian<TAB>attribution` or
    the Tatoeba Challenge's `eng<TAB>ita<TAB>English<TAB>Italian`; None for any other line."""
    fields = line.split("\t")
    if len(fields) == 4 and fields[:2] == ["eng", "ita"]:
        return fields[2], fields[3]
    return (fields[0], fields[1]) if len(fields) in (2, 3) else None


def read_pairs(path):
    """-> (pairs as written, malformed lines). Splits on "\\n" only: other line breaks can be inside a sentence."""
    pairs, malformed = [], 0
    for line in read_text(path).split("\n"):
        if line.strip():
            pair = line_pair(line.rstrip("\r"))
            malformed += pair is None
            pairs += [pair] if pair else []
    return pairs, malformed


def say_read(source, pairs, malformed):
    print(f"read {len(pairs)} pairs from {source}" + (f" (skipped {malformed} malformed)" if malformed else ""))


def read_source(path, entry, info):
    """-> (pairs, malformed lines, manifest entry of the file) with a line saying what was read."""
    pairs, malformed = read_pairs(path)
    if not pairs:
        raise ValueError(f"{path}: no English<TAB>Italian pairs ({malformed} malformed lines)")
    say_read(entry.get("url", path), pairs, malformed)
    return pairs, malformed, {**info, **entry, "sha256": sha256(path.read_bytes()), "pairs": len(pairs)}


def read_tatoeba(args, sides_to_avoid):
    """-> (Tatoeba pairs, filtered; manifest entry; what was removed), from a file, a download or a Hugging Face
    dataset."""
    if args.tatoeba_dataset:
        pairs, malformed = load_pairs(args.tatoeba_dataset, args.tatoeba_config)
        say_read(args.tatoeba_dataset, pairs, malformed)
        entry = {**TATOEBA, "dataset": args.tatoeba_dataset, "config": args.tatoeba_config, "pairs": len(pairs)}
    else:
        pairs, malformed, entry = read_source(*input_file(args.tatoeba, "--tatoeba", args.cache, TATOEBA_URL), TATOEBA)
    pairs, removed = filter_pairs(pairs, sides_to_avoid)
    say_removed("tatoeba", removed)
    return pairs, entry, {"malformed": malformed, **removed}


def read_test_sets(args):
    """-> (the Tatoeba test pairs, cleaned; the normalised sides no training pair may share; manifest entries;
    what was removed from the test set). The test set keeps its repeated pairs: it is scored as published."""
    path, entry = input_file(args.test_tatoeba, "--test-tatoeba", args.cache, TEST_URL)
    test, malformed, entry = read_source(path, entry, TEST_SET)
    cleaned = [(clean(en), clean(it)) for en, it in test]
    test = [pair for pair in cleaned if all(pair)]
    test_sets, entries = [test], [entry]
    for path in args.exclude:
        pairs, _, entry = read_source(*input_file(path, "--exclude"), EXCLUDED)
        test_sets.append(pairs)
        entries.append(entry)
    sides = {normalise(side) for pairs in test_sets for pair in pairs for side in pair} - {""}
    print(f"avoiding {len(sides)} distinct sentences of {len(test_sets)} test sets")
    return test, sides, entries, {"malformed": malformed, "empty": len(cleaned) - len(test)}


def extra_info(path):
    """The licence and credit of an extra training set, recognised by its file name."""
    name = path.name.lower().replace("-", "").replace("_", "")
    return next((info for word, info in EXTRAS.items() if word in name), UNKNOWN_EXTRA)


def filter_pairs(pairs, sides_to_avoid):
    """-> (cleaned pairs, {filter: pairs it removed}): pairs with an empty side, repeats of an earlier pair and
    pairs sharing a side with a test set are dropped."""
    kept, seen = [], set()
    removed = {"empty": 0, "duplicates": 0, "test_overlap": 0}
    for en, it in pairs:
        pair = clean(en), clean(it)
        if not all(pair):
            removed["empty"] += 1
        elif pair in seen:
            removed["duplicates"] += 1
        elif normalise(pair[0]) in sides_to_avoid or normalise(pair[1]) in sides_to_avoid:
            removed["test_overlap"] += 1
        else:
            seen.add(pair)
            kept.append(pair)
    return kept, removed


def say_removed(what, removed):
    print(f"{what}: removed {removed['empty']} with an empty side, {removed['duplicates']} repeated, "
          f"{removed['test_overlap']} sharing a side with a test set")


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


def write_atomic(path, data):
    """Write through a temporary file: an interrupted run never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_pairs(path, pairs):
    """`English<TAB>Italian` lines (UTF-8, LF) -> the file's manifest entry."""
    data = "".join(f"{en}\t{it}\n" for en, it in pairs).encode("utf-8")
    write_atomic(path, data)
    print(f"wrote {path} ({len(pairs)} pairs)")
    return {"pairs": len(pairs), "sha256": sha256(data)}


def read_extras(paths, sides_to_avoid):
    """-> (extra pairs, filtered, in the order given; manifest entries; what was removed)."""
    pairs, entries, malformed = [], [], 0
    for path in paths:
        more, bad, entry = read_source(*input_file(path, "--extra"), extra_info(Path(path)))
        pairs, entries, malformed = pairs + more, entries + [entry], malformed + bad
    pairs, removed = filter_pairs(pairs, sides_to_avoid)
    say_removed("extra", removed)
    return pairs, entries, {"malformed": malformed, **removed}


def write_outputs(out, files, extra_given):
    """Write each file of pairs -> {name: manifest entry}. Without extras, a train-extra.tsv of an earlier run is
    removed, so the folder holds what the manifest lists."""
    out.mkdir(parents=True, exist_ok=True)
    if not extra_given and (out / EXTRA).exists():
        (out / EXTRA).unlink()
        print(f"removed {out / EXTRA} of an earlier run (no --extra given)")
    return {name: write_pairs(out / name, pairs) for name, pairs in files.items()}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m training.prepare_data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="folder the files are written to")
    tatoeba = parser.add_mutually_exclusive_group()
    tatoeba.add_argument("--tatoeba", metavar="PATH", help=f"ita-eng.zip or its ita.txt (default: {TATOEBA_URL})")
    tatoeba.add_argument("--tatoeba-dataset", metavar="ID", help="Hugging Face dataset id of the Tatoeba pairs")
    parser.add_argument("--tatoeba-config", metavar="NAME", help="the dataset's configuration, if it has several")
    parser.add_argument("--test-tatoeba", metavar="PATH", help=f"the Tatoeba Challenge test set (default: {TEST_URL})")
    parser.add_argument("--exclude", metavar="PATH", nargs="+", default=[], help="more test sets (TSV) to keep out")
    parser.add_argument("--extra", metavar="PATH", nargs="+", default=[], help="extra training sets (TSV)")
    parser.add_argument("--cache", metavar="DIR", type=Path, default=Path("data/downloads"),
                        help="folder downloads are kept in (default: data/downloads)")
    parser.add_argument("--dev-size", metavar="N", type=positive_int, default=2000,
                        help="dev pairs, as whole English sentences (default: 2000)")
    parser.add_argument("--seed", metavar="N", type=int, default=1234,
                        help="seed of the dev split and the train shuffle (default: 1234)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out}: is a file, not a folder")
    test, sides_to_avoid, test_sources, removed_from_test = read_test_sets(args)
    tatoeba, tatoeba_source, removed_from_tatoeba = read_tatoeba(args, sides_to_avoid)
    train, dev = split_dev(tatoeba, args.dev_size, args.seed)
    removed = {"tatoeba": removed_from_tatoeba, "test_set": removed_from_test}
    files, sources = {TRAIN: train, DEV: dev, TEST: test}, [tatoeba_source, *test_sources]
    if args.extra:
        files[EXTRA], extra_sources, removed["extra"] = read_extras(args.extra, sides_to_avoid)
        sources += extra_sources
    outputs = write_outputs(args.out, files, bool(args.extra))
    manifest = {"command": command_line("training.prepare_data", argv), "seed": args.seed, "dev_size": args.dev_size,
                "sources": sources, "outputs": outputs, "removed": removed}
    write_atomic(args.out / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    print(f"wrote {args.out / MANIFEST}")


if __name__ == "__main__":
    run_cli(main)
