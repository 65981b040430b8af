"""Shared fixtures: the toy corpus (tests/helpers.py) on disk, and a tiny model trained on it with the real
training script (a few seconds on CPU). Tests import plain helpers from `helpers`, fixtures come from here."""

import json
import os
import sys

import pytest

from helpers import toy_pairs, write_tsv


def pytest_configure(config):
    """The test models are tiny: one torch thread is as fast as several, and far faster when another process
    (a long training run) keeps the cores busy, where idle-spinning thread pools slow the suite down ~5x. So too in
    the processes the tests start (the app, `python -m ...` commands, the notebook's kernel: 4x faster). Set in the
    environment, which torch reads when it starts, so that pytest-xdist's controller, which runs no test, does not
    import torch just to set it."""
    os.environ["OMP_NUM_THREADS"] = "1"
    if "torch" in sys.modules:  # imported before this hook (by a plugin): too late for the variable
        sys.modules["torch"].set_num_threads(1)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    """The groups pytest-xdist's `--dist=loadgroup` (pytest.ini) keeps on one process: every test of the session's
    app and Chromium (`browser`) together, so that they start once; every other module whole, so that its
    module-scoped fixtures (an app, a trained model, a notebook run) are built once."""
    for item in items:
        group = "browser" if "browser" in item.fixturenames else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory):
    """(train.tsv, dev.tsv) paths of the toy corpus."""
    root = tmp_path_factory.mktemp("toy_corpus")
    pairs = toy_pairs()
    return write_tsv(root / "train.tsv", pairs), write_tsv(root / "dev.tsv", pairs[:40])


def train_toy_model(toy_corpus, out, config="tiny"):
    """The model directory `python -m training.train --config CONFIG` exports after 150 steps on the toy corpus."""
    from training.train import main

    train, dev = toy_corpus
    main(
        [
            "--config",
            str(config),
            "--train",
            str(train),
            "--dev",
            str(dev),
            "--out",
            str(out),
            "--max-steps",
            "150",
            "--set",
            "eval_every=50",
            "--no-progress",
            "--precision",
            "float32",
        ]
    )
    return out / "model"


@pytest.fixture(scope="session")
def tiny_model_dir(toy_corpus, tmp_path_factory):
    """A model directory exported by `python -m training.train --config tiny` on the toy corpus, trained once per
    run: pytest-xdist's processes share the run's temporary folder, the first to need the model trains it, the others
    wait for it (a lock), and tests only read it."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-of-USER/pytest-N: this run's, above each process's own
    out, trained = shared / "tiny_run", shared / "tiny_run.done"
    with FileLock(shared / "tiny_run.lock"):
        if not trained.exists():
            train_toy_model(toy_corpus, out)
            trained.touch()
    return out / "model"


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    """The tiny model trained on the toy corpus, as the app and the commands open it (`open_model`'s
    `CheckedTranslator`: the lesson's `Translator` behind the checks of what people type, reading input with the
    directory's word counts)."""
    from modeldir.directory import open_model

    return open_model(tiny_model_dir).translator


# --- The browser tests' app and Chromium, one of each for the session (tests/browser_helpers.py) ----------------------


@pytest.fixture(scope="session")
def deep_model_dir(toy_corpus, tmp_path_factory):
    """The tiny config with 2 encoder and 3 decoder layers: layer radios that change with the kind of attention. Its
    head_importance.json (distinct drops: the Heads tab's importance heatmap tells its cells apart) has made-up
    numbers, so that the page shows the heatmap without a `training.head_importance` run."""
    from interpretability.kinds import head_grid
    from training.configs import CONFIGS
    from transformer import Translator

    model, train = CONFIGS["tiny"]
    out = tmp_path_factory.mktemp("deep_run")
    config = out / "deep.json"
    config.write_text(json.dumps({"model": {**model, "n_encoder_layers": 2, "n_decoder_layers": 3}, "train": train}))
    model_dir = train_toy_model(toy_corpus, out, config)
    grid = head_grid(Translator.load(model_dir).model.cfg)
    drop = {
        kind: [[round(0.5 * (layer * n_heads + head) - 1.0, 2) for head in range(n_heads)] for layer in range(n_layers)]
        for kind, (n_layers, n_heads) in grid.items()
    }
    (model_dir / "head_importance.json").write_text(
        json.dumps(
            {
                "data": "dev",
                "n": 40,
                "decoding": "greedy",
                "bleu": 50.0,
                "drop": drop,
                "command": "python -m training.head_importance --model model --data dev.tsv",
            }
        )
    )
    return model_dir


@pytest.fixture(scope="session")
def deep_translator(deep_model_dir):
    """The library's translator of the model the page runs, opened as the app opens it, in the same precision."""
    from modeldir.directory import open_model

    return open_model(deep_model_dir).translator


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the whole session (each test opens its own pages): launching one costs seconds."""
    helpers = pytest.importorskip("browser_helpers")  # skips where Playwright or Chromium is missing
    with helpers.sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=helpers.CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def browser(chromium, deep_model_dir):
    """`chromium`, with `app_url` the one app the browser tests share: `python app.py` on the deep model in float32,
    started once for the session: each test opens pages of its own."""
    from app_helpers import start_app

    with start_app(deep_model_dir, MODEL_DTYPE="float32", DECODE_PROCESS="0") as app:  # that process: test_batching.py
        chromium.app_url = app.url
        yield chromium


@pytest.fixture(scope="session")
def reused_tab(browser):
    from browser_helpers import ReusedTab

    return ReusedTab(browser, browser.app_url)


@pytest.fixture
def tab(reused_tab):
    """`tab(width=1400, height=1000)`: the one tab the tests reuse (browser_helpers.ReusedTab), sized, for a test that
    opens its own link."""
    return reused_tab.blank


@pytest.fixture
def page(reused_tab):
    """The app (1400 x 1000, the Attention tab open) loaded afresh, after the sentence it translates on load, in the
    one tab the tests reuse (browser_helpers.ReusedTab)."""
    return reused_tab.open_app()
