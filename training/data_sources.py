"""Every public source `training.prepare_data` reads, pinned: a URL at a fixed commit (never a branch, which can
move), its licence and credit line, and the sha256 it must have where that is known.

Two kinds of pin:
- `sha256` given here: the file must have it, from the first download on;
- `sha256=None`: the hash is recorded in the download cache's lock file on the first download and checked on every
  later run (trust on first use). The build then checks its *outputs* against the sha256 of the project's own files
  (`PROJECT_OUTPUTS`): a test set built from a source that is not the one the scores were made on is refused.

The test sets come from Helsinki-NLP/OPUS-MT-testsets. Its layout changed over time (`testsets/SRC-TRG/NAME.LANG`,
later `datasets/ORIGIN/...`), so each file is pinned at a commit that holds it, not all at one commit. docs/data.md
says which of these paths and commits were read from a stored copy of the repository and which are inferred.
"""

from dataclasses import dataclass

OPUS_MT_TESTSETS = "Helsinki-NLP/OPUS-MT-testsets"


@dataclass(frozen=True)
class Source:
    """One downloadable file. `name` identifies it in messages, the lock file and the manifest."""
    name: str
    url: str
    licence: str
    credit: str
    sha256: str | None = None


@dataclass(frozen=True)
class Parallel:
    """A line-aligned pair of files: line i of `english` translates to line i of `italian`."""
    name: str
    english: Source
    italian: Source


def github(repo, commit, path):
    """The raw URL of `path` in GitHub repository `repo` at `commit` (40 hex digits: a fixed tree)."""
    assert len(commit) == 40, commit
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def opus_mt(name, commit, english_path, italian_path, licence, credit):
    return Parallel(name, Source(f"{name}.eng", github(OPUS_MT_TESTSETS, commit, english_path), licence, credit),
                    Source(f"{name}.ita", github(OPUS_MT_TESTSETS, commit, italian_path), licence, credit))


TATOEBA_LICENCE = "CC-BY 2.0 FR"
TATOEBA_TEST_CREDIT = "Tatoeba MT Challenge eng-ita test set (Helsinki-NLP); Tatoeba.org contributors (CC-BY 2.0 FR)"
WMT_CREDIT = "WMT 2009 shared task (statmt.org), as collected in Helsinki-NLP's OPUS-MT-testsets"
NOT_REDISTRIBUTED = "evaluation only: not redistributed, only compared against"


def tatoeba_release(version, commit, folder):
    return opus_mt(f"tatoeba-test-{version}", commit, f"{folder}/tatoeba-test-{version}.eng",
                   f"{folder}/tatoeba-test-{version}.ita", TATOEBA_LICENCE, TATOEBA_TEST_CREDIT)


TATOEBA_TEST = "tatoeba-test-v2020-07-28"  # the benchmark: test-tatoeba.tsv
DEV_NEWS = "newssyscomb2009"  # the out-of-domain check: dev-news.tsv
TEST_SETS = (
    tatoeba_release("v2020-07-28", "843d9a3bf560b4d05507f568ec5aa81fab086962", "testsets/eng-ita"),
    tatoeba_release("v2021-03-30", "a35942bf0fbf19e0c185030e358ea5368a5a2d6f", "testsets/eng-ita"),
    tatoeba_release("v2021-08-07", "c04247a761e3814edbe616018f324d02f92ed68c",
                    "datasets/helsinki_nlp/tatoeba/testsets/eng-ita"),
    opus_mt("flores200-devtest", "c04247a761e3814edbe616018f324d02f92ed68c",
            "datasets/facebook/flores/flores200_dataset/devtest/eng_Latn.devtest",
            "datasets/facebook/flores/flores200_dataset/devtest/ita_Latn.devtest", "CC BY-SA 4.0",
            "FLORES-200 devtest (Meta AI), " + NOT_REDISTRIBUTED),
    opus_mt("newstest2009", "afbf85cf9b18c51a0f611896a343f4af63ec9810",
            "datasets/statmt/wmt_newstest/2009/newstest2009.en", "datasets/statmt/wmt_newstest/2009/newstest2009.it",
            "WMT test data (statmt.org)", WMT_CREDIT),
    opus_mt(DEV_NEWS, "afbf85cf9b18c51a0f611896a343f4af63ec9810",
            "datasets/statmt/wmt_newstest/2009/newssyscomb2009.en",
            "datasets/statmt/wmt_newstest/2009/newssyscomb2009.it", "WMT test data (statmt.org)", WMT_CREDIT),
    opus_mt("ntrex128", "bbde96c914be86e77abf38543d0259a406c069c7",
            "datasets/microsoft/ntrex/NTREX/NTREX-128/newstest2019-src.eng.txt",
            "datasets/microsoft/ntrex/NTREX/NTREX-128/newstest2019-ref.ita.txt", "CC BY-SA 4.0",
            "NTREX-128 (Microsoft), " + NOT_REDISTRIBUTED),
)

