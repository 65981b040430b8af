"""The web app as users and API clients meet it: `python app.py` in a subprocess, its API called with gradio_client
and plain HTTP, its page's own events as the browser calls them (through the queue, by number)."""

import json
import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from app_helpers import start_app
from helpers import hub_cache, toy_pairs
from webapp.texts import PAYLOAD_MISSING

gradio_client = pytest.importorskip("gradio_client")


def connect(url):
    """A client with a generous timeout: a loaded CI machine answers slowly, which is not what is tested here."""
    return gradio_client.Client(url, verbose=False, analytics_enabled=False, httpx_kwargs={"timeout": 120})


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    """The library's translator as the app runs it, on the app's default MODEL_DEVICE in its default MODEL_DTYPE."""
    from deploy.settings import serving_dtype
    from modeldir.device import pick_device
    from modeldir.directory import open_model

    return open_model(tiny_model_dir, dtype=serving_dtype(pick_device(), 16)).translator


@pytest.fixture(scope="module")
def app(tiny_model_dir, tmp_path_factory):
    """`python app.py` as on a Space: the tiny model from a Hub repository id (read offline from a Hub cache), the
    model calls wrapped by `spaces.GPU` (a stand-in that says it ran); with a small body limit
    (test_the_app_refuses_uploads_and_large_bodies...); stopped as a service manager stops it: a clean stop, and no
    traceback printed in all the module's tests."""
    root = tmp_path_factory.mktemp("space")
    (root / "spaces").mkdir()
    (root / "spaces" / "__init__.py").write_text(FAKE_SPACES, encoding="utf-8")
    space = dict(
        PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        HF_HUB_OFFLINE="1",
        HF_HOME=str(root / "home"),
        HF_HUB_CACHE=str(hub_cache(root / "hub", tiny_model_dir, HUB_REPO)),
    )
    with start_app(HUB_REPO, MAX_BODY_MB="2", **space) as app:
        yield app
    assert app.returncode == 0 and "Traceback" not in app.output, app.output[-3000:]  # SIGTERM: a clean stop
    assert "spaces.GPU ran run" in app.output  # a batch of light requests, in the GPU call spaces.GPU lends


HUB_REPO = "someone/tiny-en-it"


@pytest.fixture(scope="module")
def app_url(app):
    return app.url


@pytest.fixture(scope="module")
def client(app_url):
    return connect(app_url)


API = {"/translate", "/inspect", "/sample", "/ablate"}


def rest_call(url, name, body):
    """(event, payload) of a REST call: POST /gradio_api/call/NAME with the raw JSON `body` (JSON as Python's json
    module writes it, NaN and Infinity included), then its result stream: ("complete", outputs) or ("error", the
    message); ("http", status, the answer) if the POST itself is refused."""
    response = httpx.post(
        f"{url}gradio_api/call/{name}", content=body, timeout=120, headers={"content-type": "application/json"}
    )
    if response.status_code != 200:
        return "http", response.status_code, response.json()
    event_id = response.json()["event_id"]
    lines = httpx.get(f"{url}gradio_api/call/{name}/{event_id}", timeout=120).text.splitlines()
    event = next(line[6:].strip() for line in lines if line.startswith("event:") and "heartbeat" not in line)
    payload = json.loads(next(line[5:] for line in lines if line.startswith("data:") and line[5:].strip() != "null"))
    return event, payload if event == "complete" else payload["error"]


def page_event(url, text, *settings, session=None):
    """Every output of the page's own translate event (italian, status, chips, the key to its payload), called as the
    browser calls it: by number through the queue, in a session (`session`, else a new one)."""
    config = httpx.get(url + "config", timeout=30).json()
    fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "page_translate")
    session = session or uuid.uuid4().hex
    body = {
        "data": [text, *(settings or ("greedy", 4, 1.0, 0, 0))],
        "fn_index": fn_index,
        "session_hash": session,
        "event_data": None,
        "trigger_id": None,
    }
    httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=30).raise_for_status()
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=120) as stream:
        for line in stream.iter_lines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                assert message["success"], message
                return tuple(message["output"]["data"])
    pytest.fail("the page's translate event did not complete")


def page_translation(url, text, *settings, session=None):
    """What the page's own translate event shows as text (italian, status, chips): `page_event`'s first outputs."""
    return page_event(url, text, *settings, session=session)[:3]


