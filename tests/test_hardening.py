"""The app as a hostile visitor of a public Space meets it (issue 34): page server functions answered from bytes
prepared once, request bodies and uploads bounded, answers compressed, heavy work refused at once when its line is
full and stopped at its budget (attribution's float32 copy too), nothing kept per session, every setting and every
refusal one line. The whole app's limits on uploads and bodies are met in test_app.py (its app runs with small
ones)."""

import contextlib
import json
import math
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import fastapi
import gradio as gr
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from deploy.admission import ARRIVAL_S, HeavyAdmission
from deploy.harden import harden
from deploy.lane import Busy, Lane, check_deadline
from deploy.routes import BodyLimit, CallRefused, PreparedAnswers, Refusal, compression, event_call
from deploy.settings import SettingError, Settings
from inputs.checks import ECHO_CHARACTERS, MAX_BEAM, SERVER_MAX_BEAM, check_sampling, check_whole_number, echo
from inputs.request import Request, parse_request
from interpretability import inspect
from interpretability.attribution import source_attribution
from interpretability.head_details import attention_module, head_attention
from interpretability.inspection import source_ids
from modeldir.device import pick_device
from modeldir.directory import ModelDirectory, open_model
from transformer import Sampling
from webapp import api, translation
from webapp.page_script import module_import
from webapp.payload import request_json
from webapp.served import Recent, ServedModel, inspection_bytes
from webapp.tabs import heads
from webapp.tabs.heads import parse_head_name
from webapp.texts import PAYLOAD_MISSING
from webapp.views import browser_view, prepared_json

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "I see the cat."


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    """The tiny model's translator as the app serves it (`open_model`'s `CheckedTranslator`)."""
    return open_model(tiny_model_dir).translator


def serve(translator, tiny_model_dir, **options):
    return ServedModel(ModelDirectory(translator, tiny_model_dir), tiny_model_dir, **options)


# --- Page server functions: bytes prepared once ----------------------------------------------------------------------


