"""train-docs.tsv: English-Italian pairs from the software manuals Debian 12 ships in both languages (the optional
`--docs` step of `training.prepare_data`), with the standard library only.

Each package is fetched with `apt-get download NAME=VERSION` (Debian verifies it against its signed archive; its
sha256 is also recorded in the lock file on first download) and unpacked with `dpkg-deb -x`. Pages are paired by
path, with the language left out of it (`it/basic-defs.it.html` is `basic-defs.en.html`). Then:

- LibreOffice help: both languages are built from the same sources, so a paragraph or heading keeps its id. Pairs are
  (same page, same id); ids used twice in a page and code paragraphs are skipped; an inline switch ("Ctrl" by
  default, "Command" on a Mac; "Page" by default, "Slide" in Impress) reads as its default variant, or as its first.
- GIMP and the Debian manuals: the Italian pages come from the same source through PO files, with the same block
  structure. Blocks with text (paragraphs, headings, list items, table cells, terms) are paired by position where a
  page's block sequence (tag, class, internal link targets) is the same in both languages, and inside runs of at
  least three matching blocks where it is not. GIMP's index and glossary pages (sorted per language) are left out.

Then section and figure numbers that start both sides are removed, and the filters of `FILTERS` drop what is not a
clean translation pair, in that order, counting what each removed.
"""

import difflib
import html.parser
import json
import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .pinned import sha256
from .sentences import clean, normalise

DEBIAN_SUITE = "Debian 12 (bookworm)"


@dataclass(frozen=True)
class Manual:
    name: str
    english: str  # Debian package names
    italian: str
    version: str
    licence: str
    credit: str
    aligner: str  # "ids" (LibreOffice) or "blocks"
    copyright_package: str | None = None  # where its copyright file is, when not in the English package
    skip_pages: str | None = None  # regex of page paths left out


MANUALS = (
    Manual(
        "LibreOffice 7.4 help",
        "libreoffice-help-en-us",
        "libreoffice-help-it",
        "4:7.4.7-1+deb12u14",
        "MPL-2.0",
        "LibreOffice Help, © LibreOffice contributors and Oracle and/or its affiliates (MPL-2.0)",
        "ids",
    ),
    Manual(
        "GIMP 2.10 user manual",
        "gimp-help-en",
        "gimp-help-it",
        "2.10.34-2",
        "GFDL 1.2 or later, no invariant sections",
        "GNU Image Manipulation Program User Manual, © The GIMP Documentation Team (GFDL 1.2+)",
        "blocks",
        copyright_package="gimp-help-common",
        skip_pages=r"(^|/)(glossary[^/]*|ix\d+|gimp-help-index)\.html$",
    ),
    Manual(
        "Debian Reference",
        "debian-reference-en",
        "debian-reference-it",
        "2.100",
        "GPL-2+",
        "Debian Reference, © Osamu Aoki and translators (GPL-2+)",
        "blocks",
    ),
    Manual(
        "Debian New Maintainers' Guide",
        "maint-guide",
        "maint-guide-it",
        "1.2.53",
        "GPL-2+",
        "Debian New Maintainers' Guide, © Josip Rodin, Osamu Aoki, Craig Small, Raphaël Hertzog (GPL-2+)",
        "blocks",
    ),
    Manual(
        "Debian FAQ",
        "debian-faq",
        "debian-faq-it",
        "11.1",
        "permission notice",
        "The Debian GNU/Linux FAQ, © 1996-2003 Software in the Public Interest",
        "blocks",
    ),
    Manual(
        "Debian Developer's Reference",
        "developers-reference",
        "developers-reference-it",
        "12.18",
        "GPL-2 or later",
        "Debian Developer's Reference, © Christian Schwarz, Adam Di Carlo, Raphaël Hertzog, "
        "Andreas Barth, Lucas Nussbaum, Hideki Yamane, Holger Levsen (GPL-2+)",
        "blocks",
    ),
)

BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "dt", "dd"}  # a <pre> belongs to its block
SKIPPED_TAGS = {"script", "style", "head"}
VOID_TAGS = {"br", "img", "meta", "link", "hr", "input", "col", "area", "base", "wbr"}
LANGUAGE_DIRS = {"en", "it", "en-us", "en_us", "c"}
MIN_RUN = 3  # matching blocks in a row needed to pair blocks of pages whose structures differ
# DocBook numbers the ids it makes up (a footnote's "ftn.idm3699") in each build, so a block and its footnote link to
# different numbers in the two languages: a link's signature leaves the number out.
GENERATED_ID = re.compile(r"(#(?:ftn\.)?idm)\d+$")
MAX_CHARS = 400
SOFT_HYPHEN = "\u00ad"  # "Mon&shy;day": where a browser may break a word, invisible otherwise; read as nothing
LENGTH_RATIO = (0.5, 2.0)
LEADING_NUMBER = re.compile(r"^(?:(\w+)\s+)?((?:\d+|[A-Z])(?:\.\d+)*)\.\s+")
# The labels whose number the project's file dropped with it ("Figure 17.11. ", "Capitolo 3. "). It kept "Appendix A. ",
# "Part I. " and "Equation 8.15. " (65 such lines, against 1 without its number), and so do these pairs.
NUMBER_LABELS = {
    "Figure",
    "Figura",
    "Chapter",
    "Capitolo",
    "Table",
    "Tabella",
    "Example",
    "Esempio",
    "Procedure",
    "Procedura",
}
# A placeholder (%APPDATA%) has three letters or more: "%E8%BB%8A" is a URL-encoded character, not residue.
RESIDUE = re.compile(r"%[A-Z_]{3,}%|&[A-Za-z][A-Za-z0-9]*;|\.xhp(?:#\w+)? not found|%PRODUCTNAME|\$\[officename\]")
NUMBERS = re.compile(r"\d+")
WORDS = re.compile(r"[^\W\d_]+")
ENGLISH_WORDS = {
    "the",
    "and",
    "of",
    "to",
    "is",
    "are",
    "you",
    "with",
    "for",
    "this",
    "that",
    "be",
    "can",
    "on",
    "or",
    "if",
    "which",
    "from",
    "your",
    "will",
    "an",
    "by",
    "not",
    "it",
    "as",
}
ITALIAN_WORDS = {
    "il",
    "lo",
    "la",
    "gli",
    "le",
    "di",
    "che",
    "per",
    "con",
    "non",
    "un",
    "una",
    "sono",
    "è",
    "del",
    "della",
    "si",
    "da",
    "nel",
    "questo",
    "questa",
    "può",
    "essere",
    "dei",
    "delle",
    "al",
    "alla",
}


@dataclass
class Block:
    tag: str
    cls: str
    ident: str | None
    links: tuple
    text: str

    @property
    def signature(self):
        return self.tag, self.cls, self.links

    @property
    def is_code(self):
        return "code" in self.cls.split() or self.cls.endswith("code")


def language_free(path):
    """A page's path with its language left out: folders named after a language dropped, `-en`/`-it` package
    suffixes and `.en`/`.it` before the extension removed, so both languages of a page have the same key."""
    parts = [re.sub(r"-(en|it|en-us)$", "", part) for part in Path(path).parts if part.lower() not in LANGUAGE_DIRS]
    return re.sub(r"\.(en|it)(?=\.x?html?(#|$))", "", "/".join(parts))


class Switch:
    """LibreOffice's inline switch: one text per platform ("Command" on a Mac, "Ctrl" by default) or per application
    ("Slide" in Impress, "Page" by default). It reads as its default variant, or, with none (a sentence only Calc's
    help shows), as its first."""

    def __init__(self):
        self.default, self.variants = None, []

    def variant(self, ident, cls):
        """The list the text of the variant opening here (`ident`, `cls`) goes to."""
        pieces = []
        if str(ident).startswith("default") or "defaultinline" in cls:
            self.default = pieces
        else:
            self.variants.append(pieces)
        return pieces

    def text(self):
        chosen = self.default if self.default is not None else next(iter(self.variants), [])
        return "".join(chosen)


