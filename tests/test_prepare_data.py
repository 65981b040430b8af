"""`python -m training.prepare_data`: the files it rebuilds from tiny sources written here (a manythings.org zip,
a Tatoeba Challenge test set, an extra TSV), kept clear of the test sets, reproducible, and its errors. No test
touches the network: downloads are either served by a stand-in for urllib or made to fail."""

import hashlib
import io
import json
import os
import subprocess
import sys
import unicodedata
import urllib.error
import zipfile
from pathlib import Path

import pytest

from helpers import toy_pairs, write_tsv
from training import prepare_data
from training.prepare_data import TATOEBA_URL, TEST_URL, DownloadError, main

REPO = Path(__file__).resolve().parents[1]
ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #1 (someone) & #2 (someone else)"
CLEAN = toy_pairs()[:40]
TEST_PAIRS = [("I don't drink alcohol.", "Non bevo alcool."), ("We fell asleep.", "Ci siamo addormentati."),
              ("It is late.", "E\u0300 tardi.")]  # "È" decomposed: equal to the composed "È" once NFC-normalised
EXCLUDED = [(CLEAN[2][0].upper(), "Qualcos'altro.")]  # shares its English with a Tatoeba pair, in capitals
SECOND_TRANSLATION = (CLEAN[0][0], "Un'altra traduzione.")
TATOEBA_LINES = [*(f"{en}\t{it}\t{ATTRIBUTION}" for en, it in CLEAN),
                 f"{SECOND_TRANSLATION[0]}\t{SECOND_TRANSLATION[1]}\t{ATTRIBUTION}",
                 f"{CLEAN[1][0]}\t{CLEAN[1][1]}\t{ATTRIBUTION}",  # a duplicate
                 f"Run!\t \t{ATTRIBUTION}",  # an empty side
                 f"i  DON'T drink\u00a0alcohol. \tIo non bevo alcolici.\t{ATTRIBUTION}",  # English in the test set
                 f"We dozed off.\tci siamo  addormentati.\t{ATTRIBUTION}",  # Italian in the test set
                 f"It's late.\t\u00c8 tardi.\t{ATTRIBUTION}",  # Italian in the test set, composed differently
                 f"Hi.\u2028There.\tCiao a tutti.\t{ATTRIBUTION}",  # a line break inside a sentence
                 "a line that is not a pair"]
EXPECTED_TATOEBA = [p for p in CLEAN if p != CLEAN[2]] + [SECOND_TRANSLATION, ("Hi. There.", "Ciao a tutti.")]
EXTRA_PAIRS = [("Gish was an actress.", "Gish era un'attrice."), ("We fell asleep.", "Ci addormentammo."),
               ("She directed films.", "Ha diretto film.")]
EXPECTED_EXTRA = [EXTRA_PAIRS[0], EXTRA_PAIRS[2]]
OUTPUTS = ("train.tsv", "dev.tsv", "test-tatoeba.tsv", "train-extra.tsv", "manifest.json")


def tatoeba_zip(path):
    """ita-eng.zip as manythings.org makes it: ita.txt beside an _about.txt."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_about.txt", "About these sentence pairs.\n")
        archive.writestr("ita.txt", "\n".join(TATOEBA_LINES) + "\n")
    return path


def challenge_test_set(path):
    """The Tatoeba Challenge's own format: eng<TAB>ita<TAB>English<TAB>Italian."""
    path.write_text("".join(f"eng\tita\t{en}\t{it}\n" for en, it in TEST_PAIRS), encoding="utf-8")
    return path


@pytest.fixture
def sources(tmp_path):
    root = tmp_path / "sources"
    root.mkdir()
    return {"--tatoeba": tatoeba_zip(root / "ita-eng.zip"), "--test-tatoeba": challenge_test_set(root / "test.txt"),
            "--exclude": write_tsv(root / "other-test.tsv", EXCLUDED),
            "--extra": write_tsv(root / "mt-geneval.tsv", EXTRA_PAIRS)}


def prepare(sources, out, *more):
    """Run the command on the local sources (dev: 5 pairs), cache in a folder of its own -> `out`."""
    args = [str(a) for flag, path in sources.items() for a in (flag, path)]
    main(["--out", str(out), "--cache", str(out.parent / "cache"), "--dev-size", "5", *args, *map(str, more)])
    return out


def read_pairs(path):
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


def normalised(text):
    return " ".join(unicodedata.normalize("NFC", text).lower().split())


def test_outputs_hold_each_clean_pair_once_and_nothing_of_a_test_set(sources, tmp_path):
    out = prepare(sources, tmp_path / "out")
    train, dev, extra = (read_pairs(out / name) for name in ("train.tsv", "dev.tsv", "train-extra.tsv"))
    assert sorted(train + dev) == sorted(EXPECTED_TATOEBA)
    assert extra == EXPECTED_EXTRA
    assert read_pairs(out / "test-tatoeba.tsv") == TEST_PAIRS
    test_sides = {normalised(side) for pair in TEST_PAIRS + EXCLUDED for side in pair}
    assert not any(normalised(side) in test_sides for pair in train + dev + extra for side in pair)
    for name in OUTPUTS[:4]:
        data = (out / name).read_bytes()
        assert data.endswith(b"\n") and b"\r" not in data
        assert all(line.count(b"\t") == 1 for line in data.splitlines())