def test_a_page_server_function_answers_json_prepared_once_gzip_to_a_browser():
    history = [{"step": step, "loss": 1 / (step + 1), "probes": ["a"] * 50} for step in range(200)]
    with gr.Blocks() as demo:
        view = browser_view(
            ROOT / "webapp" / "tabs" / "how_it_learned.py", "view", server_functions=[prepared_json("history", history)]
        )
    ask = {"component_id": view._id, "fn_name": "history", "data": [], "session_hash": "s"}
    for middleware in ([], [Middleware(PreparedAnswers, blocks=demo)]):  # through Gradio, then answered before it
        client = TestClient(gr.mount_gradio_app(fastapi.FastAPI(middleware=middleware), demo, path=""))
        browser = client.post("/gradio_api/component_server", json=ask, headers={"Accept-Encoding": "gzip"})
        assert browser.status_code == 200 and browser.headers["content-encoding"] == "gzip"
        assert browser.json() == history  # the client undoes the gzip, as a browser does
        plain = client.post("/gradio_api/component_server", json=ask, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers and plain.json() == history
        assert int(browser.headers["content-length"]) < len(plain.content) / 5
        assert ("s" in demo.state_holder) == (not middleware)  # answered before it, no session was built
        demo.state_holder.session_data.pop("s", None)
    serve_history = view.server_fns[0]
    assert serve_history().body is serve_history().body  # the same bytes every call: nothing encoded per call


# --- Request bodies, uploads, compression ----------------------------------------------------------------------------


async def echo_length(request):
    return JSONResponse({"read": len(await request.body())})


async def events(request):
    async def stream():
        for i in range(3):
            yield f"data: {json.dumps({'msg': 'x' * 2000, 'i': i})}\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


def small_app():
    return Starlette(
        routes=[Route("/echo", echo_length, methods=["POST"]), Route("/events", events)],
        middleware=[Middleware(BodyLimit, max_bytes=1000), compression()],
    )


def test_a_body_over_the_limit_is_refused_unread_with_or_without_its_length():
    client = TestClient(small_app())
    assert client.post("/echo", content=b"x" * 1000).json() == {"read": 1000}
    refused = client.post("/echo", content=b"x" * 5000)
    assert refused.status_code == 413 and "request body over" in refused.json()["error"]
    chunked = client.post("/echo", content=iter([b"x" * 600, b"x" * 600]))  # no Content-Length: counted as read
    assert chunked.status_code == 413


def test_json_and_event_streams_are_compressed():
    client = TestClient(small_app())
    stream = client.get("/events", headers={"Accept-Encoding": "gzip"})
    assert stream.headers["content-encoding"] == "gzip"
    assert [json.loads(line[6:])["i"] for line in stream.text.split("\n") if line.startswith("data: ")] == [0, 1, 2]


# --- Heavy work: admission, budget, shutdown --------------------------------------------------------------------------


def test_a_full_line_of_heavy_work_is_refused_at_once():
    lane, release = Lane(1, max_waiting=2), threading.Event()
    threads = [threading.Thread(target=lane.run, args=(lambda: release.wait(5), 30)) for _ in range(3)]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    assert lane.waiting == 2
    with pytest.raises(Busy, match="2 heavy requests already wait for a turn"):
        lane.run(lambda: pytest.fail("ran beyond the line"), 30)  # refused now, not after its 30 s
    release.set()
    for thread in threads:
        thread.join(5)
    assert lane.run(lambda: "a turn", 1) == "a turn"


def test_the_door_lets_in_no_more_than_the_lane_has_places_for_until_they_come_or_expire():
    lane = Lane(1, max_waiting=2)
    assert [lane.admit(60) for _ in range(4)] == [True, True, True, False]  # a slot and two places in line
    lane.arrived()  # an admitted call comes to its endpoint, and is refused there (a bad argument)
    assert lane.run(lambda: "came", 1) == "came"  # or comes to run: its place is free again once done
    assert lane.admit(60) and not lane.admit(60)
    expiring = Lane(1, max_waiting=0)
    assert expiring.admit(0.05) and not expiring.admit(60)
    time.sleep(0.1)
    assert expiring.admit(60)  # the first never came: its place went back


def test_closing_the_lane_stops_running_work_at_its_next_step_and_refuses_more():
    """Work stopped by the lane closing (SIGTERM) is told the server is shutting down, not that it ran out of time."""
    lane, steps, started = Lane(1), [], threading.Event()

    def work():
        started.set()
        while True:
            check_deadline()  # what each model step does (stop_at_deadline)
            steps.append(1)
            time.sleep(0.01)

    errors = []
    thread = threading.Thread(target=lambda: errors.append(pytest.raises(Busy, lane.run, work, 60)))
    thread.start()
    started.wait(5)
    assert lane.close(5)  # idle once the running work stopped
    thread.join(5)
    assert errors and "shutting down" in str(errors[0].value) and steps
    with pytest.raises(Busy, match="shutting down"):
        lane.run(lambda: None, 60)


def test_light_requests_are_answered_while_heavy_ones_are_refused(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir, heavy_waiting=0)
    release = threading.Event()
    holder = threading.Thread(target=served.heavy, args=(lambda: release.wait(5),))
    holder.start()
    time.sleep(0.05)
    try:
        with pytest.raises(gr.Error, match="The server is busy with heavy requests"):
            served.translate(SENTENCE, beam=2)
        assert served.translate(SENTENCE) == translator.translate(SENTENCE)  # greedy and short: its own lane
    finally:
        release.set()
        holder.join(5)


def test_heavy_api_calls_are_refused_at_the_door_while_the_lane_is_full(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir, heavy_waiting=0)
    with gr.Blocks() as demo:
        api.register(served)
    demo.queue()
    app = fastapi.FastAPI(middleware=[Middleware(HeavyAdmission, served=served, blocks=demo)])
    release = threading.Event()
    holder = threading.Thread(target=served.heavy, args=(lambda: release.wait(10),))
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        holder.start()
        time.sleep(0.05)
        try:
            for route, body in [
                ("call/translate", {"data": [SENTENCE, "beam", 4, 1.0, 0, 0]}),
                ("call/v2/translate", {"text": "word " * 1000}),  # long: heavy whatever the decoding
                ("call/ablate", {"data": [SENTENCE, ["cross L1 H1"], 1]}),
            ]:
                refused = client.post(f"/gradio_api/{route}", json=body)
                assert (
                    refused.status_code == 503 and "The server is busy with heavy requests" in refused.json()["error"]
                )
            greedy = client.post("/gradio_api/call/translate", json={"data": [SENTENCE, "greedy", 4, 1.0, 0, 0]})
            assert greedy.status_code == 200 and "event_id" in greedy.json()  # light: queued as usual
        finally:
            release.set()
            holder.join(10)
        assert (
            client.post("/gradio_api/call/translate", json={"data": [SENTENCE, "beam", 4, 1.0, 0, 0]}).status_code
            == 200
        )


def test_heavy_page_events_are_refused_at_the_door_while_the_lane_is_full(translator, tiny_model_dir):
    """As the API's heavy calls: a page event asking for heavy work (a beam, a long text, heads switched off) that the
    lane has no place for is refused as it joins Gradio's queue, with the busy message the page shows (HTTP 429); a
    short greedy translation joins as usual; one let in gives its place back once it has come through the queue."""
    served = serve(translator, tiny_model_dir, heavy_waiting=0)
    with gr.Blocks() as demo:
        box = translation.build(served, demo)
        heads.build(served, box.text, box.decoding_controls)
    assert api.admit_page_events(demo, served) == 3  # translate (pressed, and on the page's load), heads off
    demo.queue()
    events = {fn.api_name: (index, fn) for index, fn in demo.fns.items()}

    def inputs(name, *first):
        return [*first, *[[] for _ in events[name][1].inputs[len(first) :]]]

    app = fastapi.FastAPI(middleware=[Middleware(HeavyAdmission, served=served, blocks=demo)])
    release = threading.Event()
    holder = threading.Thread(target=served.heavy, args=(lambda: release.wait(10),))
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:

        def join(name, data):
            return client.post(
                "/gradio_api/queue/join",
                json={
                    "data": data,
                    "fn_index": events[name][0],
                    "session_hash": "s",
                    "event_data": None,
                    "trigger_id": None,
                },
            )

        holder.start()
        time.sleep(0.05)
        try:
            for name, data in [
                ("translate", [SENTENCE, "beam", 4, 1.0, 0, 0]),
                ("translate", ["word " * 1000, "greedy", 4, 1.0, 0, 0]),
                ("switch_heads_off", inputs("switch_heads_off", SENTENCE, "greedy", 4, 1.0, 0, 0)),
            ]:
                refused = join(name, data)
                assert (
                    refused.status_code == 429 and "The server is busy with heavy requests" in refused.json()["error"]
                )
            assert join("translate", [SENTENCE, "greedy", 4, 1.0, 0, 0]).status_code == 200
        finally:
            release.set()
            holder.join(10)
    assert served.lane.admit(ARRIVAL_S) and not served.lane.admit(ARRIVAL_S)  # one place: now taken
    events["translate"][1].fn(SENTENCE, "beam", 2, 1.0, 0, 0)  # the event let in comes: its place is free again
    assert served.lane.admit(ARRIVAL_S)


def test_attribution_stops_at_the_budget_in_its_float32_copy(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir, heavy_budget=1e-9)
    inspection = translation.shown_inspection(served, request_json(SENTENCE, 1, None))  # light: no budget
    with pytest.raises(gr.Error, match="needed more than the 1e-09 s each heavy request may take"):
        served.attribute(inspection, "integrated_gradients")


# --- Memory per visitor ----------------------------------------------------------------------------------------------


def test_recent_inspections_stay_under_their_bytes_least_recently_used_first(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir)
    sentences = [f"I see the cat number {i}." for i in range(6)]
    inspections = [served.inspect(text) for text in sentences]
    size = max(map(inspection_bytes, inspections))
    recent = Recent(3 * size, inspection_bytes)
    for text, inspection in zip(sentences, inspections):
        recent.put(text, inspection)
        recent.get(sentences[0])  # kept in use: stays
    assert recent.bytes <= 3 * size and len(recent) <= 3
    assert recent.get(sentences[0]) is inspections[0] and recent.get(sentences[-1]) is inspections[-1]
    assert recent.get(sentences[1]) is None  # the least recently used went first


def test_a_translation_sends_its_page_a_key_and_the_payload_waits_in_a_store_bounded_in_bytes(
    translator, tiny_model_dir
):
    """Gradio keeps each session's last outputs: the translate event's is a key, not the payload, which the page
    fetches (the carrier's server function `payload`, answered before Gradio opens a session) from a store that
    drops the oldest payloads beyond its bytes; a key dropped or never given is a 404 saying what to do."""
    long_text = "I see the cat and the dog. " * 12
    alone = serve(translator, tiny_model_dir)
    translation.translate(alone, long_text, "greedy", 4, 1.0, 0, 0)
    size = alone.payloads.bytes  # one payload, gzip JSON
    served = serve(translator, tiny_model_dir, payloads_bytes=3 * size)
    with gr.Blocks() as demo:
        translation.build(served, demo)
    carrier = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "translation-payload")
    texts = [f"{long_text}Number {i}." for i in range(6)]
    references = [translation.translate(served, text, "greedy", 4, 1.0, 0, 0)[3] for text in texts]
    assert all(len(json.dumps(reference)) < 40 for reference in references)  # what the session keeps
    assert served.payloads.bytes <= 3 * size and len(served.payloads) < 6
    client = TestClient(
        gr.mount_gradio_app(fastapi.FastAPI(middleware=[Middleware(PreparedAnswers, blocks=demo)]), demo, path="")
    )

    def fetch(key):
        ask = {"component_id": carrier._id, "fn_name": "payload", "data": key, "session_hash": "s"}
        return client.post("/gradio_api/component_server", json=ask, headers={"Accept-Encoding": "gzip"})

    latest = fetch(references[-1]["key"])
    assert latest.status_code == 200 and latest.headers["content-encoding"] == "gzip"
    assert latest.json()["request"]["text"] == texts[-1] and latest.json()["source_tokens"]
    for key in (references[0]["key"], "never-given", None):
        missing = fetch(key)
        assert missing.status_code == 404 and missing.json() == {"error": PAYLOAD_MISSING}
    assert "s" not in demo.state_holder  # answered before Gradio: no session built


