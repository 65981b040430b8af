"""`python -m training.prepare_data`: the files it rebuilds from tiny sources written here and served for the real
pinned URLs by a stand-in for urllib (no test touches the network): the test sets as published, every pair of a
public test set kept out of training data, pinned and first-download hashes enforced, reproducible output, errors."""

import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
import unicodedata
import urllib.error
import zipfile
from pathlib import Path

import pytest

from bench import docs_rebuild
from helpers import run_command, run_module, toy_pairs, write_tsv
from training import cldr_names, data_sources, doc_pairs, europarl, pinned, prepare_data
from training.pinned import DownloadError, SourceChanged
from training.prepare_data import main
from training.sentences import normalise

ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #1 (someone) & #2 (someone else)"
CLEAN = toy_pairs()[:40]
BENCHMARK = [
    ("I don't drink alcohol.", "Non bevo alcool."),
    ("We fell asleep.", "Ci siamo addormentati."),
    ("It is late.", "E\u0300 tardi."),  # "È" decomposed: equal to the composed "È" once NFC-normalised
    ("We fell asleep.", "Ci siamo addormentati."),
]  # a repeated pair: the benchmark keeps it, as published
NEWS = [
    ("Right-wing populists triumph in Austria.", "Il trionfo dei populisti di destra in Austria."),
    ("The coalition is weaker.", "La coalizione è più debole."),
]
# Each other public test set holds one sentence of the Tatoeba pairs (its English or its Italian side): all must go.
OTHER_TESTS = {
    "tatoeba-test-v2021-03-30": [(CLEAN[3][0].upper(), "Qualcos'altro.")],
    "tatoeba-test-v2021-08-07": [("Something else.", CLEAN[4][1])],
    "flores200-devtest": [(f"  {CLEAN[5][0]}", "Una frase di FLORES.")],
    "newstest2009": [("A news sentence.", CLEAN[6][1].upper())],
    "ntrex128": [(CLEAN[7][0], "Una frase di NTREX.")],
}
TEST_SETS = {data_sources.TATOEBA_TEST: BENCHMARK, data_sources.DEV_NEWS: NEWS, **OTHER_TESTS}
EXCLUDED = [(CLEAN[2][0], "Qualcos'altro ancora.")]  # an --exclude file: shares its English with a Tatoeba pair
SECOND_TRANSLATION = (CLEAN[0][0], "Un'altra traduzione.")
TATOEBA_LINES = [
    *(f"{en}\t{it}\t{ATTRIBUTION}" for en, it in CLEAN),
    f"{SECOND_TRANSLATION[0]}\t{SECOND_TRANSLATION[1]}\t{ATTRIBUTION}",
    f"{CLEAN[1][0]}\t{CLEAN[1][1]}\t{ATTRIBUTION}",  # a duplicate
    f"Run!\t \t{ATTRIBUTION}",  # an empty side
    f"i  DON'T drink\u00a0alcohol. \tIo non bevo alcolici.\t{ATTRIBUTION}",  # English in the benchmark
    f"We dozed off.\tci siamo  addormentati.\t{ATTRIBUTION}",  # Italian in the benchmark
    f"It's late.\t\u00c8 tardi.\t{ATTRIBUTION}",  # Italian in the benchmark, composed differently
    f"The coalition is WEAKER.\tLa coalizione si indebolisce.\t{ATTRIBUTION}",  # English in dev-news
    f"Hi.\u2028There.\tCiao a tutti.\t{ATTRIBUTION}",  # a line break inside a sentence
    "a line that is not a pair",
]
EXPECTED_TATOEBA = [p for p in CLEAN if p not in (CLEAN[2], *CLEAN[3:8])] + [
    SECOND_TRANSLATION,
    ("Hi. There.", "Ciao a tutti."),
]
OUTPUTS = ("train.tsv", "dev.tsv", "test-tatoeba.tsv", "dev-news.tsv", "train-extra.tsv", "manifest.json")


def extra_pairs(parallel):
    """Two pairs per extra set; CoCoA-MT's informal and formal references differ only in the Italian."""
    return [
        (f"{parallel.english.name} says hello.", f"{parallel.name} saluta."),
        (f"{parallel.english.name} asks a question.", f"{parallel.name} chiede."),
    ]


EXTRA_CONTAMINATED = ("Gish was an actress.", NEWS[1][1])  # its Italian is a dev-news sentence
PUD_SENTENCES = ("A treebank sentence.", "Riavviate la macchina!")  # the Italian one is a manual's block, but for "!"
TREEBANK_URLS = {source.url for source in data_sources.UD_PUD}  # read only with --docs


def served_files():
    """{URL of every pinned source: the bytes the stand-in serves}: the test sets, the extras, ita-eng.zip."""
    files = {}
    for parallel in data_sources.TEST_SETS:
        pairs = TEST_SETS[parallel.name]
        files[parallel.english.url] = "".join(f"{en}\n" for en, _ in pairs).encode()
        files[parallel.italian.url] = "".join(f"{it}\n" for _, it in pairs).encode()
    for parallel in data_sources.EXTRA_SETS:
        pairs = extra_pairs(parallel) + ([EXTRA_CONTAMINATED] if parallel is data_sources.EXTRA_SETS[0] else [])
        files[parallel.english.url] = "".join(f"{en}\n" for en, _ in pairs).encode()
        files[parallel.italian.url] = "".join(f"{it}\n" for _, it in pairs).encode()
    for source, sentence in zip(data_sources.UD_PUD, PUD_SENTENCES):
        files[source.url] = f"# sent_id = n01001011\n# text = {sentence}\n1\t{sentence}\t_\n\n".encode()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:  # ita-eng.zip as manythings.org makes it: ita.txt beside _about.txt
        z.writestr("_about.txt", "About these sentence pairs.\n")
        z.writestr("ita.txt", "\n".join(TATOEBA_LINES) + "\n")
    files[data_sources.TATOEBA_PAIRS.url] = archive.getvalue()
    return files


def tsv_sha256(pairs):
    return hashlib.sha256("".join(f"{en}\t{it}\n" for en, it in pairs).encode()).hexdigest()


def unpinned(source):
    """`source` with no sha256 in the code: the stand-in serves tiny files at the real URLs, not the real bytes."""
    return dataclasses.replace(source, sha256=None)


def unpinned_sets(sets):
    return tuple(dataclasses.replace(p, english=unpinned(p.english), italian=unpinned(p.italian)) for p in sets)


