"""The web app as users and API clients meet it: `python app.py` in a subprocess, called with gradio_client."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers import hub_cache, toy_pairs

ROOT = Path(__file__).resolve().parents[1]
gradio_client = pytest.importorskip("gradio_client")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(url):
    """A client with a generous timeout: a loaded CI machine answers slowly, which is not what is tested here."""
    return gradio_client.Client(url, verbose=False, analytics_enabled=False, httpx_kwargs={"timeout": 120})


@dataclass
class AppProcess:
    url: str
    output: str = ""  # what it printed (stdout and stderr), once it has stopped
    returncode: int | None = None


@contextlib.contextmanager
def start_app(model_dir, timeout=180, **env):
    """Run `python app.py` on a free port (with `env` on top of ours); yield it once it answers; stop it afterwards
    with SIGTERM, as a service manager does, and record what it printed and how it ended."""
    port = free_port()
    env = {**os.environ, "MODEL_DIR": str(model_dir), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False", **env}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    app = AppProcess(f"http://127.0.0.1:{port}/")
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"app.py exited with {proc.returncode}:\n{proc.stdout.read()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(app.url + "config", timeout=5).status_code == 200:
                    break
            if time.time() > deadline:
                pytest.fail(f"app.py did not answer on {app.url} within {timeout} s")
            time.sleep(0.5)
        yield app
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        app.output, app.returncode = proc.stdout.read(), proc.returncode


@contextlib.contextmanager
def serve_app(model_dir, timeout=180):
    """Run `python app.py` on a free port; yield its URL once it answers; stop it afterwards."""
    with start_app(model_dir, timeout) as app:
        yield app.url


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    """The library's translator as the app runs it, on the app's default MODEL_DEVICE in its default MODEL_DTYPE."""
    from transformer import Translator
    from serving.device import fast_dtype, pick_device

    return Translator.load(tiny_model_dir, dtype=fast_dtype(pick_device()))


@pytest.fixture(scope="module")
def app_url(tiny_model_dir):
    with serve_app(tiny_model_dir) as url:
        yield url


@pytest.fixture(scope="module")
def client(app_url):
    return connect(app_url)


def test_translates_like_the_library(client, translator):
    italian, status, tokens = client.predict("I see the cat.", api_name="/translate")
    assert italian == translator.translate("I see the cat.") == "io vedo il gatto."
    assert "Translated in" in status and "greedy" in status
    assert "▁cat" in tokens and "▁gatto" in tokens


def test_beam_search_option(client, translator):
    italian, status, _ = client.predict("we love the dog.", "beam", 4, api_name="/translate")
    assert italian == translator.translate("we love the dog.", beam=4)
    assert "beam search (4 beams)" in status


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_input_gets_a_friendly_message(client, text):
    italian, status, tokens = client.predict(text, api_name="/translate")
    assert italian == "" and tokens == ""
    assert "Type an English sentence" in status


def test_html_input_comes_back_as_text(client, translator):
    text = "<script>alert(1)</script> <b>the cat</b>"
    italian, _, tokens = client.predict(text, api_name="/translate")
    assert italian == translator.translate(text)
    assert "<script" not in tokens and "<b>" not in tokens
    assert "&lt;" in tokens  # the "<" pieces are shown, escaped


def test_long_input_is_truncated_with_a_note(client, translator):
    text = "I see the cat. " * 40  # far more than the tiny model's 63 source tokens
    italian, status, _ = client.predict(text, api_name="/translate")
    assert italian == translator.translate(text)
    assert "only the beginning was translated" in status
    assert str(translator.max_source_tokens) in status


@pytest.mark.parametrize("text", ["Ça va? naïve café ☕ 😀", "日本語のテキスト",
                                  "I see\u00a0the cat.\u200b"])
def test_any_unicode_works(client, translator, text):
    italian, status, _ = client.predict(text, api_name="/translate")
    assert italian == translator.translate(text)
    assert "Translated in" in status


def test_input_the_model_cannot_read_is_warned_of_next_to_the_translation(client):
    _, status, _ = client.predict("😀😀 日本語", api_name="/translate")
    assert "Translated in" in status and "Warning:" in status and "never learnt" in status
    _, status, _ = client.predict("I see the cat.", api_name="/translate")
    assert "⚠️" not in status


def test_sixteen_clients_at_once_get_what_single_calls_get(app_url, translator):
    """Decoded together (greedy and beam search, short and long sentences), each answer is the one-by-one answer."""
    english = [en for en, _ in toy_pairs()[:20]]
    sentences = english[:12] + [f"{a} {b}" for a, b in zip(english[12:20:2], english[13:20:2])]
    requests = [(text, "beam" if i % 4 == 0 else "greedy", 2) for i, text in enumerate(sentences)]
    clients = [connect(app_url) for _ in requests]

    def call(i):
        return clients[i].predict(*requests[i], api_name="/translate")[:2]

    with ThreadPoolExecutor(max_workers=16) as pool:
        together = list(pool.map(call, range(16)))
    alone = [call(i) for i in range(16)]  # one at a time: nothing to decode them with
    assert [italian for italian, _ in together] == [italian for italian, _ in alone]
    assert [italian for italian, _ in alone] == [translator.translate(text, beam=2 if decoding == "beam" else 1)
                                                 for text, decoding, _ in requests]
    assert all("Translated in" in status for _, status in together)


FAKE_SPACES = '''
"""Stands in for Hugging Face\'s `spaces` package: on ZeroGPU hardware, spaces.GPU runs each call of what it wraps
with a GPU lent for the call; this one says that it ran."""
import functools


def GPU(fn):
    @functools.wraps(fn)
    def on_gpu(*args, **kwargs):
        print(f"spaces.GPU ran {fn.__name__}", flush=True)
        return fn(*args, **kwargs)

    return on_gpu
'''


def test_on_a_space_with_the_model_in_a_hub_repo(tiny_model_dir, translator, tmp_path):
    """MODEL_DIR a Hub repo id (read offline from the cache), and the model calls go through spaces.GPU."""
    (tmp_path / "spaces").mkdir()
    (tmp_path / "spaces" / "__init__.py").write_text(FAKE_SPACES, encoding="utf-8")
    cache = hub_cache(tmp_path / "hub", tiny_model_dir, "someone/tiny-en-it")
    env = dict(PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               HF_HOME=str(tmp_path / "home"), HF_HUB_CACHE=str(cache))
    with start_app("someone/tiny-en-it", **env) as app:
        italian, status, _ = connect(app.url).predict("we love the dog.", api_name="/translate")
        assert italian == translator.translate("we love the dog.") and "Translated in" in status
        assert "Training curve" in httpx.get(app.url + "config", timeout=10).text  # the model's own loss curve
    assert "spaces.GPU ran run" in app.output


def test_starts_without_a_model_and_says_how_to_train_one(tmp_path):
    """In the page and in the terminal; and, stopped, it leaves no temporary folder for downloads behind."""
    with start_app(tmp_path / "no_model", TMPDIR=str(tmp_path)) as app:
        url = app.url
        page_config = httpx.get(url + "config", timeout=10).text
        assert "No model loaded" in page_config and "python -m training.train" in page_config
        italian, status = connect(url).predict("Hello", api_name="/translate")
        assert italian == "" and "No model loaded" in status
        assert len(list(tmp_path.glob("transformer-app-*"))) == 1  # the downloads folder, while it runs
    assert f"{tmp_path / 'no_model'}: no such model directory" in app.output
    assert app.returncode == 0 and not list(tmp_path.glob("transformer-app-*"))


def test_sampling_through_translate_and_its_own_endpoint(client, translator):
    from transformer import Sampling

    expected = translator.translate("we love the dog.", sampling=Sampling(1.5, 0, 7))
    italian, status, _ = client.predict("we love the dog.", "sampling", 4, 1.5, 0, 7, api_name="/translate")
    assert italian == expected
    assert "sampling (temperature 1.5, seed 7)" in status
    assert client.predict("we love the dog.", 1.5, 0, 7, api_name="/sample") == expected
    assert client.predict("we love the dog.", api_name="/sample") == translator.translate(
        "we love the dog.", sampling=Sampling())
    with pytest.raises(gradio_client.exceptions.AppError, match="temperature"):
        client.predict("we love the dog.", -1.0, 0, 7, api_name="/sample")


def test_ablate_endpoint_switches_heads_off(client, translator):
    from interpretability.ablation import ablated

    heads = ["cross L1 H1", "cross L1 H2", "encoder L1 H2"]
    off = ablated(translator, [("cross", 0, 0), ("cross", 0, 1), ("encoder", 0, 1)])
    assert client.predict("I see the cat.", heads, api_name="/ablate") == off.translate("I see the cat.")
    assert client.predict("I see the cat.", heads, 3, api_name="/ablate") == off.translate("I see the cat.", beam=3)
    assert client.predict("I see the cat.", [], api_name="/ablate") == translator.translate("I see the cat.")
    with pytest.raises(gradio_client.exceptions.AppError, match="beam width must be in 1..8"):
        client.predict("I see the cat.", heads, 50, api_name="/ablate")
    with pytest.raises(gradio_client.exceptions.AppError, match="is not a head"):
        client.predict("I see the cat.", ["cross layer 1"], api_name="/ablate")
    with pytest.raises(gradio_client.exceptions.AppError, match="its cross heads are L1..L1 H1..H2"):
        client.predict("I see the cat.", ["cross L1 H9"], api_name="/ablate")
