"""Views drawn in the browser. The translate event writes the translation's payload (`webapp.payload`) into one
component, the `carrier`, whose script puts it in the page's store (`store.js`, key "translation"), which every view
reads; each view is a gr.HTML with its own script (the `.js` beside its tab's module, after `store.js` and
`views.js`), which draws the payload and answers every control in the page, as bertviz pairs `head_view.py` with
`head_view.js`. Why not plotly: Gradio loads plotly.js only with a gr.Plot, a plotly redraw of a 40-token map takes
longer than the 50 ms a click may, and a canvas the page draws is also the PNG the download button saves (the file is
the view on screen)."""

import gzip
from pathlib import Path

import gradio as gr
import orjson
from starlette.responses import Response

from .page_script import STORE_JS

VIEWS_JS = STORE_JS + (Path(__file__).parent / "views.js").read_text(encoding="utf-8")
PUBLISH_JS = """
watch("value", () => store.set({translation: props.value || null}));
if (props.value) store.set({translation: props.value});
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


def prepared_json(name, value):
    """A server function `name` (for `browser_view`'s `server_functions`) that answers `value` as JSON encoded once,
    here: Gradio would encode the returned value again at every call, on its event loop (the training history, 6 MB
    of JSON: 2 s during which the server answers no one). The bytes go gzip-compressed to a client that accepts
    gzip (every browser), as they are to one that does not. `serve.answer(accept_encoding)` is that answer, which
    `events.PreparedAnswers` sends before Gradio sees the call (Gradio would first build a session for it)."""
    plain = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
    compressed = gzip.compress(plain, compresslevel=9, mtime=0)

    def answer(accept_encoding):
        if "gzip" in accept_encoding:
            return Response(compressed, media_type="application/json",
                            headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        return Response(plain, media_type="application/json", headers={"Vary": "Accept-Encoding"})

    def serve(data=None, request: gr.Request = None):  # `data`: the page's arguments (none)
        return answer(request.headers.get("accept-encoding", "") if request is not None else "")

    serve.__name__ = serve.__qualname__ = name  # the page calls it by this name: server.<name>()
    serve.answer = answer
    return serve


def carrier():
    """The component the translate event writes the payload into (drawn as nothing): it puts it in the store."""
    return gr.HTML(None, html_template="", js_on_load=VIEWS_JS + PUBLISH_JS, elem_id="translation-payload",
                   padding=False, container=False)
