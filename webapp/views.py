"""Views drawn in the browser. The translate event writes a reference to the translation's payload
(`webapp.payload`) into one component, the `carrier`, whose module (`translation.js`) puts the payload in the page's
store (`store.js`, key "translation"), which every view reads; each view is a gr.HTML that mounts its tab's module
(the `.js` file beside the tab's Python module, exporting `mount`), which draws the payload and answers every control
in the page, as bertviz pairs `head_view.py` with `head_view.js`. How the modules are served and loaded:
`webapp.page_script`. Why not plotly: Gradio loads plotly.js only with a gr.Plot, a plotly redraw of a 40-token map
takes longer than the 50 ms a click may, and a canvas the page draws is also the PNG the download button saves (the
file is the view on screen).

A view asks the server one way, `ask(name, data)` in its module (views.js), for one of two kinds of question declared
here with the view: `server_functions` (data prepared once or kept encoded, answered at the server's door:
`prepared_json`, `kept_json`) and `questions` (work that runs the model, in the queue: a custom event of the view,
whose handler reads the question with `question` and returns `answer`)."""

import gzip
import json
from pathlib import Path

import gradio as gr
import orjson
from starlette.responses import JSONResponse, Response

from .page_script import MODULES, MOUNT, view_css, view_loader
from .texts import PAYLOAD_MISSING

gr.set_static_paths(MODULES)  # the page's modules, served as they are (these files only)
HERE = Path(__file__).parent


def browser_view(script, elem_id, server_functions=None, questions=(), setup=None):
    """A gr.HTML that mounts the module `script` (a `.js` path: `page_script.view_loader`), styled by its CSS
    (`page_script.view_css`). `server_functions` and `questions`: what the module may `ask` (the module docstring).
    `setup`: what the server knows when the page is built (the model's depths, prose), handed to the module as data
    (`props.setup`)."""
    return gr.HTML(
        html_template=MOUNT,
        css_template=view_css(script),
        js_on_load=view_loader(script, questions),
        server_functions=server_functions,
        elem_id=elem_id,
        apply_default_css=True,
        padding=False,
        setup=setup,
    )


def question(evt, *fields):
    """The `fields` of a view's question (`ask(name, data)` in views.js: `data`, which Gradio hands the handler as the
    event's data, read by name as `gr.EventData` offers it), None for a field not sent; and `asked`, the question's
    number, which its `answer` carries back."""

    def field(name):
        try:
            return getattr(evt, name)
        except (AttributeError, TypeError):  # not sent, or no object sent
            return None

    return {name: field(name) for name in ("asked", *fields)}


def answer(asked, value):
    """What the handler of the `question` `asked` returns into its view's value: `value` (None: nothing to draw),
    with the question's number, so that the page hands it to the question it answers."""
    return {"asked": asked["asked"], "answer": value}


def gzipped_json(value):
    """`value` as JSON (numpy arrays as lists), gzip-compressed: how the page's data is kept and sent."""
    try:
        plain = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # a lone surrogate (a client may send "\ud800"), which UTF-8 cannot hold: written escaped
        plain = json.dumps(value, default=lambda array: array.tolist()).encode("ascii")
    return gzip.compress(plain, compresslevel=6, mtime=0)


def json_answer(compressed, accept_encoding, plain=None):
    """The gzip-compressed JSON `compressed` as an HTTP answer: as it is to a client that accepts gzip (every
    browser), else as `plain` (decompressed here when not given)."""
    if "gzip" in accept_encoding:
        return Response(
            compressed, media_type="application/json", headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        )
    return Response(
        gzip.decompress(compressed) if plain is None else plain,
        media_type="application/json",
        headers={"Vary": "Accept-Encoding"},
    )


def server_function(name, answer):
    """A server function `name` (for `browser_view`'s `server_functions`; the page calls it as server.<name>(data))
    whose answer is `answer(data, accept_encoding)`, an HTTP response. `events.PreparedAnswers` sends that answer
    before Gradio sees the call (Gradio would first build a session for it); Gradio sends it as it is otherwise."""

    def serve(data=None, request: gr.Request = None):
        return answer(data, request.headers.get("accept-encoding", "") if request is not None else "")

    serve.__name__ = serve.__qualname__ = name
    serve.answer = answer
    return serve


def prepared_json(name, value):
    """A server function `name` that answers `value` as JSON encoded once, here, whatever the page passes: Gradio would
    encode the returned value again at every call, on its event loop (the training history, megabytes of JSON: seconds
    during which the server answers no one). At gzip's level 6, as every payload: level 9 saves little of the bytes and
    costs seconds of the app's start (docs/benchmarks.md, "The app's start")."""
    compressed = gzipped_json(value)
    plain = gzip.decompress(compressed)
    return server_function(name, lambda data, accept_encoding: json_answer(compressed, accept_encoding, plain))


def kept_json(name, kept, missing):
    """A server function `name` that answers the gzip-compressed JSON `kept` (a `served.Recent`) holds under the key
    the page passes, or HTTP 404 with the message `missing` (a key never given, or dropped since)."""

    def answer(key, accept_encoding):
        compressed = kept.get(key) if isinstance(key, str) else None
        if compressed is None:
            return JSONResponse({"error": missing}, status_code=404)
        return json_answer(compressed, accept_encoding)

    return server_function(name, answer)


def carrier(payloads):
    """The component the translate event writes a reference to the payload into (`translation.sent_payload`): its
    module (`translation.js`) fetches the payload from `payloads` (`kept_json`: the server function `payload`) and puts
    it in the store. Drawn as nothing, or as PAYLOAD_MISSING when the payload does not come."""
    return gr.HTML(
        None,
        html_template="",
        js_on_load=view_loader(HERE / "translation.js"),
        elem_id="translation-payload",
        padding=False,
        container=False,
        server_functions=[kept_json("payload", payloads, PAYLOAD_MISSING)],
        setup={"missing": PAYLOAD_MISSING},
    )
