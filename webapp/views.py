"""Views drawn in the browser. The translate event writes the translation's payload (`webapp.payload`) into one
component, the `carrier`, whose script puts it in the page's store (`store.js`, key "translation"), which every view
reads; each view is a gr.HTML with its own script (the `.js` beside its tab's module, after `store.js` and
`views.js`), which draws the payload and answers every control in the page, as bertviz pairs `head_view.py` with
`head_view.js`. Why not plotly: Gradio loads plotly.js only with a gr.Plot, a plotly redraw of a 40-token map takes
longer than the 50 ms a click may, and a canvas the page draws is also the PNG the download button saves (the file is
the view on screen)."""

import gzip
import json
from pathlib import Path

import gradio as gr
import orjson
from starlette.responses import JSONResponse, Response

from .page_script import STORE_JS
from .texts import PAYLOAD_MISSING

VIEWS_JS = STORE_JS + (Path(__file__).parent / "views.js").read_text(encoding="utf-8")
# The carrier's script: each reference the translate event writes ({key}, or null) fetched as the payload and put in
# the store; the latest reference wins over a fetch still under way. A payload that does not come: the message, and
# no translation in the store (every view says there is none), rather than the views of another sentence.
PUBLISH_JS = """
let asked = 0;
const publish = async (reference) => {
  const mine = ++asked;
  const payload = reference?.key ? await server.payload(reference.key) : null;
  if (mine !== asked) return;
  const missing = Boolean(reference?.key) && !payload?.source_tokens;
  element.replaceChildren(...(missing ? [Object.assign(document.createElement("p"), {
    className: "payload-missing", role: "alert", textContent: props.setup.missing})] : []));
  store.set({translation: missing ? null : payload});
};
watch("value", () => publish(props.value));
if (props.value) publish(props.value);
"""


# What Gradio renders of a view: an empty mount, into which the view's script draws its own markup (each view's
# markup lives in its `.js`, none in Python strings, so no Gradio template rule applies to it).
MOUNT = '<div class="view-mount"></div>'


def view_script(module_file, shared_scripts=()):
    """The script of a view: the store and `views.js`, then `shared_scripts` (code several views use, e.g. the step
    panel), then the `.js` file named as the view's module."""
    own = Path(module_file).with_suffix(".js").read_text(encoding="utf-8")
    return "\n".join([VIEWS_JS, *shared_scripts, own])


def view_css(module_file, shared_css=()):
    """The CSS of a view: `shared_css` (e.g. the step panel's), then the `.css` file named as the view's module (none:
    nothing)."""
    own = Path(module_file).with_suffix(".css")
    return "\n".join([*shared_css, own.read_text(encoding="utf-8") if own.exists() else ""])


def browser_view(module_file, elem_id, html_template=MOUNT, css_template=None, server_functions=None,
                 shared_scripts=(), setup=None):
    """A gr.HTML drawn by the script beside `module_file` (`view_script`), answering in the page, styled by the
    `.css` beside it (`view_css`, unless `css_template` is given). `setup`: what the server knows when the page is
    built (the model's depths, prose), handed to the script as data (`props.setup`)."""
    return gr.HTML(html_template=html_template, css_template=view_css(module_file) if css_template is None
                   else css_template, js_on_load=view_script(module_file, shared_scripts),
                   server_functions=server_functions, elem_id=elem_id, apply_default_css=True, padding=False,
                   setup=setup)


def gzipped_json(value, compresslevel=6):
    """`value` as JSON (numpy arrays as lists), gzip-compressed: how the page's data is kept and sent."""
    try:
        plain = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # a lone surrogate (a client may send "\ud800"), which UTF-8 cannot hold: written escaped
        plain = json.dumps(value, default=lambda array: array.tolist()).encode("ascii")
    return gzip.compress(plain, compresslevel=compresslevel, mtime=0)


def json_answer(compressed, accept_encoding, plain=None):
    """The gzip-compressed JSON `compressed` as an HTTP answer: as it is to a client that accepts gzip (every
    browser), else as `plain` (decompressed here when not given)."""
    if "gzip" in accept_encoding:
        return Response(compressed, media_type="application/json",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(gzip.decompress(compressed) if plain is None else plain, media_type="application/json",
                    headers={"Vary": "Accept-Encoding"})


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
    """A server function `name` that answers `value` as JSON encoded once, here, whatever the page passes: Gradio
    would encode the returned value again at every call, on its event loop (the training history, 6 MB of JSON: 2 s
    during which the server answers no one)."""
    compressed = gzipped_json(value, compresslevel=9)
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
    script fetches the payload from `payloads` (`kept_json`: the server function `payload`) and puts it in the
    store. Drawn as nothing, or as PAYLOAD_MISSING when the payload does not come."""
    return gr.HTML(None, html_template="", js_on_load=VIEWS_JS + PUBLISH_JS, elem_id="translation-payload",
                   padding=False, container=False, server_functions=[kept_json("payload", payloads, PAYLOAD_MISSING)],
                   setup={"missing": PAYLOAD_MISSING})