def test_dev_and_train_share_no_english_sentence(sources, tmp_path):
    for seed in range(5):
        out = prepare(sources, tmp_path / f"seed{seed}", "--seed", seed)
        train, dev = read_pairs(out / "train.tsv"), read_pairs(out / "dev.tsv")
        assert len(dev) >= 5
        assert not {en for en, _ in train} & {en for en, _ in dev}
        both_translations = {CLEAN[0], SECOND_TRANSLATION}
        assert both_translations <= set(train) or both_translations <= set(dev)


def test_manifest_counts_and_hashes_match_the_files(sources, tmp_path):
    out = prepare(sources, tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for name, entry in manifest["outputs"].items():
        data = (out / name).read_bytes()
        assert entry == {"pairs": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}
    assert set(manifest["outputs"]) == set(OUTPUTS[:4])
    assert manifest["removed"] == {"tatoeba": {"malformed": 1, "empty": 1, "duplicates": 1, "test_overlap": 4},
                                   "test_set": {"malformed": 0, "empty": 0},
                                   "extra": {"malformed": 0, "empty": 0, "duplicates": 0, "test_overlap": 1}}
    by_path = {entry["path"]: entry for entry in manifest["sources"]}
    for path in sources.values():
        assert by_path[str(path)]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert by_path[str(sources["--tatoeba"])]["credit"] == "Tatoeba.org contributors (CC-BY 2.0 FR)"
    assert "Helsinki-NLP" in by_path[str(sources["--test-tatoeba"])]["credit"]
    assert by_path[str(sources["--extra"])]["licence"] == "CC BY-SA 3.0"  # recognised as MT-GenEval by its name


def test_a_second_run_writes_byte_identical_files(sources, tmp_path):
    out = tmp_path / "out"
    first = {name: (prepare(sources, out) / name).read_bytes() for name in OUTPUTS}
    second = {name: (prepare(sources, out) / name).read_bytes() for name in OUTPUTS}
    assert first == second
    assert sorted(os.listdir(out)) == sorted(OUTPUTS)  # no temporary file left behind


def test_downloads_are_made_once_then_read_from_the_cache(sources, tmp_path, monkeypatch):
    served = {TATOEBA_URL: sources["--tatoeba"].read_bytes(), TEST_URL: sources["--test-tatoeba"].read_bytes()}
    requested = []

    def urlopen(request, timeout):
        requested.append(request.full_url)
        response = io.BytesIO(served[request.full_url])
        response.headers = {"Content-Length": str(len(served[request.full_url]))}
        return response

    monkeypatch.setattr(prepare_data.urllib.request, "urlopen", urlopen)
    for run in ("first", "second"):
        main(["--out", str(tmp_path / run), "--cache", str(tmp_path / "cache"), "--dev-size", "5"])
    assert sorted(requested) == sorted(served)
    assert (tmp_path / "first" / "train.tsv").read_bytes() == (tmp_path / "second" / "train.tsv").read_bytes()
    urls = {entry.get("url") for entry in json.loads((tmp_path / "first" / "manifest.json").read_text())["sources"]}
    assert urls == set(served)


def test_a_failed_download_names_the_url_and_the_flag_to_give_instead(sources, tmp_path, monkeypatch):
    def no_network(request, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(prepare_data.urllib.request, "urlopen", no_network)
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match=f"{TATOEBA_URL} .*no network.*--tatoeba PATH"):
        main(["--out", str(tmp_path / "out"), "--cache", str(cache), "--test-tatoeba", str(sources["--test-tatoeba"])])
    assert isinstance(DownloadError("x"), FileNotFoundError)  # so run_cli prints it as one `error:` line
    assert not [p for p in cache.rglob("*") if p.is_file()]  # no half download cached
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_is_refused(sources, tmp_path):
    (tmp_path / "out").write_text("not a folder")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        prepare(sources, tmp_path / "out")


def run_module(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "training.prepare_data", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_help_names_the_module():
    proc = run_module("--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: python -m training.prepare_data") and "--tatoeba" in proc.stdout


def test_a_missing_tatoeba_file_is_one_error_line(sources, tmp_path):
    missing = tmp_path / "nowhere" / "ita-eng.zip"
    proc = run_module("--out", tmp_path / "out", "--tatoeba", missing, "--test-tatoeba", sources["--test-tatoeba"],
                      "--cache", tmp_path / "cache")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [f"error: {missing}: no such file (given with --tatoeba)"]