# The project's files, for these sources: the benchmark and dev-news as published (their one pair with a composed
# "È" written as published, the repeated pair kept).
FIXTURE_SOURCES = dataclasses.replace(
    data_sources.PINNED,
    test_sets=unpinned_sets(data_sources.TEST_SETS),
    extra_sets=unpinned_sets(data_sources.EXTRA_SETS),
    docs_also_avoid=tuple(map(unpinned, data_sources.UD_PUD)),
    project_outputs={"test-tatoeba.tsv": tsv_sha256(BENCHMARK), "dev-news.tsv": tsv_sha256(NEWS)},
)


class StandIn:
    """urllib.request.urlopen serving `files` by URL, counting requests; an unknown URL is a 404."""

    def __init__(self, files):
        self.files, self.requested = files, []

    def __call__(self, request, timeout):
        self.requested.append(request.full_url)
        if request.full_url not in self.files:
            raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)
        response = io.BytesIO(self.files[request.full_url])
        response.headers = {"Content-Length": str(len(self.files[request.full_url]))}
        return response


@pytest.fixture
def network(monkeypatch):
    stand_in = StandIn(served_files())
    monkeypatch.setattr(pinned.urllib.request, "urlopen", stand_in)
    return stand_in


def prepare(tmp_path, out_name="out", *more, sources=FIXTURE_SOURCES):
    """Run the command (dev: 5 pairs), cache in tmp_path/cache -> the output folder."""
    out = tmp_path / out_name
    main(["--out", str(out), "--cache", str(tmp_path / "cache"), "--dev-size", "5", *map(str, more)], sources)
    return out


def read_pairs(path):
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


def normalised(text):
    return " ".join(unicodedata.normalize("NFC", text).lower().split())


def test_pinned_sources_name_every_public_test_set_at_a_fixed_commit():
    names = {parallel.name for parallel in data_sources.TEST_SETS}
    assert names == {
        "tatoeba-test-v2020-07-28",
        "tatoeba-test-v2021-03-30",
        "tatoeba-test-v2021-08-07",
        "flores200-devtest",
        "newstest2009",
        "newssyscomb2009",
        "ntrex128",
    }
    github = [s for p in data_sources.TEST_SETS + data_sources.EXTRA_SETS for s in (p.english, p.italian)]
    for source in github:
        repo_and_commit = source.url.removeprefix("https://raw.githubusercontent.com/").split("/")
        assert len(repo_and_commit[2]) == 40 and int(repo_and_commit[2], 16) >= 0, source.url
        assert "master" not in source.url and "main" not in repo_and_commit[:3]
    assert data_sources.PROJECT_OUTPUTS["test-tatoeba.tsv"].startswith("942b4c0a")
    assert set(data_sources.MUST_MATCH) == {"test-tatoeba.tsv", "dev-news.tsv"}


def test_outputs_hold_each_clean_pair_once_and_nothing_of_any_public_test_set(network, tmp_path):
    out = prepare(tmp_path, "out", "--exclude", write_tsv(tmp_path / "more-tests.tsv", EXCLUDED))
    train, dev, extra = (read_pairs(out / name) for name in ("train.tsv", "dev.tsv", "train-extra.tsv"))
    assert sorted(train + dev) == sorted(EXPECTED_TATOEBA)
    assert extra == [pair for parallel in data_sources.EXTRA_SETS for pair in extra_pairs(parallel)]
    assert read_pairs(out / "test-tatoeba.tsv") == BENCHMARK
    assert read_pairs(out / "dev-news.tsv") == NEWS
    test_sides = {normalised(side) for pairs in [*TEST_SETS.values(), EXCLUDED] for pair in pairs for side in pair}
    assert not any(normalised(side) in test_sides for pair in train + dev + extra for side in pair)
    for name in OUTPUTS[:5]:
        data = (out / name).read_bytes()
        assert data.endswith(b"\n") and b"\r" not in data
        assert all(line.count(b"\t") == 1 for line in data.splitlines())


@pytest.mark.parametrize("release", sorted(OTHER_TESTS))
def test_decontamination_covers_each_public_test_set(network, tmp_path, release):
    """Each pinned test set is needed: served without its sentence, the Tatoeba pair sharing it is kept."""
    shared = next(
        side for side in OTHER_TESTS[release][0] if any(normalised(side) in map(normalised, pair) for pair in CLEAN)
    )
    kept = next(pair for pair in CLEAN if normalised(shared) in map(normalised, pair))
    out = prepare(tmp_path)
    assert kept not in read_pairs(out / "train.tsv") + read_pairs(out / "dev.tsv")
    parallel = next(p for p in data_sources.TEST_SETS if p.name == release)
    for source in (parallel.english, parallel.italian):
        network.files[source.url] = b"Not in Tatoeba.\n"
    out = prepare(tmp_path / "again")
    assert kept in read_pairs(out / "train.tsv") + read_pairs(out / "dev.tsv")


def test_dev_and_train_share_no_english_sentence(network, tmp_path):
    for seed in range(5):
        out = prepare(tmp_path, f"seed{seed}", "--seed", seed)
        train, dev = read_pairs(out / "train.tsv"), read_pairs(out / "dev.tsv")
        assert len(dev) >= 5
        assert not {en for en, _ in train} & {en for en, _ in dev}
        both_translations = {CLEAN[0], SECOND_TRANSLATION}
        assert both_translations <= set(train) or both_translations <= set(dev)