def page_payload(url, key):
    """The payload the page fetches by the key its translate event sent, as the page asks it (the carrier's server
    function `payload`): (HTTP status, the JSON answered)."""
    config = httpx.get(url + "config", timeout=30).json()
    carrier = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "translation-payload")
    answer = httpx.post(
        f"{url}gradio_api/component_server",
        timeout=30,
        json={"component_id": carrier, "fn_name": "payload", "data": key, "session_hash": uuid.uuid4().hex},
    )
    return answer.status_code, answer.json()


def test_translates_like_the_library(client, translator):
    assert (
        client.predict("I see the cat.", api_name="/translate")
        == translator.translate("I see the cat.")
        == ("io vedo il gatto.")
    )


def test_beam_search_option(client, translator):
    assert client.predict("we love the dog.", "beam", 4, api_name="/translate") == translator.translate(
        "we love the dog.", beam=4
    )


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_input_gets_an_empty_translation(client, app_url, text):
    assert client.predict(text, api_name="/translate") == ""
    italian, status, tokens = page_translation(app_url, text)
    assert italian == "" and tokens == "" and "Type an English sentence" in status


def test_the_page_translates_as_before_and_the_api_answers_the_same(client, app_url, translator):
    """The page's event (private: the browser calls it by number) still answers the translation, its status line and
    token chips; the API's /translate answers the same translation for every setting."""
    for text, settings in [
        ("I see the cat.", ("greedy", 4, 1.0, 0, 0)),
        ("we love\nthe dog.", ("beam", 3, 1.0, 0, 0)),
        ("we love the dog.", ("sampling", 4, 1.5, 0, 7)),
        ("I see the cat. " * 40, ()),
    ]:
        italian, status, tokens = page_translation(app_url, text, *settings)
        assert client.predict(text, *settings, api_name="/translate") == italian
        assert "Translated in" in status and "</span>" in tokens
    _, status, tokens = page_translation(app_url, "I see the cat.", "beam", 2, 1.0, 0, 0)
    assert "beam search (2 beams)" in status and "▁cat" in tokens and "▁gatto" in tokens


def test_html_input_comes_back_as_text(client, app_url, translator):
    text = "<script>alert(1)</script> <b>the cat</b>"
    assert client.predict(text, api_name="/translate") == translator.translate(text)
    _, _, tokens = page_translation(app_url, text)
    assert "<script" not in tokens and "<b>" not in tokens
    assert "&lt;" in tokens  # the "<" pieces are shown, escaped


def test_long_input_is_truncated_with_a_note(client, app_url, translator):
    text = "I see the cat. " * 40  # far more than the tiny model's 63 source tokens
    assert client.predict(text, api_name="/translate") == translator.translate(text)
    _, status, _ = page_translation(app_url, text)
    assert "only the beginning was translated" in status and str(translator.max_source_tokens) in status
    answer = client.predict(text, api_name="/inspect")
    assert answer["input"]["truncated"] and answer["translation"] == translator.translate(text)


@pytest.mark.parametrize("text", ["Ça va? naïve café ☕ 😀", "日本語のテキスト", "I see\u00a0the cat.\u200b"])
def test_any_unicode_works(client, translator, text):
    assert client.predict(text, api_name="/translate") == translator.translate(text)


def test_input_the_model_cannot_read_is_warned_of_next_to_the_translation(app_url):
    _, status, _ = page_translation(app_url, "😀😀 日本語")
    assert "Translated in" in status and "Warning:" in status and "never learnt" in status
    _, status, _ = page_translation(app_url, "I see the cat.")
    assert "⚠️" not in status


def test_sixteen_clients_at_once_get_what_single_calls_get(app_url, translator):
    """Decoded together (greedy and beam search, short and long sentences), each answer is the one-by-one answer: the
    library's, sentence by sentence, which a single call gets (test_translates_like_the_library)."""
    english = [en for en, _ in toy_pairs()[:20]]
    sentences = english[:12] + [f"{a} {b}" for a, b in zip(english[12:20:2], english[13:20:2])]
    requests = [(text, "beam" if i % 4 == 0 else "greedy", 2) for i, text in enumerate(sentences)]
    clients = [connect(app_url) for _ in requests]

    def call(i):
        return clients[i].predict(*requests[i], api_name="/translate")

    with ThreadPoolExecutor(max_workers=16) as pool:
        together = list(pool.map(call, range(16)))
    assert together == [
        translator.translate(text, beam=2 if decoding == "beam" else 1) for text, decoding, _ in requests
    ]