def test_the_page_keeps_no_state_and_an_experiment_names_its_sentence(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir)
    with gr.Blocks() as demo:
        translation.build(served, demo)
    assert not [block for block in demo.blocks.values() if isinstance(block, gr.State)]
    shown = request_json(SENTENCE, 2, None)  # what an experiment's request carries
    first = translation.shown_inspection(served, shown)
    assert translation.shown_inspection(served, shown) is first  # made again only once forgotten


# --- One line for each wrong thing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"MODEL_DTYPE": "bogus"}, "MODEL_DTYPE must be one of float32, float16, bfloat16, got 'bogus'"),
        ({"BATCH_SIZE": "abc"}, "BATCH_SIZE must be a whole number >= 1, got 'abc'"),
        ({"BATCH_SIZE": "0"}, "BATCH_SIZE must be a whole number >= 1, got '0'"),
        ({"HEAVY_SLOTS": "0"}, "HEAVY_SLOTS must be a whole number >= 1, got '0'"),
        ({"HEAVY_BUDGET_S": "nan"}, "HEAVY_BUDGET_S must be a positive number of seconds, got 'nan'"),
        ({"MAX_BODY_MB": "x" * 1000}, "MAX_BODY_MB must be a whole number >= 1, got 'xxxxxxxxxxxxx"),
        ({"MODEL_DEVICE": "tpu"}, "MODEL_DEVICE: device must be one of cpu, cuda"),
        ({"MAX_SESSIONS": "50"}, "MAX_SESSIONS must be a whole number >= 200, got '50'"),
        ({"DECODE_PROCESS": "yes"}, "DECODE_PROCESS must be 1 or 0, got 'yes'"),
    ],
)
def test_a_wrong_setting_is_one_line_naming_it(environ, message):
    with pytest.raises(SettingError) as error:
        Settings.from_environment(environ)
    assert message in str(error.value) and "\n" not in str(error.value) and len(str(error.value)) < 200


