"""Every public source `training.prepare_data` reads, pinned: a URL at a fixed commit (never a branch, which can
move), its licence and credit line, and the sha256 it must have (`SHA256`; Europarl's 774 files in
`europarl_sha256.json`), from the first download on. A source without one (a fixture of the tests, a source being
added) is checked by trust on first use: its hash is recorded in the download cache's lock file on its first download
and checked on every later run. The build also checks its *outputs* against the sha256 of the project's own files
(`PROJECT_OUTPUTS`): a test set that is not the one the scores were made on is refused.

The test sets come from Helsinki-NLP/OPUS-MT-testsets. Its layout changed over time (`testsets/SRC-TRG/NAME.LANG`,
later `datasets/ORIGIN/...`), so each file is pinned at a commit that holds it, not all at one commit."""

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


# The sha256 of every source file, read from each repository at its pinned commit (a stored copy of it: GitHub
# itself cannot be reached from the build machines). A file with another sha256 is refused from its first download on.
SHA256 = {
    "tatoeba-test-v2020-07-28.eng": "bca1c6ae7fd5a20072fb2bc915a173a84b10eaccf0794b6f1addb9eb7abb84f9",
    "tatoeba-test-v2020-07-28.ita": "bf975736ba74af76b1be3dedb5b1fc6f8d7f874e9fc72c4ca37603500f99be39",
    "tatoeba-test-v2021-03-30.eng": "103aaaf7d2c221a553493d684e30a9e26963846c04bd3421764b8617bb60997e",
    "tatoeba-test-v2021-03-30.ita": "54db454e0d713c4c7aeacc40331aba471eb3f63af4d3444ccccda61ab2efdfe5",
    "tatoeba-test-v2021-08-07.eng": "ef0c6a6d746c0d53e6496ac1073db91d4efe51d21c7a586bbbaa0f3660e938e4",
    "tatoeba-test-v2021-08-07.ita": "3735d63c036d6e7359c708c14c793f282ff84dd6f3c83353edb50085d0a958e1",
    "flores200-devtest.eng": "612e9fbe87997617c0fa8fa8929654a4f49b728d96738112c2b86ef6a1d78d88",
    "flores200-devtest.ita": "4166da51aba285736535916870142d7e9491494cee52b1db0808533399796a94",
    "newstest2009.eng": "c74a4862decfe87f88fb10eacdcb6ac972a648f0dd6deeb25ac2dbc6128dc0b6",
    "newstest2009.ita": "363ada491ad342afa56aedf1d144de5ed9b1fa67f0777c353ae34bf5b31562a7",
    "newssyscomb2009.eng": "b734a44294fa3b23a2491cd9a2c59fb5eb71332ace70b2c9039978863dd0e43d",
    "newssyscomb2009.ita": "f3b5bc7aec6901cbbb73aff50bfc741fedfea69e7b540655f0b8ef53b1f82393",
    "ntrex128.eng": "3a62f94f5c42a395d4452ec890ca45afc75866b5b4b1d493429433cfe8469fe9",
    "ntrex128.ita": "682d667d41c84c93e02d5290ae7ba2ec7bb346bb23522692cb45bf6b28ee62a7",
    "ud-pud-en.conllu": "9740cff4792d36310201f0037f2856ff6a92736cb341f92e9a6a5193edaf5aaf",
    "ud-pud-it.conllu": "8612f1c216eda8ede799770b65b33e9c13cfcf774275172f03fcd26204b0e170",
    "oldi-seed.eng_Latn": "55d30a333f99dbb44a9f5c3c3828d6e33ddf9d15040d5d8c985526c8be4577b1",
    "oldi-seed.ita_Latn": "78a615d57e30b55e02eb6f5f6974937047b6ff047ada48a5aa7db7662701c4a9",
    "mt-geneval-dev-feminine.en": "dc765706f68a17654f8a592d64532765a39d3e3f7d474cca3f55e21faa8e69e7",
    "mt-geneval-dev-feminine.it": "f2165981ef84ef6260f08b0f8d44a4789e575da194ff24babf2f797aade53dc1",
    "mt-geneval-dev-masculine.en": "b68f65b331e3a5858a9c2517f5e3450a370cba790ac1e63a587f5fd4d46a1bc5",
    "mt-geneval-dev-masculine.it": "92f8d2f9fa5cee376705cf6ca1f7705d60371d78f5146a5df7f56d04a6d4a31d",
    "mt-geneval-test-feminine.en": "7567845af8fe1ff8a6dc243f7e5405eba6c7ce0a545e90ad709f524f929df26a",
    "mt-geneval-test-feminine.it": "06547a93c10b0b7bdcbe49f552b021a0a338be1a79dd31110e5f343c7b5fabb3",
    "mt-geneval-test-masculine.en": "5852b67d221eeb4b71117d1b6c825329cda303bb1cb86a6cb1743980d6b4a846",
    "mt-geneval-test-masculine.it": "5e8e7df1b2650e6b598f2b0006b57016114bebe8004152bc2acf4091826191c2",
    "cocoa-mt-train-telephony.en": "d0742ecfb5b33967c73ecfe977f1ea4323fc7cbfa47140b2c55fac6399a0b740",
    "cocoa-mt-train-telephony-informal.it": "00cd1da1f35972b75c099b4295edc25ae08da1590a7ab360b18101c0923b1657",
    "cocoa-mt-train-telephony-formal.it": "5a07de37630be9b4acb098deeeb03f8331be9b7f3c16b124436e2cce42e583d7",
    "cocoa-mt-train-topical_chat.en": "3557e5bef3e257affa899b14b126e92d041afd7c619e2ffea7d58edbc06f10ba",
    "cocoa-mt-train-topical_chat-informal.it": "7f7bceedcd4b7175e7ece63d5f6b5aa83a57f0b6f9a1db65bc524f4bfd5b8b6e",
    "cocoa-mt-train-topical_chat-formal.it": "186307e20142a70c9b7705dd704da9a05afafbb3c148f6c7dfc17711c3d8d887",
    "cocoa-mt-test-call_center.en": "4ec0f123ac7c9ce14748566fef2e6c0576513a2435ee1806c3994a32f67e9f06",
    "cocoa-mt-test-call_center-informal.it": "73e32aa116983aebc382091fcdd1d75d57d84c1ba137f3b37202a0a546f3b875",
    "cocoa-mt-test-call_center-formal.it": "a6ebb915fac88ed6e6d55e50efd0726664e2c9d7c3facfd6d3c6029e7d402bfd",
    "cocoa-mt-test-telephony.en": "3afdcff68de698e306b7aa958e70e152af21a6c62e2722cc84b62f292cfb2c58",
    "cocoa-mt-test-telephony-informal.it": "0838970c3363145c16f31efbb8abc8b03cc03eb3f2e64a8a319bf5a572d8f1f6",
    "cocoa-mt-test-telephony-formal.it": "7671115511ae9c5f5657bac484042c160c1ebfab834f9d3509cbb5bd616df311",
    "cocoa-mt-test-topical_chat.en": "7e8b87f14c5c61b7845abb97093e0654d504588f3e28a7fa7f2ef3dfd32daac4",
    "cocoa-mt-test-topical_chat-informal.it": "d6b1beffedef0eb9384a678e53ee084740e9ee1763e80ed3a427893ae71d53d8",
    "cocoa-mt-test-topical_chat-formal.it": "43b9b51ff513fd7a0d54b11bef03b4775e5fda8467fc38f38fa2c76a27359d41",
}