def test_only_the_api_is_public(client, app_url):
    """gradio_client lists the API's four endpoints and nothing of the page; the page's events answer no call by
    name (api_visibility="private" alone would leave /gradio_api/call/NAME open)."""
    described = client.view_api(print_info=False, return_format="dict")
    assert set(described["named_endpoints"]) == API and not described["unnamed_endpoints"]
    config = httpx.get(app_url + "config", timeout=30).json()
    page_events = {d["api_name"] for d in config["dependencies"]} - {name[1:] for name in API}
    assert {"page_translate", "switch_heads_off", "attribute", "head_numbers"} <= page_events
    for name in page_events:
        for route in (f"call/{name}", f"call/v2/{name}", f"run/{name}"):
            response = httpx.post(f"{app_url}gradio_api/{route}", json={"data": [[0] * 20_000]}, timeout=30)
            assert response.status_code == 404, (route, response.text)
    assert "the API has ablate, inspect, sample, translate" in response.json()["error"]
    direct = httpx.post(
        f"{app_url}gradio_api/run/translate", json={"data": ["I see.", "greedy", 1, 1.0, 0, 0]}, timeout=30
    )
    assert direct.status_code == 404 and "join the queue" in direct.text  # queue(api_open=False): no run outside it


TEXT = '"I see the cat."'
REST_ERRORS = [
    ("sample", f"[{TEXT}, 1e39, 0, 0]", "temperature must be a number in 0.01..100, got 1e+39"),
    ("sample", f"[{TEXT}, 1e-46, 0, 0]", "temperature must be a number in 0.01..100, got 1e-46"),
    ("sample", f"[{TEXT}, 1.0, Infinity, 0]", "top_k must be a whole number in 0.."),
    ("sample", f"[{TEXT}, 1.0, 0, Infinity]", "seed must be a whole number in 0..9223372036854775807, got inf"),
    ("ablate", f"[{TEXT}, null, 1]", "heads must be a list of head names"),
    ("ablate", f"[{TEXT}, 5, 1]", "heads must be a list of head names"),
    ("ablate", "[5, [], 1]", "text must be a string, got int 5"),
    ("ablate", '[["a"], [], 1]', "text must be a string, got list"),
    ("ablate", "[{}, [], 1]", "text must be a string, got dict"),
    ("ablate", f"[{TEXT}, [], 50]", "beam must be a whole number in 1..8, got 50"),
    (
        "translate",
        f'[{TEXT}, "sampling", 4, 1.0, 0, NaN]',
        "seed must be a whole number in 0..9223372036854775807, got nan",
    ),
    ("translate", f'[{TEXT}, "beam", Infinity, 1.0, 0, 0]', "beam must be a whole number in 1..8, got inf"),
    ("inspect", f'[{TEXT}, "greedy", 4, 1.0, 0, 0, 1000]', "candidates must be a whole number in 1..100, got 1000"),
]


@pytest.mark.parametrize("name, data, message", REST_ERRORS)
def test_every_error_says_what_is_wrong(app_url, name, data, message):
    event, error = rest_call(app_url, name, f'{{"data": {data}}}')
    assert event == "error" and message in error


def test_rest_calls_read_what_json_allows(app_url, translator):
    """A lone UTF-16 surrogate (JSON's "\\ud800", which gradio_client cannot even send) is read as the library reads
    it; a call that leaves arguments out is told which it needs, and /call/v2 takes them by name."""
    assert rest_call(app_url, "ablate", '{"data": ["I see \\ud800 the cat.", [], 1]}') == (
        "complete",
        [translator.translate("I see \ud800 the cat.")],
    )
    assert rest_call(app_url, "translate", '{"data": ["I see the cat."]}') == (
        "http",
        422,
        {
            "error": (
                "/translate takes 6 arguments, in order: text, decoding, beam, temperature, top_k, seed; got 1. "
                "Send them all, or name those you send in a call to /gradio_api/call/v2/translate (the others take "
                "their defaults)."
            )
        },
    )
    response = httpx.post(f"{app_url}gradio_api/call/v2/translate", json={"text": "I see the cat."}, timeout=30)
    event_id = response.json()["event_id"]
    assert (
        translator.translate("I see the cat.")
        in httpx.get(f"{app_url}gradio_api/call/translate/{event_id}", timeout=120).text
    )