def test_the_settings_default_to_the_documented_limits():
    settings = Settings.from_environment({"MODEL_DEVICE": "cpu"})
    assert (settings.batch_size, settings.heavy_slots, settings.heavy_budget, settings.heavy_waiting) == (16, 1, 30, 4)
    assert (settings.body_mb, settings.sessions, settings.inspections_mb) == (1, 256, 32)
    assert settings.payloads_mb == 8 and Settings.from_environment({"PAYLOADS_MB": "2"}).payloads_mb == 2


@pytest.mark.parametrize(
    "environ, apart",
    [
        ({"MODEL_DEVICE": "cpu"}, True),  # a CPU that batches: the batch's Python beside Gradio's, on another core
        ({"MODEL_DEVICE": "cpu", "BATCH_SIZE": "1"}, False),
        ({"MODEL_DEVICE": "cpu", "SPACES_ZERO_GPU": "true"}, False),  # ZeroGPU lends its GPU to the server's process
        ({"MODEL_DEVICE": "cpu", "DECODE_PROCESS": "0"}, False),
        ({"MODEL_DEVICE": "cpu", "BATCH_SIZE": "1", "DECODE_PROCESS": "1"}, True),
    ],
)
def test_light_batches_are_decoded_apart_on_a_cpu_that_batches(environ, apart):
    settings = Settings.from_environment(environ)
    assert settings.decode_process is apart and settings.serving()["decode_process"] is apart