def source(name, url, licence, credit):
    """A Source with its sha256 from `SHA256`, where there is one."""
    return Source(name, url, licence, credit, SHA256.get(name))


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
    return Parallel(
        name,
        source(f"{name}.eng", github(OPUS_MT_TESTSETS, commit, english_path), licence, credit),
        source(f"{name}.ita", github(OPUS_MT_TESTSETS, commit, italian_path), licence, credit),
    )


TATOEBA_LICENCE = "CC-BY 2.0 FR"
TATOEBA_TEST_CREDIT = "Tatoeba MT Challenge eng-ita test set (Helsinki-NLP); Tatoeba.org contributors (CC-BY 2.0 FR)"
WMT_CREDIT = "WMT 2009 shared task (statmt.org), as collected in Helsinki-NLP's OPUS-MT-testsets"
NOT_REDISTRIBUTED = "evaluation only: not redistributed, only compared against"


def tatoeba_release(version, commit, folder):
    return opus_mt(
        f"tatoeba-test-{version}",
        commit,
        f"{folder}/tatoeba-test-{version}.eng",
        f"{folder}/tatoeba-test-{version}.ita",
        TATOEBA_LICENCE,
        TATOEBA_TEST_CREDIT,
    )


TATOEBA_TEST = "tatoeba-test-v2020-07-28"  # the benchmark: test-tatoeba.tsv
DEV_NEWS = "newssyscomb2009"  # the out-of-domain check: dev-news.tsv
TEST_SETS = (
    tatoeba_release("v2020-07-28", "843d9a3bf560b4d05507f568ec5aa81fab086962", "testsets/eng-ita"),
    tatoeba_release("v2021-03-30", "a35942bf0fbf19e0c185030e358ea5368a5a2d6f", "testsets/eng-ita"),
    tatoeba_release(
        "v2021-08-07", "c04247a761e3814edbe616018f324d02f92ed68c", "datasets/helsinki_nlp/tatoeba/testsets/eng-ita"
    ),
    opus_mt(
        "flores200-devtest",
        "c04247a761e3814edbe616018f324d02f92ed68c",
        "datasets/facebook/flores/flores200_dataset/devtest/eng_Latn.devtest",
        "datasets/facebook/flores/flores200_dataset/devtest/ita_Latn.devtest",
        "CC BY-SA 4.0",
        "FLORES-200 devtest (Meta AI), " + NOT_REDISTRIBUTED,
    ),
    opus_mt(
        "newstest2009",
        "afbf85cf9b18c51a0f611896a343f4af63ec9810",
        "datasets/statmt/wmt_newstest/2009/newstest2009.en",
        "datasets/statmt/wmt_newstest/2009/newstest2009.it",
        "WMT test data (statmt.org)",
        WMT_CREDIT,
    ),
    opus_mt(
        DEV_NEWS,
        "afbf85cf9b18c51a0f611896a343f4af63ec9810",
        "datasets/statmt/wmt_newstest/2009/newssyscomb2009.en",
        "datasets/statmt/wmt_newstest/2009/newssyscomb2009.it",
        "WMT test data (statmt.org)",
        WMT_CREDIT,
    ),
    opus_mt(
        "ntrex128",
        "bbde96c914be86e77abf38543d0259a406c069c7",
        "datasets/microsoft/ntrex/NTREX/NTREX-128/newstest2019-src.eng.txt",
        "datasets/microsoft/ntrex/NTREX/NTREX-128/newstest2019-ref.ita.txt",
        "CC BY-SA 4.0",
        "NTREX-128 (Microsoft), " + NOT_REDISTRIBUTED,
    ),
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
    return Parallel(
        name,
        source(f"{name}.en", github(GENEVAL, commit, f"{stem}.en"), "CC BY-SA 3.0", GENEVAL_CREDIT),
        source(f"{name}.it", github(GENEVAL, commit, f"{stem}.it"), "CC BY-SA 3.0", GENEVAL_CREDIT),
    )


def cocoa(split, domain, formality):
    """CoCoA-MT's training files end in .en/.it; its test files have no language suffix on the English side."""
    stem = f"CoCoA-MT/{split}/en-it/formality-control.{split}.{domain}.en-it"
    english, italian = (f"{stem}.en", f"{stem}.{formality}.it") if split == "train" else (stem, f"{stem}.{formality}")
    name = f"cocoa-mt-{split}-{domain}-{formality}"
    return Parallel(
        name,
        source(f"cocoa-mt-{split}-{domain}.en", github(COCOA, COCOA_COMMIT, english), "CDLA-Sharing 1.0", COCOA_CREDIT),
        source(f"{name}.it", github(COCOA, COCOA_COMMIT, italian), "CDLA-Sharing 1.0", COCOA_CREDIT),
    )


# train-extra.tsv, in this order: OLDI Seed (6,193 pairs), MT-GenEval (dev then test, feminine then masculine: 3,000),
# CoCoA-MT (train telephony and topical chat, test call centre, telephony and topical chat; each English sentence
# with its informal then its formal reference: 2,000), as in the project's file.
EXTRA_SETS = (
    Parallel(
        "oldi-seed",
        source(
            "oldi-seed.eng_Latn",
            github(SEED, "40dc000c8d68a9bfddf1b1b9d559b14c56bb979d", "seed/eng_Latn"),
            "CC BY-SA 4.0",
            SEED_CREDIT,
        ),
        source(
            "oldi-seed.ita_Latn",
            github(SEED, "b795befcb924a73c9e1ad7284f58496b9765716b", "seed/ita_Latn"),
            "CC BY-SA 4.0",
            SEED_CREDIT,
        ),
    ),
    geneval("dev", "feminine", GENEVAL_DEV),
    geneval("dev", "masculine", GENEVAL_DEV),
    geneval("test", "feminine", GENEVAL_TEST),
    geneval("test", "masculine", GENEVAL_TEST),
    *(
        cocoa(split, domain, formality)
        for split, domains in (
            ("train", ("telephony", "topical_chat")),
            ("test", ("call_center", "telephony", "topical_chat")),
        )
        for domain in domains
        for formality in ("informal", "formal")
    ),
)

# UD PUD, the Parallel Universal Dependencies treebanks (the CoNLL 2017 shared task's test sets): the same 1,000 news
# and Wikipedia sentences in each language, as CoNLL-U files whose `# text = ` lines are the sentences. Only
# train-docs.tsv is kept clear of them, as the project's file is; its other files were not (docs/data.md).
PUD_CREDIT = "UD PUD treebanks (Universal Dependencies; CoNLL 2017 shared task), " + NOT_REDISTRIBUTED
UD = "UniversalDependencies"
UD_PUD = (
    source(
        "ud-pud-en.conllu",
        github(f"{UD}/UD_English-PUD", "b3e4e5ec6aee90b8605190ef3e13d68ebce8b11f", "en_pud-ud-test.conllu"),
        "CC BY-SA 4.0",
        PUD_CREDIT,
    ),
    source(
        "ud-pud-it.conllu",
        github(f"{UD}/UD_Italian-PUD", "c6ecacca17795dc6c9072f3a6e7021a1f90ee0dc", "it_pud-ud-test.conllu"),
        "CC BY-SA 4.0",
        PUD_CREDIT,
    ),
)

# The Tatoeba pairs: manythings.org republishes this zip as Tatoeba grows, at one URL with no versions. It cannot be
# pinned; its hash and pair count are recorded on first download and a change is reported as a warning.
TATOEBA_PAIRS = Source(
    "ita-eng.zip",
    "https://www.manythings.org/anki/ita-eng.zip",
    TATOEBA_LICENCE,
    "Tatoeba.org contributors (CC-BY 2.0 FR)",
)

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
    "train-europarl.tsv.gz": "97e145362d12f9f0c89e98c81730faf2d089cea1ba1b5c6470541940983503f2",  # uncompressed
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
    docs_also_avoid: tuple = UD_PUD


PINNED = Sources(TEST_SETS, EXTRA_SETS, TATOEBA_PAIRS, PROJECT_OUTPUTS)