def test_the_v2_body_api_md_shows_translates_by_name(app_url, translator):
    """docs/api.md's /call/v2 example, sent as written: the arguments it names are used, the others defaulted."""
    import re
    from pathlib import Path

    api_md = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    body = json.loads(re.search(r"call/v2/translate .*\n\s*-d '(\{.*\})'", api_md).group(1))
    assert set(body) > {"text"} and body["decoding"] == "beam"
    response = httpx.post(f"{app_url}gradio_api/call/v2/translate", json=body, timeout=30)
    stream = httpx.get(f"{app_url}gradio_api/call/translate/{response.json()['event_id']}", timeout=120).text
    data = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:") and "null" not in line]
    assert data[-1] == [translator.translate(body["text"], beam=body["beam"])]


def test_inspect_answers_json(client, translator):
    answer = client.predict("we love the dog.", "greedy", 4, 1.0, 0, 0, 3, api_name="/inspect")
    assert answer["translation"] == translator.translate("we love the dog.")
    assert answer["target_tokens"][0] == "<s>" and answer["source_tokens"][-1] == "</s>"
    cross = answer["attention"]["cross"]  # layers x heads x target x source
    assert (len(cross[0][0]), len(cross[0][0][0])) == (len(answer["target_tokens"]), len(answer["source_tokens"]))
    assert all(len(step) <= 3 for step in answer["candidates"])


def test_the_app_refuses_uploads_and_large_bodies_and_compresses_its_answers(app):
    """The module's app runs with MAX_BODY_MB=2 (the `app` fixture)."""
    small = httpx.post(app.url + "gradio_api/upload", files={"files": ("a.txt", b"x")}, timeout=60)
    assert small.status_code == 404 and "takes no files" in small.text  # NoUploads: the app takes none
    huge = httpx.post(app.url + "gradio_api/call/v2/translate", content=b"x" * 3_000_000, timeout=60)
    assert huge.status_code == 413 and "request body over 2 MB" in huge.text  # BodyLimit, before Gradio reads it
    config = httpx.get(app.url + "config", headers={"Accept-Encoding": "gzip"}, timeout=60)
    assert config.headers.get("content-encoding") == "gzip"
    missing = httpx.post(app.url + "gradio_api/call/v2/translate", json={}, timeout=60)
    assert missing.status_code == 422 and "/translate needs text" in missing.json()["error"]
    unknown = httpx.post(app.url + "gradio_api/call/v2/translate", json={"text": "hi", "txt": "x" * 10_000}, timeout=60)
    assert unknown.status_code == 422 and "has no argument 'txt'" in unknown.json()["error"]
    empty = httpx.post(app.url + "gradio_api/call/v2/translate", content=b"", timeout=60)
    assert empty.status_code == 422 and "takes a JSON object of named arguments" in empty.json()["error"]
    events = httpx.get(app.url + "config", timeout=60).json()["dependencies"]
    page_translate = next(event["id"] for event in events if event["api_name"] == "page_translate")
    short = httpx.post(
        app.url + "gradio_api/queue/join",
        timeout=60,
        json={"data": ["I see the cat."], "fn_index": page_translate, "session_hash": "s", "trigger_id": None},
    )
    assert short.status_code == 422 and short.json()["error"] == (
        f"event {page_translate} (page_translate) takes 6 inputs, got 1"
    )


def test_a_page_session_keeps_a_key_to_its_payload_not_the_payload(app):
    """Gradio keeps each session's last output values until it drops the session (MAX_SESSIONS, 256): the page's
    translate event answers a key (a few bytes), by which the page fetches the payload from a store bounded in bytes
    (PAYLOADS_MB). The payload sent as the output instead stayed as long as its session. 24 sessions, each translating a
    long text of its own, grow this server by at most 15 MB (Gradio's own state of each session, the allocator)."""
    texts = [f"{'I see the cat and the dog. ' * 12}Number {i}." for i in range(28)]
    for text in texts[:4]:
        page_event(app.url, text)
    before = rss_mb(app.pid)
    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(lambda text: page_event(app.url, text), texts[4:]))
    grown = rss_mb(app.pid) - before
    assert all(set(reference) == {"key"} and len(reference["key"]) < 40 for *_, reference in outputs)
    status, payload = page_payload(app.url, outputs[-1][3]["key"])
    assert status == 200 and payload["request"]["text"] == texts[-1] and payload["translation"] == outputs[-1][0]
    assert page_payload(app.url, "not-a-key-it-gave") == (404, {"error": PAYLOAD_MISSING})
    assert grown <= 15, grown


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