def test_app_py_with_a_wrong_setting_says_one_line_and_exits_2():
    done = subprocess.run(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env={"BATCH_SIZE": "abc", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "app.py: BATCH_SIZE must be a whole number >= 1, got 'abc'"


def test_head_names_take_ascii_digits_only_and_a_long_one_is_echoed_short(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir)
    with pytest.raises(gr.Error, match="is not a head"):
        api.heads_argument(served, ["cross L١ H١"])
    with pytest.raises(gr.Error) as refused:
        api.heads_argument(served, ["x" * 1_000_000])
    assert len(str(refused.value)) < 300 and parse_head_name("cross L1 H1", {"cross": (2, 2)}) == ("cross", 0, 0)


def test_the_library_refusals_quote_a_long_value_cut_short(translator):
    """What the model directory, the look inside and the input checks refuse, a 1 MB value included, they quote in
    at most ECHO_CHARACTERS (`inputs.checks.echo`): the app's message and its log line stay one short line."""
    huge_text, huge_number = "x" * 1_000_000, 10**1000
    inspection = inspect(translator, SENTENCE)
    refusals = [
        lambda: pick_device(huge_text),
        lambda: open_model("no-such-model", dtype=huge_text),
        lambda: attention_module(translator.model, huge_text, 0),
        lambda: attention_module(translator.model, "cross", huge_number),
        lambda: head_attention(translator.model, "cross", 0, huge_number),
        lambda: source_attribution(translator, inspection, huge_text),
        lambda: source_ids(translator, [huge_text]),
        lambda: check_whole_number("beam", huge_text, 1, 8),
        lambda: check_sampling(Sampling(huge_number, 0, 0)),
    ]
    for refuse in refusals:
        with pytest.raises(ValueError) as refused:
            refuse()
        assert len(str(refused.value)) < 150 and "..." in str(refused.value), str(refused.value)[:200]
    assert echo(huge_text) == repr(huge_text)[: ECHO_CHARACTERS - 3] + "..." and echo("short") == "'short'"
    assert echo(10**5000) == "<int too long to write out>"  # more digits than Python writes out: no error


def test_a_refusal_is_one_log_line_and_no_traceback(caplog):
    with caplog.at_level("WARNING"):
        error = Refusal(f"heads: {echo('x' * 10_000)} is not a head")
    assert error.print_exception is False
    assert [record.getMessage() for record in caplog.records] == [f"refused: {error.message}"]
    assert len(error.message) < 100


def test_a_named_call_missing_an_argument_is_told_what_it_takes(translator, tiny_model_dir):
    served = serve(translator, tiny_model_dir)
    with gr.Blocks() as demo:
        api.register(served)

    def call(body, route="call/v2/ablate"):
        return event_call(demo, f"/gradio_api/{route}", json.dumps(body))

    with pytest.raises(CallRefused, match="/ablate needs heads: it takes text, heads, beam=1"):
        call({"text": "hi"})
    with pytest.raises(CallRefused, match="/ablate takes a JSON object of named arguments"):
        call(["hi"])
    assert call({"text": "hi", "heads": []}).arguments == ["hi", [], 1]
    with pytest.raises(CallRefused, match="/ablate takes 3 arguments, in order: text, heads, beam; got 1"):
        call({"data": ["hi"]}, "call/ablate")


# --- One request type, parsed at the door --------------------------------------------------------------------------


def test_the_page_and_the_api_parse_one_request_type_alike(translator, tiny_model_dir):
    """A sentence and its decoding settings become one `Request` wherever they come in, with the same limits (one
    beam width for a shared server, derived from the library's) and the same words for what is wrong."""
    served = serve(translator, tiny_model_dir)
    sent = ("I see\nthe cat.", "sampling", math.nan, 0.5, 4.0, 2)  # a beam width sampling does not read
    expected = Request("I see the cat.", 1, Sampling(0.5, 4, 2), joined_lines=2)
    assert parse_request(*sent) == translation.page_request(*sent) == api.request_argument(served, *sent) == expected
    assert expected.decoding == "sampling" and parse_request("a", "beam", 3).decoding == "beam"
    assert SERVER_MAX_BEAM == MAX_BEAM // 2
    for refuse in (translation.page_request, lambda *sent: api.request_argument(served, *sent)):
        with pytest.raises(gr.Error, match=f"beam must be a whole number in 1..{SERVER_MAX_BEAM}, got 9"):
            refuse("I see.", "beam", 9, 1.0, 0, 0)


# --- One door for every route (issue 51) ----------------------------------------------------------------------------


@contextlib.contextmanager
def heavy_lane_held(served):
    """The heavy lane's slot taken, until the block ends, by a request that waits for it."""
    release = threading.Event()
    holder = threading.Thread(target=served.heavy, args=(lambda: release.wait(10),))
    holder.start()
    time.sleep(0.05)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


def page_and_api(served):
    """The translation box, the heads tab and the API, hardened as app.py hardens them (`deploy.harden`)."""
    with gr.Blocks() as demo:
        box = translation.build(served, demo)
        heads.build(served, box.text, box.decoding_controls)
        arguments = harden(demo, served, Settings.from_environment({}), public=api.ENDPOINTS)
        api.admit_page_events(demo, served)
        api.register(served)
    demo.queue()
    events = {fn.api_name: index for index, fn in demo.fns.items()}
    return demo, events, fastapi.FastAPI(middleware=arguments["app_kwargs"]["middleware"])


def test_heavy_work_is_admitted_or_refused_at_the_door_by_every_route_and_counted_once(translator, tiny_model_dir):
    """A beam search asked for by name (call, call/v2, run, api) or joining the queue by the public /translate's
    index (an int, or a string Gradio reads as one) meets the same door: refused at once while the lane is full; once
    let in, its place is counted once, when it reaches its handler."""
    served = serve(translator, tiny_model_dir, heavy_waiting=0)
    demo, events, app = page_and_api(served)
    beam = [SENTENCE, "beam", 4, 1.0, 0, 0]
    routes = [
        ("call/translate", {"data": beam}),
        ("call/v2/translate", {"text": SENTENCE, "decoding": "beam"}),
        ("run/translate", {"data": beam}),
        ("api/translate", {"data": beam}),
    ]
    routes += [
        ("queue/join", {"data": beam, "fn_index": index, "session_hash": "s"})
        for index in (events["translate"], str(events["translate"]), float(events["translate"]))
    ]
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        with heavy_lane_held(served):
            for route, body in routes:
                refused = client.post(f"/gradio_api/{route}", json=body)
                assert refused.status_code in (429, 503), (route, refused.text)
                assert "The server is busy with heavy requests" in refused.json()["error"]
        answer = client.post("/gradio_api/run/translate", json={"data": beam})  # let in, run, its place given back
        assert answer.status_code == 200 and answer.json()["data"] == [translator.translate(SENTENCE, beam=4)]
    assert served.lane.admit(ARRIVAL_S) and not served.lane.admit(ARRIVAL_S)  # one place, free again, now taken


def test_a_direct_run_the_queue_takes_none_of_is_refused_before_it_takes_a_place(translator, tiny_model_dir):
    """Where the queue takes no direct runs (app.py's `queue(api_open=False)`), a beam search sent to run/ or api/ is
    refused at the door, one line, before the door lets it in: Gradio would refuse it after, and the place it held
    would stay taken for the seconds an admitted call has to arrive (300 of them kept every heavy call out)."""
    served = serve(translator, tiny_model_dir, heavy_waiting=0)
    demo, _, app = page_and_api(served)
    demo.queue(api_open=False)
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        for route in ("run/translate", "api/translate"):
            refused = client.post(f"/gradio_api/{route}", json={"data": [SENTENCE, "beam", 4, 1.0, 0, 0]})
            assert refused.status_code == 404 and "join the queue" in refused.json()["error"], refused.text
    assert served.lane.admit(ARRIVAL_S)  # its one place is still free


def test_private_events_are_not_run_by_index_on_a_named_route(translator, tiny_model_dir):
    """The named routes run their endpoint only: a body's fn_index naming a page event is refused (Gradio would run
    that event, outside the queue), and so is an index that names no event. (The app's queue takes no direct runs at
    all, `api_open=False`: test_app.py.)"""
    served = serve(translator, tiny_model_dir)
    demo, events, app = page_and_api(served)
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        for route in ("run/translate", "api/sample"):
            for index in (events["page_translate"], str(events["switch_heads_off"]), 9999, -1):
                refused = client.post(f"/gradio_api/{route}", json={"data": [SENTENCE], "fn_index": index})
                assert refused.status_code == 404 and "only, not event" in refused.json()["error"], refused.text
        for index in (9999, -1, "x", None):
            refused = client.post("/gradio_api/queue/join", json={"data": [], "fn_index": index, "session_hash": "s"})
            assert refused.status_code == 404 and refused.json()["error"].startswith("no event"), refused.text


# --- Nothing from the address rendered on the page (issue 51) -------------------------------------------------------


LINK = '<a href="https://evil.example/login" style="font-size:40px">Session expired: sign in again</a>'


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_urls_settings_reach_the_controls_only_as_values_they_offer():
    """The page's load reads the sentence and settings from the address (`translation.FROM_URL`, which calls
    translation.js's `fromUrl` with the choices and ranges the controls offer): a decoding that is not a choice, or a
    number out of its control's range, leaves the control as it is, so Gradio never answers with a message quoting it
    (which the page would render as HTML). The event's own script is run, its module imported from the file."""
    defaults = ["I love reading books.", "greedy", 4, 1.0, 0, 0]
    from_file = translation.FROM_URL.replace(
        module_import(translation.SCRIPT), f"import({json.dumps(translation.SCRIPT.resolve().as_uri())})"
    )
    assert from_file != translation.FROM_URL
    script = (
        f"const fromUrl = {from_file};"
        "(async () => { for (const search of JSON.parse(process.argv[1])) { globalThis.location = {search}; "
        f"console.log(JSON.stringify(await fromUrl(...{json.dumps(defaults)}))); }} }})();"
    )
    searches = [
        "?" + urllib.parse.urlencode({"decoding": LINK}),
        "?beam=99&temperature=-1&top_k=2.5&seed=-3",
        "?text=%3Cb%3Ehi%3C%2Fb%3E&decoding=beam&beam=8&temperature=0.5&top_k=50&seed=7",
    ]
    answers = subprocess.run(
        ["node", "-e", script, json.dumps(searches)], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert [json.loads(answer) for answer in answers] == [defaults, defaults, ["<b>hi</b>", "beam", 8, 0.5, 50, 7]]


def test_a_refusal_quoting_html_shows_it_as_text(caplog):
    """A refusal quotes what was sent; the page renders a message as HTML, so its tags are escaped."""
    with pytest.raises(gr.Error) as refused:
        translation.page_request("I see.", LINK, 4, 1.0, 0, 0)
    assert "<a" not in refused.value.message and "&lt;a href=" in refused.value.message


# --- No uploads (issue 51) ------------------------------------------------------------------------------------------


def test_no_file_comes_in_at_any_size_and_none_is_left_on_disk(translator, tiny_model_dir, tmp_path, monkeypatch):
    """The app takes no files: every upload (Gradio's upload route, a multipart body to a server function, a
    chunked one) is refused before it is read, so none waits on disk for Gradio's hourly cleanup."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    served = serve(translator, tiny_model_dir)
    demo, _, app = page_and_api(served)

    def chunks():
        yield b'--x\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n\r\n'
        yield b"x" * 500_000

    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        for size in (0, 1, 900_000):
            refused = client.post("/gradio_api/upload", files={"files": ("a.txt", b"x" * size)})
            assert refused.status_code == 404 and refused.json() == {"error": "this app takes no files"}
        refused = client.post("/gradio_api/component_server", files={"data": ("a.txt", b"x")})
        assert refused.status_code == 404
        refused = client.post(
            "/gradio_api/upload", content=chunks(), headers={"content-type": "multipart/form-data; boundary=x"}
        )
        assert refused.status_code == 404
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]


# --- Malformed bodies and events: 4xx and one line (issue 51) -------------------------------------------------------


def test_a_malformed_body_or_event_gets_a_4xx_and_one_line(translator, tiny_model_dir, caplog):
    """A body nested 100,000 deep (RecursionError in json.loads: a bare 500 before), a value the page's control does
    not offer (Gradio refused it with a traceback in the log and its words, HTML included, in a toast), an unknown
    component: each a 4xx with one line. A handler meeting a value of the wrong shape refuses it in one line."""
    served = serve(translator, tiny_model_dir)
    demo, events, app = page_and_api(served)
    nested = "[" * 100_000 + "]" * 100_000
    with TestClient(gr.mount_gradio_app(app, demo, path="")) as client:
        for route, body in [
            ("call/translate", '{"data": ' + nested + "}"),
            ("call/v2/translate", nested),
            ("queue/join", '{"fn_index": 0, "data": ' + nested + "}"),
            ("component_server", '{"data": ' + nested + "}"),
        ]:
            refused = client.post(f"/gradio_api/{route}", content=body, headers={"content-type": "application/json"})
            assert 400 <= refused.status_code < 500 and "\n" not in refused.json()["error"], (route, refused.text)
        join = {"data": [SENTENCE, LINK, 4, 1.0, 0, 0], "fn_index": events["page_translate"], "session_hash": "s"}
        refused = client.post("/gradio_api/queue/join", json=join)
        assert refused.status_code == 422 and "Decoding: not a value it offers" in refused.json()["error"]
        assert "<a" not in refused.json()["error"]
        refused = client.post(
            "/gradio_api/component_server",
            json={"component_id": 10**6, "fn_name": "payload", "session_hash": "s", "data": None},
        )
        assert refused.status_code == 404 and "no such function" in refused.json()["error"]
    controls_for = next(fn.fn for fn in demo.fns.values() if fn.api_name == "decoding_controls_for")
    with pytest.raises(gr.Error) as wrong_shape:
        controls_for(None)
    assert wrong_shape.value.print_exception is False
    assert wrong_shape.value.message.startswith("decoding_controls_for cannot use what was sent: KeyError")
    assert all(record.exc_info is None for record in caplog.records)


# --- The GPU path, prepared (issue 51) ------------------------------------------------------------------------------


def test_the_gpu_check_runs_its_steps_on_the_cpu_with_dry_run(tiny_model_dir, toy_corpus, tmp_path):
    """bench.gpu_check, which measures the GPU path on a lent GPU, runs every step on the CPU with --dry-run: the app
    started, its translations compared with the CPU's, latencies, throughput, the trainer; its JSON says it is a dry
    run."""
    out = tmp_path / "gpu_check.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.gpu_check",
            "--dry-run",
            "--model",
            str(tiny_model_dir),
            "--data",
            str(toy_corpus[1]),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["dry_run"] is True and result["device"] == "cpu"
    assert result["agreement"] == {"sentences": 6, "equal": 6, "near_tie": 0, "different": 0}  # float32 both sides
    assert result["greedy_p50_ms"] > 0 and result["beam4_p50_ms"] > 0
    assert [row["clients"] for row in result["throughput"]] == [1, 16]
    assert result["trainer"]["target_tokens_per_s"] > 0 and 0 < result["trainer"]["share_of_bf16_peak"]
