"""train-europarl.tsv.gz: the European Parliament's debates of 1996-2001 in English and Italian (Europarl, Koehn), the
optional `--europarl` step of `training.prepare_data`.

The source is the sentence-aligned "it-en" release of Europarl as the public GitHub repository Martingeek4life/Sin-r
holds it at a fixed commit: one `ep-YY-MM-DD.al` file per session and language, ISO-8859-1, tokenised by the Moses
tokeniser, line i of the English file aligned with line i of the Italian one. Each of the 774 files must have the
sha256 pinned in `europarl_sha256.json`. Each side is decoded and NFC-normalised, then detokenised:

- what the tokeniser split is joined first (`JOINS`): hyphens (`part - session`), number slashes (`1999 / 2000`),
  thousands (`72 . 750`), Italian elisions (`dell ' Unione`) and apocopes (`un po ' .`), English clitics
  (`Parliament 's`, `Member States ' interests`);
- then the Moses detokeniser (sacremoses), and after it what it leaves undone (`AFTER_DETOKENISER`):
  guillemets closed up (`« sì »`, in both languages), `un po'` kept apart from the next word, Italian ordinals closed
  up (`1 º gennaio`).

Then `FILTERS` drop, in order, counting each: a pair with an empty side, one the release's dash artefact garbled, a
stage direction, a length mismatch. `prepare_data` then removes repeated pairs and pairs sharing a side with a test
set, dev or the demo sets, like every other file. Pairs stay in session order.
"""

import functools
import json
import re
import unicodedata
from pathlib import Path

from .data_sources import Source, github
from .doc_pairs import LENGTH_RATIO
from .pinned import checked_source, verified

REPOSITORY, COMMIT = "Martingeek4life/Sin-r", "e8471c43b9812223f0d9d561625d8c6131b893ce"
FOLDER = "it-en"  # it-en/en/ep-YY-MM-DD.al and it-en/it/ep-YY-MM-DD.al
LANGUAGES = ("en", "it")
LICENCE = (
    'no known copyright restrictions (statmt.org: "We are not aware of any copyright restrictions of the material")'
)
CREDIT = "Europarl: A Parallel Corpus for Statistical Machine Translation, Philipp Koehn, MT Summit 2005"
# {session file name: [sha256 of its English file, of its Italian file]}, read from the repository at COMMIT.
SHA256 = json.loads(Path(__file__).with_name("europarl_sha256.json").read_text(encoding="utf-8"))

SOFT_HYPHEN = "\xad"
SPLIT_NUMBERS_AND_WORDS = (
    (re.compile(r"(?<=\w) - (?=\w)"), "-"),
    (re.compile(r"(?<=\d) / (?=\d)"), "/"),
    (re.compile(r"(?<=\d) \. (?=\d{3}\b)"), "."),
)
JOINS = {  # language -> (pattern, replacement) applied in order to the tokenised text, before the detokeniser
    "en": (
        *SPLIT_NUMBERS_AND_WORDS,
        (re.compile(r"(?<=\w) '(?=s\b)|(?<=s) '(?= [a-z])"), "'"),
    ),  # Parliament's; Member States' interests
    "it": (
        *SPLIT_NUMBERS_AND_WORDS,
        (re.compile(r"\b(po|be|fa) ' "), r"\1' "),  # apocopes: "un po' di più", "be', che"
        (re.compile(r"(?<=\w) ' (?=\w)"), "'"),
    ),  # elisions: dell'Unione
}
GUILLEMETS = ((re.compile(r"« "), "«"), (re.compile(r" »"), "»"))
AFTER_DETOKENISER = {  # language -> (pattern, replacement) applied in order to the detokeniser's output
    "en": GUILLEMETS,
    "it": (
        *GUILLEMETS,
        (re.compile(r"\bpo'(?=\w)"), "po' "),  # its Italian rule glues "po'" to the next word as an elision
        (re.compile(r"(?<=\d) º"), "º"),
    ),
}


@functools.cache
def detokeniser(language):
    """The Moses detokeniser of `language`, made on first use: sacremoses takes a while to import, and only a rebuild
    of Europarl needs it, not every command that imports prepare_data."""
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=language)