@dataclass
class OpenTag:
    """A tag the parser is inside: whether its content is skipped, the block it opens, the switch it opens, and the
    text of the switch variant it is (None where it opens none of these)."""

    tag: str
    skipped: bool
    block: int | None
    switch: Switch | None
    variant_text: list | None


class BlockParser(html.parser.HTMLParser):
    """The blocks of one HTML page in reading order, each with its own text (a nested block's text is its own)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open_tags = []  # OpenTag, outermost first
        self.blocks, self.texts = [], []

    def skipping(self):
        return any(entry.skipped for entry in self.open_tags)

    def current_block(self):
        return next((entry.block for entry in reversed(self.open_tags) if entry.block is not None), None)

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            self.handle_startendtag(tag, attrs)
            return
        attrs = dict(attrs)
        cls, ident = attrs.get("class") or "", attrs.get("id")
        classes = cls.split()
        switch = self.open_tags[-1].switch if self.open_tags else None
        skipped = (
            tag in SKIPPED_TAGS
            or "caseinline" in classes
            or attrs.get("role") == "navigation"
            or "headerlink" in classes
        )  # Sphinx's navigation bars and a heading's "¶" permalink
        block = None
        if tag in BLOCK_TAGS and not self.skipping():
            block = len(self.blocks)
            self.blocks.append(Block(tag, cls, ident, (), ""))
            self.texts.append([])
        href = attrs.get("href")
        if tag == "a" and href and not re.match(r"^[a-z]+:", href) and self.current_block() is not None:
            index = self.current_block()
            self.blocks[index].links += (GENERATED_ID.sub(r"\1", language_free(href.split("?")[0])),)
        self.open_tags.append(
            OpenTag(
                tag,
                skipped,
                block,
                Switch() if "switchinline" in classes else None,
                switch.variant(ident, cls) if switch else None,
            )
        )

    def handle_startendtag(self, tag, attrs):
        """`<br/>`, `<a name="x"/>`: nothing to read inside; a line break parts two words ("Ctrl+V.<br>The
        selected..."), as a space does."""
        if tag == "br":
            self.handle_data(" ")

    def handle_endtag(self, tag):
        """Closes `tag` and any left open inside it; a closed switch's chosen text goes where its own text would."""
        if any(entry.tag == tag for entry in self.open_tags):
            while True:
                entry = self.open_tags.pop()
                if entry.switch is not None:
                    self.handle_data(entry.switch.text())
                if entry.tag == tag:
                    break

    def handle_data(self, data):
        """Text goes to the innermost open switch variant, else to the innermost block."""
        if self.skipping():
            return
        for entry in reversed(self.open_tags):
            if entry.variant_text is not None or entry.block is not None:
                (entry.variant_text if entry.variant_text is not None else self.texts[entry.block]).append(data)
                return

    def page(self, text):
        self.feed(text)
        self.close()
        for block, pieces in zip(self.blocks, self.texts):
            block.text = " ".join("".join(pieces).replace(SOFT_HYPHEN, "").split())
        return self.blocks


def blocks_of(path):
    return BlockParser().page(path.read_text(encoding="utf-8", errors="replace"))


def id_pairs(english, italian):
    """LibreOffice: (same id) pairs, skipping ids used twice in a page and code paragraphs."""

    def by_id(blocks):
        counts = {}
        for block in blocks:
            counts[block.ident] = counts.get(block.ident, 0) + 1
        return {b.ident: b for b in blocks if b.ident and counts[b.ident] == 1 and not b.is_code}

    italian_by_id = by_id(italian)
    return [
        (block.text, italian_by_id[ident].text) for ident, block in by_id(english).items() if ident in italian_by_id
    ]


def sequence_pairs(english, italian):
    """GIMP and Debian manuals: blocks with text paired by position where their sequences match, else inside runs of
    at least MIN_RUN matching blocks. A block with no text (an image's empty caption, which one language may lack)
    is left out first, so it cannot shift a run."""
    english, italian = ([block for block in blocks if block.text] for blocks in (english, italian))
    english_signatures = [block.signature for block in english]
    italian_signatures = [block.signature for block in italian]
    if english_signatures == italian_signatures:
        runs = [(0, 0, len(english))]
    else:
        matcher = difflib.SequenceMatcher(None, english_signatures, italian_signatures, autojunk=False)
        runs = [run for run in matcher.get_matching_blocks() if run.size >= MIN_RUN]
    return [(english[i + k].text, italian[j + k].text) for i, j, size in runs for k in range(size)]


def strip_leading_numbers(en, it):
    """ "2.1.3. Title" / "2.1.3. Titolo", "Figure 17.11. X" / "Figura 17.11. X": the same number starting both
    sides, bare or after one of NUMBER_LABELS, is removed from both."""
    en_match, it_match = LEADING_NUMBER.match(en), LEADING_NUMBER.match(it)
    if (
        en_match
        and it_match
        and en_match.group(2) == it_match.group(2)
        and all(label is None or label in NUMBER_LABELS for label in (en_match.group(1), it_match.group(1)))
    ):
        return en[en_match.end() :], it[it_match.end() :]
    return en, it


def numbers(text):
    """The numbers in `text`, as values: "2001-03-31" and "31/3/2001" hold the same ones."""
    return sorted(int(number) for number in NUMBERS.findall(text))


def without_punctuation(text):
    return " ".join(re.sub(r"[^\w\s]", " ", normalise(text)).split())


def function_words(text, words):
    return sum(word in words for word in WORDS.findall(text.lower()))


def italian_is_english(it):
    """An untranslated paragraph the Italian build fell back to: more English than Italian function words."""
    english = function_words(it, ENGLISH_WORDS)
    return english >= 2 and english > function_words(it, ITALIAN_WORDS)


def mostly_letters(text):
    letters = sum(c.isalpha() for c in text)
    return letters > 0 and letters * 2 >= len(text.replace(" ", ""))


FILTERS = (  # (name, a pair is dropped when this is true)
    ("empty", lambda en, it: not en or not it),
    ("markup_residue", lambda en, it: bool(RESIDUE.search(en) or RESIDUE.search(it))),
    ("too_long", lambda en, it: max(len(en), len(it)) > MAX_CHARS),
    ("untranslated", lambda en, it: without_punctuation(en) == without_punctuation(it)),
    ("italian_is_english", lambda en, it: italian_is_english(it)),
    ("not_text", lambda en, it: not (mostly_letters(en) and mostly_letters(it))),
    ("numbers_differ", lambda en, it: numbers(en) != numbers(it)),
    ("length_ratio", lambda en, it: not LENGTH_RATIO[0] <= len(it) / len(en) <= LENGTH_RATIO[1]),
)


def filter_doc_pairs(pairs, sides_to_avoid):
    """-> (kept pairs in order, {filter: pairs it removed}). `sides_to_avoid` holds normalised test sentences; a side
    matches one ignoring case and spacing, or ignoring punctuation too."""
    avoid_loose = {without_punctuation(side) for side in sides_to_avoid}
    removed = {name: 0 for name, _ in FILTERS} | {"test_overlap": 0, "duplicates": 0}
    kept, seen = [], set()
    for en, it in pairs:
        en, it = strip_leading_numbers(clean(en), clean(it))
        failed = next((name for name, drops in FILTERS if drops(en, it)), None)
        if failed is None and any(
            normalise(s) in sides_to_avoid or without_punctuation(s) in avoid_loose for s in (en, it)
        ):
            failed = "test_overlap"
        if failed is None and (en, it) in seen:
            failed = "duplicates"
        if failed:
            removed[failed] += 1
        else:
            seen.add((en, it))
            kept.append((en, it))
    return kept, removed


def html_pages(root):
    """{language-free key: page} of the HTML files a package installs (links to other pages are left out)."""
    pages = {}
    for path in sorted(root.rglob("*.htm*")):
        if path.is_file() and not path.is_symlink():
            pages.setdefault(language_free(path.relative_to(root)), path)
    return pages


def manual_pairs(manual, english_root, italian_root):
    """All aligned pairs of one manual, pages in path order."""
    english_pages, italian_pages = html_pages(english_root), html_pages(italian_root)
    align = id_pairs if manual.aligner == "ids" else sequence_pairs
    pairs = []
    for key in sorted(english_pages.keys() & italian_pages.keys()):
        if manual.skip_pages and re.search(manual.skip_pages, key):
            continue
        pairs += align(blocks_of(english_pages[key]), blocks_of(italian_pages[key]))
    return pairs


def licences_in(copyright_file):
    """The `License:` names of a Debian copyright file (machine-readable format), in order, once each."""
    names = re.findall(r"^License:\s*(.+)$", copyright_file.read_text(encoding="utf-8", errors="replace"), re.M)
    return list(dict.fromkeys(name.strip() for name in names))


def unpacked(package, version, cache_dir, lock):
    """-> (folder the package is unpacked in, manifest entry). `apt-get download` into CACHE/debian once; its .deb is
    checked against the sha256 recorded on first download."""
    folder = Path(cache_dir, "debian")
    folder.mkdir(parents=True, exist_ok=True)
    debs = sorted(folder.glob(f"{package}_*.deb"))
    if not debs:
        try:
            subprocess.run(
                ["apt-get", "download", f"{package}={version}"], cwd=folder, check=True, capture_output=True, text=True
            )
        except (OSError, subprocess.CalledProcessError) as e:
            reason = (getattr(e, "stderr", None) or str(e)).strip().splitlines()[-1:] or ["failed"]
            raise FileNotFoundError(
                f"could not apt-get download {package}={version} ({reason[0]}); it needs a "
                f"{DEBIAN_SUITE} apt source, or put its .deb in {folder}"
            ) from e
        debs = sorted(folder.glob(f"{package}_*.deb"))
    deb = debs[-1]
    digest = sha256(deb.read_bytes())
    lock.check(deb.name, digest, deb, f"{package}={version}")
    root = folder / package
    if not root.is_dir():
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root, {
        "name": deb.name,
        "package": f"{package}={version}",
        "sha256": digest,
        "pinned": "by Debian's signed archive; on first download",
    }


def aligned_manual(manual, cache_dir, lock):
    """-> (the pairs of `manual`'s two packages, aligned and not yet filtered, the packages' manifest entries, the
    folder the English package is unpacked in)."""
    (english_root, english_entry), (italian_root, italian_entry) = (
        unpacked(package, manual.version, cache_dir, lock) for package in (manual.english, manual.italian)
    )
    return manual_pairs(manual, english_root, italian_root), [english_entry, italian_entry], english_root


def build_docs(cache_dir, lock, sides_to_avoid, seed):
    """-> (train-docs pairs shuffled with `seed`, manifest entries with each manual's licences, what was removed)."""
    pairs, entries, removed = [], [], {}
    for manual in MANUALS:
        aligned, packages, english_root = aligned_manual(manual, cache_dir, lock)
        copyright_root = (
            unpacked(manual.copyright_package, manual.version, cache_dir, lock)[0]
            if manual.copyright_package
            else english_root
        )
        copyright_package = manual.copyright_package or manual.english
        copyright_file = copyright_root / "usr/share/doc" / copyright_package / "copyright"
        kept, removed[manual.name] = filter_doc_pairs(aligned, sides_to_avoid)
        print(f"{manual.name}: {len(kept)} pairs; removed {json.dumps(removed[manual.name])}")
        pairs += kept
        entries.append(
            {
                "name": manual.name,
                "packages": packages,
                "licence": manual.licence,
                "credit": manual.credit,
                "pairs": len(kept),
                "copyright_file_licences": licences_in(copyright_file) if copyright_file.is_file() else [],
            }
        )
    pairs = list(dict.fromkeys(pairs))  # a pair two manuals share once
    random.Random(seed).shuffle(pairs)
    return pairs, entries, removed