def test_manifest_records_sources_licences_commits_and_outputs(network, tmp_path):
    out = prepare(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for name, entry in manifest["outputs"].items():
        data = (out / name).read_bytes()
        assert entry["pairs"] == data.count(b"\n") and entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert set(manifest["outputs"]) == set(OUTPUTS[:5])
    assert manifest["outputs"]["test-tatoeba.tsv"]["same_as_project_file"] is True
    assert manifest["removed"] == {
        "tatoeba": {"malformed": 1, "empty": 1, "duplicates": 1, "test_overlap": 9},
        "test_set": {"empty": 0},
        "dev_news": {"empty": 0},
        "extra": {"empty": 0, "duplicates": 0, "test_overlap": 1},
    }
    by_url = {entry["url"]: entry for entry in manifest["sources"]}
    assert set(by_url) == set(network.files) - TREEBANK_URLS
    for url in by_url:
        assert by_url[url]["sha256"] == hashlib.sha256(network.files[url]).hexdigest()
    benchmark = by_url[data_sources.TEST_SETS[0].english.url]
    assert "/843d9a3bf560b4d05507f568ec5aa81fab086962/" in benchmark["url"]
    assert benchmark["pinned"] == "on first download" and "Helsinki-NLP" in benchmark["credit"]
    licences = {entry["name"].split(".")[0]: entry["licence"] for entry in manifest["sources"]}
    assert licences["oldi-seed"] == "CC BY-SA 4.0" and licences["mt-geneval-dev-feminine"] == "CC BY-SA 3.0"
    assert licences["cocoa-mt-test-telephony-formal"] == "CDLA-Sharing 1.0"
    assert by_url[data_sources.TATOEBA_PAIRS.url]["credit"] == "Tatoeba.org contributors (CC-BY 2.0 FR)"


def test_a_second_run_writes_byte_identical_files(network, tmp_path):
    first = {name: (prepare(tmp_path) / name).read_bytes() for name in OUTPUTS}
    second = {name: (prepare(tmp_path) / name).read_bytes() for name in OUTPUTS}
    assert first == second
    assert sorted(os.listdir(tmp_path / "out")) == sorted(OUTPUTS)  # no temporary file left behind


def test_downloads_are_made_once_then_read_from_the_cache(network, tmp_path):
    prepare(tmp_path, "first")
    prepare(tmp_path, "second")
    assert sorted(network.requested) == sorted(set(network.files) - TREEBANK_URLS)
    assert (tmp_path / "first" / "train.tsv").read_bytes() == (tmp_path / "second" / "train.tsv").read_bytes()


def test_every_github_source_is_pinned_in_the_code():
    sources = {s.name: s for p in data_sources.TEST_SETS + data_sources.EXTRA_SETS for s in (p.english, p.italian)}
    sources |= {s.name: s for s in data_sources.UD_PUD}
    assert all(s.sha256 for s in sources.values())
    assert set(sources) == set(data_sources.SHA256)  # no entry of SHA256 is misspelt, so none is silently unused
    assert all(re.fullmatch("[0-9a-f]{64}", s.sha256) for s in sources.values())


def test_a_source_pinned_in_the_code_is_checked(network, tmp_path):
    benchmark = FIXTURE_SOURCES.test_sets[0]
    good = hashlib.sha256(network.files[benchmark.english.url]).hexdigest()

    def pinned(sha):
        english = dataclasses.replace(benchmark.english, sha256=sha)
        return dataclasses.replace(
            FIXTURE_SOURCES, test_sets=(dataclasses.replace(benchmark, english=english), *FIXTURE_SOURCES.test_sets[1:])
        )

    prepare(tmp_path, sources=pinned(good))
    with pytest.raises(SourceChanged) as error:
        prepare(tmp_path, "again", sources=pinned("0" * 64))
    message = str(error.value)
    assert "\n" not in message and message.startswith("tatoeba-test-v2020-07-28.eng: ")
    assert f"has sha256 {good}, not the {'0' * 64} pinned in the code" in message


def test_a_source_changed_since_its_first_download_is_refused(network, tmp_path):
    prepare(tmp_path)
    lock = json.loads((tmp_path / "cache" / "sources.lock.json").read_text())
    source = data_sources.EXTRA_SETS[1].italian
    assert lock[source.name]["sha256"] == hashlib.sha256(network.files[source.url]).hexdigest()
    pinned.cache_path(source.url, tmp_path / "cache").write_bytes(b"changed\nfile\n")
    with pytest.raises(
        SourceChanged,
        match=f"^{source.name}: .* pinned on first download for {source.url}; delete the file to download it again$",
    ):
        prepare(tmp_path, "again")
    assert not (tmp_path / "again").exists()


def test_a_benchmark_that_is_not_the_scored_file_writes_nothing(network, tmp_path):
    sources = dataclasses.replace(FIXTURE_SOURCES, project_outputs={"test-tatoeba.tsv": "f" * 64})
    with pytest.raises(
        SourceChanged,
        match="^test-tatoeba.tsv: the rebuild has sha256 .* not the f{64} of the file "
        r"the scores are on; its sources \(tatoeba-test-v2020-07-28.eng, "
        r"tatoeba-test-v2020-07-28.ita\) are not",
    ):
        prepare(tmp_path, sources=sources)
    assert not (tmp_path / "out").exists()


def test_a_changed_tatoeba_zip_is_a_warning_with_the_counts(network, tmp_path, capsys):
    prepare(tmp_path)
    capsys.readouterr()
    smaller = tmp_path / "ita.txt"
    smaller.write_text("\n".join(TATOEBA_LINES[:30]) + "\n", encoding="utf-8")
    prepare(tmp_path, "again", "--tatoeba", smaller)
    warning = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    lock = tmp_path / "cache" / "sources.lock.json"
    assert warning == [
        f"warning: {smaller} is not the ita-eng.zip recorded in {lock} (48 pairs then, 30 now): "
        "train.tsv and dev.tsv differ from the ones built from it"
    ]


def test_a_failed_download_names_the_url_and_where_to_put_the_file(tmp_path, monkeypatch):
    def no_network(request, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(pinned.urllib.request, "urlopen", no_network)
    url = data_sources.TEST_SETS[0].english.url
    expected = pinned.cache_path(url, tmp_path / "cache")
    with pytest.raises(DownloadError, match=f"{url} .*no network.*save it as {expected}$"):
        prepare(tmp_path)
    assert isinstance(DownloadError("x"), FileNotFoundError)  # so run_cli prints it as one `error:` line
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # no half download cached
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_is_refused(tmp_path):
    (tmp_path / "out").write_text("not a folder")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        prepare(tmp_path)


def test_help_names_the_module():
    status, stdout, _ = run_command(main, "--help")
    assert status == 0
    assert stdout.startswith("usage: python -m training.prepare_data") and "--docs" in stdout


def test_a_missing_tatoeba_file_is_one_error_line_before_any_download(tmp_path):
    missing = tmp_path / "nowhere" / "ita-eng.zip"
    status, _, stderr = run_command(
        main, "--out", tmp_path / "out", "--tatoeba", missing, "--cache", tmp_path / "cache"
    )
    assert status == 1
    assert stderr.splitlines() == [f"error: {missing}: no such file (given with --tatoeba)"]
    assert not (tmp_path / "cache").exists()


def test_a_wrong_cached_source_is_one_error_line(tmp_path):
    """The real command, offline: the benchmark's English file in the cache is a later release (it begins "Look."),
    not the v2020-07-28 file whose sha256 is in the code."""
    source = data_sources.TEST_SETS[0].english
    path = pinned.cache_path(source.url, tmp_path / "cache")
    path.parent.mkdir(parents=True)
    path.write_text("Look. My house is cleaner than yours.\n", encoding="utf-8")
    proc = run_module("training.prepare_data", "--out", tmp_path / "out", "--cache", tmp_path / "cache")
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f"error: {source.name}: {path} has sha256 ")
    assert f"not the {data_sources.SHA256[source.name]} pinned in the code" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_treebank_sentences_are_the_text_lines_and_a_file_without_them_is_refused(tmp_path):
    cache = tmp_path / "cache"
    good, bad = FIXTURE_SOURCES.docs_also_avoid  # trusted on first use: no sha256 in the code
    for source, text in (
        (good, "# sent_id = 1\n# text = The  Cat sat.\n1\tThe\n\n# text = A dog.\n"),
        (bad, "<html>Not Found</html>\n"),
    ):
        pinned.cache_path(source.url, cache).parent.mkdir(parents=True, exist_ok=True)
        pinned.cache_path(source.url, cache).write_text(text, encoding="utf-8")
    lock = pinned.Lock(cache)
    sentences, entries = prepare_data.treebank_sentences((good,), cache, lock)
    assert sentences == {"the cat sat.", "a dog."} and entries[0]["sentences"] == 2
    with pytest.raises(ValueError, match=f"^{bad.name}: .* has no '# text = ' lines; is it a CoNLL-U file\\?$"):
        prepare_data.treebank_sentences((bad,), cache, lock)


# --- train-docs.tsv: the aligners on hand-written pages, and the --docs step on packages unpacked in the cache ---

LIBREOFFICE_EN = """<html><head><title>Paragraph</title><script>var x = "not text";</script></head><body>
<h1 id="hd_id1">Formatting Paragraphs</h1>
<p id="par_id2" class="paragraph">Choose <span class="menuitem">Format - Paragraph</span>.</p>
<p id="par_id3" class="paragraph">Press <span id="swln1" class="switchinline"><span hidden="true" id="MACidm1">
Command</span><span hidden="true" id="defaultidm2">Ctrl</span><script>setSystemSpan("swln1");</script></span>+1
to apply it.</p>
<p id="par_id4" class="paragraph">Used twice.</p><p id="par_id4" class="paragraph">Used twice again.</p>
<p id="par_id5" class="code">Sub Main</p>
<p id="par_id6" class="paragraph">Only in English.</p>
</body></html>"""
LIBREOFFICE_IT = """<html><body>
<p id="par_id3" class="paragraph">Premete <span id="swln1" class="switchinline"><span hidden="true" id="MACidm1">Comando
</span><span hidden="true" id="defaultidm2">Ctrl</span></span>+1 per applicarlo.</p>
<h1 id="hd_id1">Formattare i paragrafi</h1>
<p id="par_id2" class="paragraph">Scegliete <span class="menuitem">Formato - Paragrafo</span>.</p>
<p id="par_id4" class="paragraph">Usato due volte.</p><p id="par_id4" class="paragraph">Usato ancora.</p>
<p id="par_id5" class="code">Sub Main</p>
</body></html>"""


def page(*blocks):
    """A DocBook-like page: each block (tag, class, text) with an internal link when the text holds `LINK`."""
    body = "".join(
        f'<{tag} class="{cls}">' + text.replace("LINK", '<a href="other.en.html#s1">LINK</a>') + f"</{tag}>"
        for tag, cls, text in blocks
    )
    return f'<html><body><div class="section">{body}</div></body></html>'


def blocks(text):
    return doc_pairs.BlockParser().page(text)


def test_libreoffice_help_is_paired_by_page_and_paragraph_id():
    pairs = doc_pairs.id_pairs(blocks(LIBREOFFICE_EN), blocks(LIBREOFFICE_IT))
    assert sorted(pairs) == sorted(
        [
            ("Formatting Paragraphs", "Formattare i paragrafi"),
            ("Choose Format - Paragraph.", "Scegliete Formato - Paragrafo."),
            ("Press Ctrl+1 to apply it.", "Premete Ctrl+1 per applicarlo."),
        ]
    )


def test_manual_blocks_are_paired_by_position_where_the_structures_match():
    english = [
        ("h2", "title", "1.2. What is Debian?"),
        ("p", "", "Debian is an operating system."),
        ("li", "listitem", "See LINK for more."),
        ("dt", "", "apt"),
    ]
    italian = [
        ("h2", "title", "1.2. Cos'è Debian?"),
        ("p", "", "Debian è un sistema operativo."),
        ("li", "listitem", "Si veda LINK per altro."),
        ("dt", "", "apt"),
    ]
    english_page, italian_page = page(*english), page(*italian).replace("other.en.html", "other.it.html")
    assert doc_pairs.sequence_pairs(blocks(english_page), blocks(italian_page)) == [
        (en, it) for (_, _, en), (_, _, it) in zip(english, italian)
    ]


def test_where_structures_differ_only_runs_of_three_matching_blocks_are_paired():
    run = [("p", "", f"Sentence {n} of the run.") for n in range(3)]
    run_it = [("p", "", f"Frase {n} della serie.") for n in range(3)]
    english = [("h2", "title", "Title"), ("li", "a", "Short run one."), ("dt", "x", "A term."), *run]
    italian = [("h2", "title", "Titolo"), ("td", "b", "Un blocco in più."), ("li", "a", "Serie breve."), *run_it]
    assert doc_pairs.sequence_pairs(blocks(page(*english)), blocks(page(*italian))) == [
        (en, it) for (_, _, en), (_, _, it) in zip(run, run_it)
    ]


def test_blocks_with_no_text_are_left_out_before_pairing():
    """GIMP's English page gives its figures empty captions the Italian page lacks: kept, they made a run that paired
    each caption's neighbour with the next one ("Make path visible" / "Raddrizza")."""
    steps, passi = (
        ["Draw path", "Make path visible", "Straighten"],
        ["Delinea tracciato", "Rendi tracciato visibile", "Raddrizza"],
    )
    english = [("p", "", "Original image"), *(block for step in steps for block in (("p", "", ""), ("p", "", step)))]
    italian = [("p", "", "Immagine originale"), *(("p", "", passo) for passo in passi)]
    assert doc_pairs.sequence_pairs(blocks(page(*english)), blocks(page(*italian))) == [
        ("Original image", "Immagine originale"),
        *zip(steps, passi),
    ]


def test_footnote_links_whose_generated_ids_differ_by_language_still_pair():
    """DocBook numbers a footnote's id in each build (idm3699 in English, idm3697 in Italian): the Debian New
    Maintainers' Guide lost 179 pairs, every block with a footnote and the footnotes themselves, until the number was
    left out of a link's signature."""

    def footnoted(number, texts):
        title, body, plain, note = texts
        return (
            f'<html><body><h2 class="title">{title}</h2><p>{body}<a href="#ftn.idm{number}">[1]</a></p>'
            f'<p>{plain}</p><div class="footnote"><p><a href="#idm{number}">[1] </a>{note}</p></div></body></html>'
        )

    english = ("9.1. Uploading", "Once you are a developer, upload.", "Set up dupload first.", "See the manual.")
    italian = (
        "9.1. Caricamento",
        "Una volta sviluppatori, caricate.",
        "Impostate prima dupload.",
        "Si veda il manuale.",
    )
    pairs = doc_pairs.sequence_pairs(blocks(footnoted(3699, english)), blocks(footnoted(3697, italian)))
    assert [en for en, _ in pairs] == [
        "9.1. Uploading",
        "Once you are a developer, upload.[1]",
        "Set up dupload first.",
        "[1] See the manual.",
    ]
    assert [it for _, it in pairs][-1] == "[1] Si veda il manuale."


def test_sphinx_permalinks_and_navigation_bars_are_left_out():
    """The Developer's Reference is built by Sphinx: each heading ends with a "¶" link to itself, and every page has
    navigation bars ("Next topic", "previous"), which gave 210 pairs the project's file does not have."""
    sphinx = (
        '<html><body><div class="related" role="navigation"><ul><li><a href="a.html">next</a></li></ul></div>'
        '<section><h1>Bug housekeeping<a class="headerlink" href="#bug" title="Permalink">¶</a></h1>'
        '<p>Close the bugs you fixed.</p></section><div class="sphinxsidebar" role="navigation">'
        '<h4>Next topic</h4><p class="topless"><a href="tools.html">Tools</a></p></div></body></html>'
    )
    assert [block.text for block in blocks(sphinx)] == ["Bug housekeeping", "Close the bugs you fixed."]


def test_a_line_break_parts_two_words_as_a_space_does():
    """LibreOffice's help breaks lines inside a paragraph: read as nothing, they joined "Ctrl+V.The selected" (76
    pairs the project's file has with a space)."""
    assert [block.text for block in blocks("<p>press Ctrl+V.<br>The formula<br/>is replaced.</p>")] == [
        "press Ctrl+V. The formula is replaced."
    ]


def test_a_switch_reads_as_its_default_variant_or_with_none_as_its_first():
    """LibreOffice's help shows one variant per application (and per platform): "Slide" in Impress, "Page" by
    default; a sentence only Calc's help shows has no default. Read as all variants, they joined "SlidePage"."""
    page = (
        '<h3 id="hd_1">First <span id="swlnappl_1" class="switchinline"><span hidden="true" id="IMPRESS1" '
        'class="IMPRESS">Slide</span><span hidden="true" id="default1">Page</span></span></h3>'
        '<p id="par_2"><span id="swlnappl_2" class="switchinline"><span hidden="true" id="CALC2" class="CALC">'
        'Searches all <b>sheets</b>.</span><span hidden="true" id="WRITER2" class="WRITER">Searches all pages.'
        "</span></span></p>"
    )
    assert [block.text for block in blocks(page)] == ["First Page", "Searches all sheets."]


def test_a_soft_hyphen_is_read_as_nothing():
    """LibreOffice's help marks where "Mon&shy;day" may break; the project's file has no soft hyphen."""
    assert [block.text for block in blocks("<p>Mon&shy;day to Sun\u00adday</p>")] == ["Monday to Sunday"]


def test_gimps_alphabetical_index_and_glossary_pages_are_left_out():
    """Sorted alphabetically in each language, their entries do not pair, and the project's file has none of them;
    GIMP 2.10.34's index page is gimp-help-index.html, which gave 174 pairs the project's file lacks."""
    gimp = next(manual for manual in doc_pairs.MANUALS if manual.english == "gimp-help-en")

    def skipped(page):
        return bool(re.search(gimp.skip_pages, f"usr/share/gimp/2.0/help/{page}"))

    assert all(map(skipped, ["gimp-help-index.html", "glossary.html", "ix01.html"]))
    assert not any(map(skipped, ["index.html", "gimp-layer-new.html", "gimp-help-index-of-tools.html"]))


@pytest.mark.parametrize(
    "pair, reason",
    [
        (("", "Vuoto."), "empty"),
        (("Open %APPDATA% now.", "Aprite %APPDATA% ora."), "markup_residue"),
        (("See [text/shared/00.xhp not found].", "Vedi [text/shared/00.xhp not found]."), "markup_residue"),
        (
            (
                "[text/scalc/01/04060106.xhp#sum_head not found]., SUMIF",
                "[text/scalc/01/04060106.xhp#sum_head not found]., SOMMA.SE",
            ),
            "markup_residue",
        ),
        (("A" * 401, "B" * 401), "too_long"),
        (("LibreOffice Writer", "LibreOffice writer!"), "untranslated"),
        (("Select the text.", "Select the text and the table for this document."), "italian_is_english"),
        (("x = 12 / 3", "y = 12 / 3"), "not_text"),
        (("Use 3 columns.", "Usate 4 colonne."), "numbers_differ"),
        (("Open the file dialog now.", "Aprite."), "length_ratio"),
    ],
)
def test_each_doc_filter_drops_what_it_names(pair, reason):
    kept, removed = doc_pairs.filter_doc_pairs([pair, ("Save the file.", "Salvate il file.")], set())
    assert kept == [("Save the file.", "Salvate il file.")]
    assert removed[reason] == 1 and sum(removed.values()) == 1


def test_a_date_written_the_other_way_and_a_url_encoded_character_pass_the_filters():
    """Each has a side that looks like what a filter drops, as the project's file keeps them."""
    pairs = [
        ("What date is one month prior to 2001-03-31?", "Qual è la data un mese prima del 31/3/2001?"),
        ('=ENCODEURL(B1) returns %E8%BB%8A ("車").', '=CODIFICA.URL(B1) restituisce %E8%BB%8A ("車").'),
    ]
    assert doc_pairs.filter_doc_pairs(pairs, set())[0] == pairs


def test_doc_pairs_lose_shared_numbers_repeats_and_test_sentences_ignoring_punctuation():
    pairs = [
        ("Figure 17.11. The Curves tool", "Figura 17.11. Lo strumento Curve"),
        ("2.1. Saving files", "2.1. Salvare i file"),
        ("2.1. Saving files", "2.1. Salvare i file"),
        ("Where are you?", "Dove sei"),
    ]
    kept, removed = doc_pairs.filter_doc_pairs(pairs, {normalise("Dove sei?")})
    assert kept == [("The Curves tool", "Lo strumento Curve"), ("Saving files", "Salvare i file")]
    assert removed["duplicates"] == 1 and removed["test_overlap"] == 1
    assert doc_pairs.strip_leading_numbers("3. Three steps", "4. Tre passi") == ("3. Three steps", "4. Tre passi")
    for kept_label in (
        ("Appendix A. Credits", "Appendice A. Riconoscimenti"),
        ("Part I. Basics", "Parte I. Basi"),
        ("Equation 8.15. Subtraction", "Equazione 8.15. Sottrazione"),
    ):  # as the project's file has them
        assert doc_pairs.strip_leading_numbers(*kept_label) == kept_label
    assert doc_pairs.strip_leading_numbers("Table 3.1. Keys", "Tabella 3.1. Tasti") == ("Keys", "Tasti")


def test_pages_of_both_languages_share_a_key():
    assert doc_pairs.language_free("usr/share/doc/debian/FAQ/basic-defs.en.html") == doc_pairs.language_free(
        "usr/share/doc/debian/FAQ/it/basic-defs.it.html"
    )
    assert doc_pairs.language_free(
        "usr/share/libreoffice/help/en-US/text/shared/guide/autohide.html"
    ) == doc_pairs.language_free("usr/share/libreoffice/help/it/text/shared/guide/autohide.html")
    assert doc_pairs.language_free("usr/share/doc/maint-guide-it/html/index.it.html#s1") == doc_pairs.language_free(
        "usr/share/doc/maint-guide/html/index.en.html#s1"
    )


MANUAL_EN = page(
    ("h2", "title", "3.1. Installing"),
    ("p", "", "Run the installer."),
    ("p", "", "We fell asleep!"),
    ("li", "listitem", "Reboot the machine."),
)
MANUAL_IT = page(
    ("h2", "title", "3.1. Installare"),
    ("p", "", "Avviate l'installazione."),
    ("p", "", "Ci siamo addormentati"),
    ("li", "listitem", "Riavviate la macchina."),
)
TEST_MANUALS = (
    doc_pairs.Manual("Office help", "office-help-en", "office-help-it", "1.0", "MPL-2.0", "Office contributors", "ids"),
    doc_pairs.Manual(
        "A manual",
        "a-manual",
        "a-manual-it",
        "2.0",
        "GPL-2+",
        "The authors",
        "blocks",
        copyright_package="a-manual-common",
        skip_pages=r"glossary\.html$",
    ),
)


def unpacked_packages(cache):
    """The packages of TEST_MANUALS as `apt-get download` + `dpkg-deb -x` leave them in CACHE/debian."""
    trees = {
        "office-help-en": {"usr/share/office/help/en-US/text/para.html": LIBREOFFICE_EN},
        "office-help-it": {"usr/share/office/help/it/text/para.html": LIBREOFFICE_IT},
        "a-manual": {
            "usr/share/doc/a-manual/html/install.en.html": MANUAL_EN,
            "usr/share/doc/a-manual/html/glossary.en.html": MANUAL_EN,
        },
        "a-manual-it": {
            "usr/share/doc/a-manual-it/html/install.it.html": MANUAL_IT,
            "usr/share/doc/a-manual-it/html/glossary.it.html": MANUAL_IT,
        },
        "a-manual-common": {},
    }
    copyright = {"office-help-en": "License: MPL-2.0\n", "a-manual-common": "License: GPL-2+\n\nLicense: GFDL-1.2+\n"}
    for package, files in trees.items():
        (cache / "debian" / f"{package}_1.0_all.deb").parent.mkdir(parents=True, exist_ok=True)
        (cache / "debian" / f"{package}_1.0_all.deb").write_bytes(package.encode())
        for path, text in {
            **files,
            **({f"usr/share/doc/{package}/copyright": copyright[package]} if package in copyright else {}),
        }.items():
            (cache / "debian" / package / path).parent.mkdir(parents=True, exist_ok=True)
            (cache / "debian" / package / path).write_text(text, encoding="utf-8")


def test_docs_step_writes_train_docs_with_licences_and_no_test_sentence(network, tmp_path, monkeypatch):
    monkeypatch.setattr(doc_pairs, "MANUALS", TEST_MANUALS)
    unpacked_packages(tmp_path / "cache")
    out = prepare(tmp_path, "out", "--docs")
    docs = read_pairs(out / "train-docs.tsv")
    assert sorted(docs) == sorted(
        [
            ("Formatting Paragraphs", "Formattare i paragrafi"),
            ("Choose Format - Paragraph.", "Scegliete Formato - Paragrafo."),
            ("Press Ctrl+1 to apply it.", "Premete Ctrl+1 per applicarlo."),
            ("Installing", "Installare"),
            ("Run the installer.", "Avviate l'installazione."),
        ]
    )
    # not "We fell asleep!" (in the benchmark) nor "Reboot the machine." (its Italian is in UD PUD)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    entries = {entry["name"]: entry for entry in manifest["sources"]}
    assert entries["A manual"]["copyright_file_licences"] == ["GPL-2+", "GFDL-1.2+"]
    assert entries["Office help"]["licence"] == "MPL-2.0" and entries["Office help"]["pairs"] == 3
    assert [p["name"] for p in entries["A manual"]["packages"]] == ["a-manual_1.0_all.deb", "a-manual-it_1.0_all.deb"]
    assert manifest["removed"]["docs"]["A manual"]["test_overlap"] == 2
    assert entries["ud-pud-it.conllu"]["sentences"] == 1 and entries["ud-pud-it.conllu"]["licence"] == "CC BY-SA 4.0"
    first = (out / "train-docs.tsv").read_bytes()
    assert (prepare(tmp_path, "again", "--docs") / "train-docs.tsv").read_bytes() == first
    (tmp_path / "cache" / "debian" / "a-manual-it_1.0_all.deb").write_bytes(b"another build")
    with pytest.raises(
        SourceChanged,
        match="^a-manual-it_1.0_all.deb: .* pinned on first download for a-manual-it=2.0; delete the file",
    ):
        prepare(tmp_path, "third", "--docs")


def test_the_docs_rebuild_bench_counts_the_file_lines_it_rebuilds_and_the_differences(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(doc_pairs, "MANUALS", TEST_MANUALS)
    unpacked_packages(tmp_path / "cache")
    target = tmp_path / "train-docs.tsv"
    write_tsv(
        target,
        [
            ("Run the installer.", "Avviate l'installazione."),
            ("Installing", "Installare"),
            ("A line no manual gives.", "Una riga che nessun manuale dà."),
        ],
    )
    docs_rebuild.main(["--against", str(target), "--cache", str(tmp_path / "cache"), "--show", "5"])
    out = capsys.readouterr().out.splitlines()
    summary = json.loads(out[-1])
    assert [(m["name"], m["rebuilt"], m["in_file"]) for m in summary["manuals"]] == [
        ("Office help", 3, 0),
        ("A manual", 4, 2),
    ]
    assert (summary["rebuilt"], summary["in_file"], summary["not_in_file"], summary["not_rebuilt"]) == (7, 2, 5, 1)
    assert "not rebuilt: A line no manual gives.\tUna riga che nessun manuale dà." in out


# --- train-europarl.tsv.gz: tokenised ISO-8859-1 session files written here, through the --europarl step ---

EUROPARL_SESSIONS = {  # session file -> (English lines, Italian lines), as the release writes them
    "ep-00-01-17.al": (
        [
            "Resumption of the session ",
            "You have requested a debate on this subject during this part - session , in 1999 / 2000 . ",
            "The Commission 's report on the Member States ' interests ( COM ( 1999 ) 10 ) . ",
            (
                "That is why we would recommen. and it is my impression that the Commission is open to this ide. "
                "that we hold the debate . "
            ),
            "( Applause ) ",
            "We fell asleep ! ",
            "It costs USD 72 . 750 million . ",
            "Resumption of the session ",
        ],
        [
            "Ripresa della sessione ",
            "Avete chiesto una discussione su questo tema nel corso della presente tornata , nel 1999 / 2000 . ",
            "La relazione della Commissione sugli interessi degli Stati membri ( COM ( 1999 ) 10 ) . ",
            "Per questo raccomandiamo che si tenga la discussione , e credo che la Commissione sia d ' accordo . ",
            "( Applausi ) ",
            "Ci siamo addormentati . ",
            "Costa 72 . 750 milioni di dollari . ",
            "Ripresa della sessione ",
        ],
    ),
    "ep-00-01-18.al": (
        [
            "Mr President , the European Union 's role is clear . ",
            "",
            "Chechnya ",
            "Why should we , in the name of all our citizens , support this ? ",
            "Good morning ! ",
        ],
        [
            "Signor Presidente , il ruolo dell ' Unione è « chiaro » , almeno un po ' , il 1 º maggio . ",
            "Sì . ",
            "Situazione in Cecenia ",
            "Perché ? ",
            "Buongiorno ! ",
        ],
    ),
}
EXPECTED_EUROPARL = [
    ("Resumption of the session", "Ripresa della sessione"),
    (
        "You have requested a debate on this subject during this part-session, in 1999/2000.",
        "Avete chiesto una discussione su questo tema nel corso della presente tornata, nel 1999/2000.",
    ),
    (
        "The Commission's report on the Member States' interests (COM (1999) 10).",
        "La relazione della Commissione sugli interessi degli Stati membri (COM (1999) 10).",
    ),
    ("It costs USD 72.750 million.", "Costa 72.750 milioni di dollari."),
    (
        "Mr President, the European Union's role is clear.",
        "Signor Presidente, il ruolo dell'Unione è «chiaro», almeno un po', il 1º maggio.",
    ),
    ("Chechnya", "Situazione in Cecenia"),  # a short pair is not dropped for its length ratio
]


@pytest.fixture
def europarl_copy(tmp_path, monkeypatch):
    """A copy of the Europarl repository holding EUROPARL_SESSIONS, with their sha256 pinned in place of the real
    ones: -> the copy's folder."""
    folder = tmp_path / "Sin-r"
    table = {}
    for name, sides in EUROPARL_SESSIONS.items():
        for language, side in zip(europarl.LANGUAGES, sides):
            path = folder / "it-en" / language / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes("".join(f"{line}\n" for line in side).encode("latin-1"))
            table.setdefault(name, []).append(hashlib.sha256(path.read_bytes()).hexdigest())
    monkeypatch.setattr(europarl, "SHA256", table)
    return folder


def read_gzip_pairs(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [tuple(line.split("\t")) for line in f.read().splitlines()]


def test_europarl_step_cleans_filters_and_decontaminates_the_sessions(network, tmp_path, europarl_copy):
    out = prepare(tmp_path, "out", "--europarl-from", europarl_copy)
    assert read_gzip_pairs(out / "train-europarl.tsv.gz") == EXPECTED_EUROPARL
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["removed"]["europarl"] == {
        "empty": 1,
        "dash_artefact": 1,
        "stage_direction": 1,
        "length_mismatch": 1,
        "duplicates": 1,
        "test_overlap": 2,
    }
    # "We fell asleep !" shares its English with the benchmark, "Good morning !" with the demo set
    entry = next(entry for entry in manifest["sources"] if entry["name"] == "europarl-it-en")
    assert entry["files"] == 4 and entry["pairs"] == len(EXPECTED_EUROPARL)
    assert "Philipp Koehn, MT Summit 2005" in entry["credit"] and europarl.COMMIT in entry["url"]
    assert manifest["outputs"]["train-europarl.tsv.gz"]["sha256"] == tsv_sha256(EXPECTED_EUROPARL)  # uncompressed
    first = (out / "train-europarl.tsv.gz").read_bytes()
    again = prepare(tmp_path, "again", "--europarl-from", europarl_copy)
    assert (again / "train-europarl.tsv.gz").read_bytes() == first
    assert "train-europarl.tsv.gz" not in os.listdir(prepare(tmp_path, "again"))  # without --europarl: removed


def test_europarl_sessions_are_downloaded_at_the_pinned_commit(network, tmp_path, europarl_copy):
    for name in EUROPARL_SESSIONS:
        for language in europarl.LANGUAGES:
            url = data_sources.github(europarl.REPOSITORY, europarl.COMMIT, f"it-en/{language}/{name}")
            network.files[url] = (europarl_copy / "it-en" / language / name).read_bytes()
    out = prepare(tmp_path, "out", "--europarl")
    assert read_gzip_pairs(out / "train-europarl.tsv.gz") == EXPECTED_EUROPARL


def test_a_europarl_file_with_another_sha256_is_refused(network, tmp_path, europarl_copy, monkeypatch):
    changed = europarl_copy / "it-en" / "it" / "ep-00-01-18.al"
    changed.write_bytes(changed.read_bytes().replace(b"Buongiorno", b"Buonasera"))
    with pytest.raises(
        SourceChanged,
        match=r"^europarl-it/ep-00-01-18.al: .*ep-00-01-18.al has sha256 [0-9a-f]{64}, "
        r"not the [0-9a-f]{64} pinned in the code for https://raw.githubusercontent"
        r".com/Martingeek4life/Sin-r/e8471c43b9812223f0d9d561625d8c6131b893ce/"
        r"it-en/it/ep-00-01-18.al",
    ):
        prepare(tmp_path, "out", "--europarl-from", europarl_copy)
    assert not (tmp_path / "out").exists()


def test_every_europarl_session_is_pinned_at_one_commit():
    sources = europarl.session_sources()
    assert len(sources) == 387
    assert all(re.fullmatch(r"ep-\d\d-\d\d-\d\d\.al", Path(source.url).name) for pair in sources for source in pair)
    assert all(re.fullmatch("[0-9a-f]{64}", source.sha256) for pair in sources for source in pair)
    assert {source.url.split("/")[5] for pair in sources for source in pair} == {europarl.COMMIT}


@pytest.mark.parametrize(
    "tokenised, reason",
    [
        (("Thank you . ", " "), "empty"),
        (("That is why we would recommen. and I agree . ", "Per questo lo raccomandiamo . "), "dash_artefact"),
        (("( Applause ) ", "( Applausi ) "), "stage_direction"),
        (("Sitting closed . ", "( La seduta termina alle 19.15 ) "), "stage_direction"),
        (("I am booking my seat today ! ", "Mi prenoto ! "), "length_mismatch"),
        (("and ", "e "), "length_mismatch"),
    ],
)
def test_each_europarl_filter_drops_what_it_names(tmp_path, tokenised, reason):
    english, italian = tmp_path / "en.al", tmp_path / "it.al"
    english.write_bytes(f"{tokenised[0]}\nAt 10 a.m. , etc. and so on . \n".encode("latin-1"))
    italian.write_bytes(f"{tokenised[1]}\nAlle 10 , ecc. e così via . \n".encode("latin-1"))
    kept, removed = europarl.europarl_pairs([(english, italian)])
    assert kept == [("At 10 a.m., etc. and so on.", "Alle 10, ecc. e così via.")]
    assert removed[reason] == 1 and sum(removed.values()) == 1


def test_session_files_of_different_lengths_are_refused(tmp_path):
    (tmp_path / "en.al").write_bytes(b"One .\nTwo .\n")
    (tmp_path / "it.al").write_bytes(b"Uno .\n")
    with pytest.raises(ValueError, match="^en.al: 2 English lines but 1 Italian lines$"):
        europarl.europarl_pairs([(tmp_path / "en.al", tmp_path / "it.al")])


# --- train-names.tsv: the names CLDR gives in English and Italian, read from the pinned babel package ---


def test_names_step_writes_cldr_names_in_both_languages_without_test_sentences(network, tmp_path):
    more_tests = tmp_path / "more-tests.tsv"
    write_tsv(more_tests, [("Brazil", "Una frase di un altro test.")])
    out = prepare(tmp_path, "out", "--names", "--exclude", more_tests)
    names = read_pairs(out / "train-names.tsv")
    for pair in [
        ("Italy", "Italia"),
        ("Southern Europe", "Europa meridionale"),
        ("European Union", "Unione europea"),
        ("Italian", "italiano"),
        ("US dollars", "dollari statunitensi"),
        ("British pound", "sterlina britannica"),
        ("August", "agosto"),
        ("Wednesday", "mercoledì"),
    ]:
        assert pair in names
    assert "Brazil" not in {english for english, _ in names}  # a side of an --exclude test set
    assert not {"Unknown Region", "Pseudo-Accents", "world"} & {english for english, _ in names}
    assert not [pair for pair in names if any(re.fullmatch("[A-Z]{3}", side) for side in pair)]  # no bare code
    assert len(names) == len(set(names)) and all(en.strip() and it.strip() for en, it in names)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    entry = next(entry for entry in manifest["sources"] if entry["name"] == "cldr-names")
    assert entry["licence"].startswith("Unicode License") and "CLDR" in entry["credit"]
    assert entry["sha256"] == cldr_names.SHA256 and entry["package"] == f"babel {cldr_names.BABEL}"
    assert set(entry["pairs"]) == {"territory", "language", "currency", "calendar"}
    assert manifest["removed"]["names"]["test_overlap"] == 1
    assert manifest["outputs"]["train-names.tsv"]["pairs"] == len(names)
    again = prepare(tmp_path, "again", "--names", "--exclude", more_tests)
    assert (again / "train-names.tsv").read_bytes() == (out / "train-names.tsv").read_bytes()
    assert "train-names.tsv" not in os.listdir(prepare(tmp_path, "again"))  # without --names: removed


def test_cldr_data_that_is_not_the_pinned_release_is_refused_before_anything_is_written(network, tmp_path, monkeypatch):
    monkeypatch.setitem(cldr_names.SHA256, "locale-data/it.dat", "0" * 64)
    with pytest.raises(
        SourceChanged,
        match=r"^babel \S+: locale-data/it.dat has sha256 [0-9a-f]{64}, not the 0{64} pinned in the code; "
        r"install the pinned release: pip install babel==2\.17\.0$",
    ):
        prepare(tmp_path, "out", "--names")
    assert not (tmp_path / "out").exists()