# The release lost each dash of a parenthesis with the letter before it: "recommend - and it is ... idea - that" is
# "recommen. and it is ... ide. that". In the tokenised text a real full stop stands apart from its word, so a word of
# two letters or more with a full stop attached, before a lower-case word, is that artefact (etc. and ecc. aside).
DASH_ARTEFACT = re.compile(r"(?<![\w.])(?!etc\.|ecc\.)[A-Za-zàèéìòù]{2,}\. [a-zàèéìòù]")
STAGE_DIRECTION = re.compile(r"^\(.*\)$")  # "(Applause)", "(The sitting was closed at 7.15 p.m)"
MIN_LENGTH_DIFFERENCE = 15  # characters: a short pair keeps its ratio ("Chechnya" / "Situazione in Cecenia")


def length_mismatch(en, it):
    """A side of one character, or a length ratio outside LENGTH_RATIO where the lengths differ by
    MIN_LENGTH_DIFFERENCE characters or more."""
    ratio_outside = not LENGTH_RATIO[0] <= len(it) / len(en) <= LENGTH_RATIO[1]
    return min(len(en), len(it)) < 2 or (ratio_outside and abs(len(en) - len(it)) >= MIN_LENGTH_DIFFERENCE)


FILTERS = (  # (name, a pair is dropped when this is true of its tokenised sides and its detokenised ones)
    ("empty", lambda tokenised, pair: not all(pair)),
    ("dash_artefact", lambda tokenised, pair: any(DASH_ARTEFACT.search(side) for side in tokenised)),
    ("stage_direction", lambda tokenised, pair: any(STAGE_DIRECTION.search(side) for side in pair)),
    ("length_mismatch", lambda tokenised, pair: length_mismatch(*pair)),
)


def session_sources():
    """-> [(English Source, Italian Source)] of every session, in file-name order."""
    return [
        tuple(
            Source(
                f"europarl-{language}/{name}",
                github(REPOSITORY, COMMIT, f"{FOLDER}/{language}/{name}"),
                LICENCE,
                CREDIT,
                digest,
            )
            for language, digest in zip(LANGUAGES, digests)
        )
        for name, digests in sorted(SHA256.items())
    ]


def session_files(cache_dir, lock, local_copy=None):
    """-> ([(English path, Italian path)] of every session, the manifest entry), each file checked against its pinned
    sha256: downloaded into the cache, or read from `local_copy`, a copy of the repository at COMMIT."""
    files = []
    for sources in session_sources():
        if local_copy is None:
            files.append(tuple(checked_source(source, cache_dir, lock)[0] for source in sources))
        else:
            paths = tuple(
                Path(local_copy, FOLDER, language, Path(source.url).name)
                for language, source in zip(LANGUAGES, sources)
            )
            for source, path in zip(sources, paths):
                if not path.is_file():
                    raise FileNotFoundError(
                        f"{path}: no such file (--europarl-from {local_copy} must be a copy of "
                        f"{REPOSITORY} at {COMMIT})"
                    )
                verified(source, path, lock)
            files.append(paths)
    entry = {
        "name": "europarl-it-en",
        "url": f"https://github.com/{REPOSITORY}/tree/{COMMIT}/{FOLDER}",
        "path": str(local_copy) if local_copy else None,
        "files": 2 * len(files),
        "pinned": "in the code (training/europarl_sha256.json)",
        "licence": LICENCE,
        "credit": CREDIT,
    }
    return files, entry


def detokenised(line, language):
    """One tokenised line of the release as plain text."""
    text = " ".join(unicodedata.normalize("NFC", line).replace(SOFT_HYPHEN, "").split())
    for pattern, replacement in JOINS[language]:
        text = pattern.sub(replacement, text)
    text = detokeniser(language).detokenize(text.split())
    for pattern, replacement in AFTER_DETOKENISER[language]:
        text = pattern.sub(replacement, text)
    return text


def session_lines(path):
    """The lines of one ISO-8859-1 session file, split on "\\n" only."""
    return path.read_bytes().decode("latin-1").removesuffix("\n").split("\n")


def europarl_pairs(files):
    """-> (pairs of the sessions `files`, in order, cleaned, {filter: pairs it removed}); no two files of a session
    may differ in lines."""
    kept, removed = [], {name: 0 for name, _ in FILTERS}
    for english_path, italian_path in files:
        english, italian = session_lines(english_path), session_lines(italian_path)
        if len(english) != len(italian):
            raise ValueError(f"{english_path.name}: {len(english)} English lines but {len(italian)} Italian lines")
        for tokenised in zip(english, italian):
            pair = detokenised(tokenised[0], "en"), detokenised(tokenised[1], "it")
            failed = next((name for name, drops in FILTERS if drops(tokenised, pair)), None)
            if failed:
                removed[failed] += 1
            else:
                kept.append(pair)
    return kept, removed