SEED_CREDIT = "OLDI Seed, Open Language Data Initiative (CC BY-SA 4.0)"
GENEVAL_CREDIT = "MT-GenEval, Amazon Science (CC BY-SA 3.0)"
COCOA_CREDIT = "CoCoA-MT, Amazon Science (CDLA-Sharing 1.0)"
SEED = "openlanguagedata/seed"
GENEVAL = "amazon-science/machine-translation-gender-eval"
GENEVAL_DEV, GENEVAL_TEST = "c421ecff3b244024a8563602eebbf4f52d7740e9", "c542ba406a8f7d3be2a8aa1636690b0bd1714de4"
COCOA = "amazon-science/contrastive-controlled-mt"
COCOA_COMMIT = "937ad6a5444990731ff2ea59553f2c812cbeb9cb"


def geneval(split, gender, commit):
    stem = f"data/sentences/{split}/geneval-sentences-{gender}-{split}.en_it"
    name = f"mt-geneval-{split}-{gender}"
    return Parallel(name, Source(f"{name}.en", github(GENEVAL, commit, f"{stem}.en"), "CC BY-SA 3.0", GENEVAL_CREDIT),
                    Source(f"{name}.it", github(GENEVAL, commit, f"{stem}.it"), "CC BY-SA 3.0", GENEVAL_CREDIT))


def cocoa(split, domain, formality):
    """CoCoA-MT's training files end in .en/.it; its test files have no language suffix on the English side."""
    stem = f"CoCoA-MT/{split}/en-it/formality-control.{split}.{domain}.en-it"
    english, italian = (f"{stem}.en", f"{stem}.{formality}.it") if split == "train" else (stem, f"{stem}.{formality}")
    name = f"cocoa-mt-{split}-{domain}-{formality}"
    return Parallel(name, Source(f"cocoa-mt-{split}-{domain}.en", github(COCOA, COCOA_COMMIT, english),
                                 "CDLA-Sharing 1.0", COCOA_CREDIT),
                    Source(f"{name}.it", github(COCOA, COCOA_COMMIT, italian), "CDLA-Sharing 1.0", COCOA_CREDIT))


# train-extra.tsv, in this order: OLDI Seed (6,193 pairs), MT-GenEval (dev then test, feminine then masculine: 3,000),
# CoCoA-MT (train telephony and topical chat, test call centre, telephony and topical chat; each English sentence
# with its informal then its formal reference: 2,000), as in the project's file.
EXTRA_SETS = (
    Parallel("oldi-seed",
             Source("oldi-seed.eng_Latn", github(SEED, "40dc000c8d68a9bfddf1b1b9d559b14c56bb979d", "seed/eng_Latn"),
                    "CC BY-SA 4.0", SEED_CREDIT),
             Source("oldi-seed.ita_Latn", github(SEED, "b795befcb924a73c9e1ad7284f58496b9765716b", "seed/ita_Latn"),
                    "CC BY-SA 4.0", SEED_CREDIT)),
    geneval("dev", "feminine", GENEVAL_DEV), geneval("dev", "masculine", GENEVAL_DEV),
    geneval("test", "feminine", GENEVAL_TEST), geneval("test", "masculine", GENEVAL_TEST),
    *(cocoa(split, domain, formality)
      for split, domains in (("train", ("telephony", "topical_chat")),
                             ("test", ("call_center", "telephony", "topical_chat")))
      for domain in domains for formality in ("informal", "formal")),
)

# The Tatoeba pairs: manythings.org republishes this zip as Tatoeba grows, at one URL with no versions. It cannot be
# pinned; its hash and pair count are recorded on first download and a change is reported as a warning.
TATOEBA_PAIRS = Source("ita-eng.zip", "https://www.manythings.org/anki/ita-eng.zip", TATOEBA_LICENCE,
                       "Tatoeba.org contributors (CC-BY 2.0 FR)")

# sha256 of the files the shipped model was trained and scored on (/work/shared/data/en-it on the build machines).
# test-tatoeba.tsv and dev-news.tsv are scored on: a rebuild must match them exactly. train-extra.tsv should; train and
# dev depend on the current ita-eng.zip and are recorded only to say whether a rebuild happens to match.
PROJECT_OUTPUTS = {
    "test-tatoeba.tsv": "942b4c0a181214a23da05b319847e5eb06cfff9f0ac420685b3aa44b0220584d",
    "dev-news.tsv": "88bd70db923019ace268bfeeacc3d5af24ea8f2f995940fea311cb01595abaf4",
    "train-extra.tsv": "31596af85fc551cfc415ff797e249cd8291216ecf18e561f2d5ace2e5dfe2035",
    "train.tsv": "c2b207589321f3bd38117def3a676d1ee6591c806d2cc552bf268df58e42421e",
    "dev.tsv": "3c05e483c0c33bd9b7bc1f940e80ba6b2fccb3cb2c9a00531b9674a7e5cd3b11",
    "train-docs.tsv": "4ab6e235bb7ec53d605c09843e6cea3d481b2fbf355b17b0436b758c9f0f75ec",
}
MUST_MATCH = ("test-tatoeba.tsv", "dev-news.tsv")


@dataclass(frozen=True)
class Sources:
    """What one build reads; tests swap in their own."""
    test_sets: tuple
    extra_sets: tuple
    tatoeba_pairs: Source
    project_outputs: dict
    benchmark: str = TATOEBA_TEST
    dev_news: str = DEV_NEWS


PINNED = Sources(TEST_SETS, EXTRA_SETS, TATOEBA_PAIRS, PROJECT_OUTPUTS)