FAKE_SPACES = '''
"""Stands in for Hugging Face\'s `spaces` package: on ZeroGPU hardware, spaces.GPU runs each call of what it wraps
with a GPU lent for the call; this one says that it ran."""
import functools


def GPU(fn):
    ran = []

    @functools.wraps(fn)
    def on_gpu(*args, **kwargs):
        if not ran:  # once: the app's output is read when it stops
            print(f"spaces.GPU ran {fn.__name__}", flush=True)
            ran.append(True)
        return fn(*args, **kwargs)

    return on_gpu
'''


def test_on_a_space_with_the_model_in_a_hub_repo(app, translator):
    """MODEL_DIR a Hub repo id (read offline from the cache; the module's app), and the model calls go through
    spaces.GPU (said when the app stops)."""
    assert connect(app.url).predict("we love the dog.", api_name="/translate") == translator.translate(
        "we love the dog."
    )
    assert "Translated in" in page_translation(app.url, "we love the dog.")[1]
    assert "Training curve" in httpx.get(app.url + "config", timeout=10).text  # the model's own loss curve


def test_starts_without_a_model_and_says_how_to_train_one(tmp_path):
    """In the page and in the terminal."""
    with start_app(tmp_path / "no_model") as app:
        url = app.url
        page_config = httpx.get(url + "config", timeout=10).text
        assert "No model loaded" in page_config and "python -m training.train" in page_config
        assert str(tmp_path) not in page_config and "no_model: no such model directory" in page_config
        italian, status = connect(url).predict("Hello", api_name="/translate")
        assert italian == "" and "No model loaded" in status
    assert f"{tmp_path / 'no_model'}: no such model directory" in app.output
    assert app.returncode == 0


def test_sampling_through_translate_and_its_own_endpoint(client, translator):
    from transformer import Sampling

    expected = translator.translate("we love the dog.", sampling=Sampling(1.5, 0, 7))
    assert client.predict("we love the dog.", "sampling", 4, 1.5, 0, 7, api_name="/translate") == expected
    assert client.predict("we love the dog.", 1.5, 0, 7, api_name="/sample") == expected
    assert client.predict("we love the dog.", api_name="/sample") == translator.translate(
        "we love the dog.", sampling=Sampling()
    )
    with pytest.raises(gradio_client.exceptions.AppError, match="temperature"):
        client.predict("we love the dog.", -1.0, 0, 7, api_name="/sample")


def test_ablate_endpoint_switches_heads_off(client, translator):
    from interpretability.ablation import ablated

    heads = ["cross L1 H1", "cross L1 H2", "encoder L1 H2"]
    off = ablated(translator, [("cross", 0, 0), ("cross", 0, 1), ("encoder", 0, 1)])
    assert client.predict("I see the cat.", heads, api_name="/ablate") == off.translate("I see the cat.")
    assert client.predict("I see the cat.", heads, 3, api_name="/ablate") == off.translate("I see the cat.", beam=3)
    assert client.predict("I see the cat.", [], api_name="/ablate") == translator.translate("I see the cat.")
    with pytest.raises(gradio_client.exceptions.AppError, match="beam must be a whole number in 1..8, got 50"):
        client.predict("I see the cat.", heads, 50, api_name="/ablate")
    with pytest.raises(gradio_client.exceptions.AppError, match="is not a head"):
        client.predict("I see the cat.", ["cross layer 1"], api_name="/ablate")
    with pytest.raises(gradio_client.exceptions.AppError, match="its cross heads are L1..L1 H1..H2"):
        client.predict("I see the cat.", ["cross L1 H9"], api_name="/ablate")


def test_the_pages_modules_are_served_as_javascript_and_nothing_beside_them(app_url):
    """webapp.page_script serves the page's `.js` modules as files (the browser imports them), not the Python beside
    them."""
    from webapp.page_script import MODULES, module_url

    for module in MODULES:
        answer = httpx.get(app_url + module_url(module), timeout=60)
        assert answer.status_code == 200 and "javascript" in answer.headers["content-type"], module.name
        assert answer.text == module.read_text(encoding="utf-8")
    beside = MODULES[0].with_name("views.py")
    assert httpx.get(app_url + module_url(beside), timeout=60).status_code == 403
