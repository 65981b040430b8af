"""What of the page's events the outside world reaches: the page's events are private (`make_private`), their inputs
checked beyond what Gradio checks (`check_inputs`), no named route but the API's answers (`PublicRoutesOnly`), no
request body larger than a limit (`BodyLimit`), the page's prepared data sent as it is (`PreparedAnswers`), and every
answer of some size compressed (`compression`: Starlette's GZipMiddleware). A request refused says why in one line
(`Refusal`)."""

import functools
import inspect
import json
import logging
import math
import numbers
import re

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.responses import JSONResponse

from inputs.checks import echo

log = logging.getLogger(__name__)


class Refusal(gr.Error):
    """A request refused, with its one-line reason for the client: logged as that one line (WARNING), never as a
    traceback (Gradio prints one for every other error). Quote what the client sent with `inputs.checks.echo`."""

    def __init__(self, message):
        super().__init__(message, print_exception=False)
        log.warning("refused: %s", message)


def make_private(demo, reserved=()):
    """Every event registered on `demo` so far private (not in the API, nor callable by name: `PublicRoutesOnly`),
    whatever its module said, and none named as an endpoint of `reserved` (the API's names: the page's own translate
    event becomes "page_translate"). Call it once the page is built, before the API's endpoints are added. Returns
    the events it made private that were not already."""
    names = {fn.api_name for fn in demo.fns.values()}
    changed = []
    for fn in demo.fns.values():
        if fn.api_visibility != "private":
            changed.append(fn.api_name)
            fn.api_visibility = "private"
        if fn.api_name in reserved:
            name = f"page_{fn.api_name}"
            while name in names:
                name += "_"
            names.add(name)
            fn.api_name = name
    return changed


def check_inputs(demo):
    """Each private event of `demo` refuses what its page never sends, before its handler runs: a number that is not
    finite (Gradio's bounds let NaN through), and a list of choices naming one twice (Gradio checks that each is a
    choice, not how many: 20,000 copies of one dimension cost 14 s of CPU to draw). Returns how many it guards."""
    guarded = 0
    for fn in demo.fns.values():
        checks = [_check_for(component) for component in fn.inputs]
        if fn.fn is None or fn.api_visibility == "public" or not any(checks) or _has_special_arguments(fn.fn):
            continue
        fn.fn = _checked(fn.fn, checks)
        guarded += 1
    return guarded


def _check_for(component):
    label = getattr(component, "label", None) or getattr(component, "elem_id", None) or type(component).__name__
    if isinstance(component, (gr.Number, gr.Slider)):
        return functools.partial(_finite, label)
    if isinstance(component, gr.CheckboxGroup) or (isinstance(component, gr.Dropdown) and component.multiselect):
        return functools.partial(_each_once, label)
    return None


def _finite(label, value):
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isfinite(value):
        raise Refusal(f"{label}: must be a finite number, got {echo(value)}")


def _each_once(label, value):
    if isinstance(value, (list, tuple)) and len(set(map(repr, value))) != len(value):
        raise Refusal(f"{label}: each choice at most once, got {len(value)} with repeats")


def _has_special_arguments(fn):
    """Whether Gradio fills some argument of `fn` itself (a gr.Request, event data, progress): then the inputs do
    not line up with the arguments one to one, and `_checked` would check the wrong ones."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    special = (gr.Request, gr.EventData, gr.Progress)
    return any(isinstance(p.default, gr.Progress)
               or (isinstance(p.annotation, type) and issubclass(p.annotation, special))
               or (isinstance(p.annotation, str) and re.search(r"Request|Data|Progress", p.annotation))
               for p in parameters)


def _checked(fn, checks):
    @functools.wraps(fn)  # Gradio reads the signature: __wrapped__ keeps it
    def checked(*args):
        for check, value in zip(checks, args):
            if check is not None:
                check(value)
        return fn(*args)

    return checked


class PublicRoutesOnly:
    """ASGI middleware: the routes that call an event by name (POST /gradio_api/call/NAME, call/v2/NAME, run/NAME,
    api/NAME) answer for the public endpoints of `blocks` only, 404 otherwise. Gradio's api_visibility="private"
    hides an event from the API's description and from gradio_client, but these routes call it all the same; the
    page calls its events through the queue (/gradio_api/queue/join), by number. A call that leaves arguments out,
    or names one the endpoint lacks, is told what the endpoint takes: Gradio answers a bare HTTP 500 on
    /gradio_api/call/v2/NAME, a bare "error" on /gradio_api/call/NAME, and `{"error": null}` to a queued event sent
    fewer inputs than it has (its message hidden, as every unexpected error's is, by launch's show_error=False)."""

    ROUTE = re.compile(r"/gradio_api/(call/v2|call|run|api)/([^/]+)/?$")
    QUEUE = re.compile(r"/gradio_api/queue/join/?$")

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks

    def public(self):
        """{name: the event} of the public endpoints."""
        return {fn.api_name: fn for fn in self.blocks.fns.values() if fn.api_visibility == "public" and fn.fn}

    async def __call__(self, scope, receive, send):
        post = scope["type"] == "http" and scope["method"] == "POST"
        if post and self.QUEUE.search(scope["path"]):
            return await self.queued(scope, receive, send)
        route = post and self.ROUTE.search(scope["path"])
        if not route:
            return await self.app(scope, receive, send)
        kind, name = route.groups()
        public = self.public()
        if name not in public:
            return await answer_json(scope, receive, send, 404, f"no endpoint named {echo(name)}: the API has "
                                                            f"{', '.join(sorted(public))}")
        if kind not in ("call", "call/v2"):
            return await self.app(scope, receive, send)
        body, receive = await read_body(receive)
        try:
            sent = json.loads(body)
        except ValueError:
            sent = None
        wrong = (self.wrong_positional if kind == "call" else self.wrong_named)(name, public[name], sent)
        if wrong:
            return await answer_json(scope, receive, send, 422, wrong)
        await self.app(scope, receive, send)

    async def queued(self, scope, receive, send):
        """A queued event (the page's, by number) sent fewer inputs than it has: refused, saying how many it takes."""
        body, receive = await read_body(receive)
        try:
            sent = json.loads(body)
            fn = self.blocks.fns.get(sent.get("fn_index"))
        except (ValueError, AttributeError, TypeError):
            return await self.app(scope, receive, send)  # Gradio says what is wrong with it
        data = sent.get("data")
        if fn is not None and isinstance(data, list) and len(data) < len(fn.inputs):
            return await answer_json(scope, receive, send, 422, f"event {sent['fn_index']} ({fn.api_name}) takes "
                                                            f"{len(fn.inputs)} inputs, got {len(data)}")
        await self.app(scope, receive, send)

    @staticmethod
    def wrong_positional(name, fn, sent):
        """What is wrong with the body of a call to /gradio_api/call/NAME ({"data": [arguments in order]}), or None
        (a body Gradio itself explains)."""
        data = sent.get("data") if isinstance(sent, dict) else None
        names = fn.input_parameter_names or [f"argument {i + 1}" for i in range(len(fn.inputs))]
        if isinstance(data, list) and len(data) < len(names):
            return (f"/{name} takes {len(names)} arguments, in order: {', '.join(names)}; got {len(data)}. Send them "
                    f"all, or name those you send in a call to /gradio_api/call/v2/{name} (the others take their "
                    "defaults).")
        return None

    @staticmethod
    def wrong_named(name, fn, sent):
        """What is wrong with the body of a call to /gradio_api/call/v2/NAME ({"argument": value, ...}), or None:
        Gradio answers a bare HTTP 500 to a body that is not an object, an unknown argument or one left out."""
        parameters = [p for p in inspect.signature(fn.fn).parameters.values() if p.name != "request"]
        takes = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in parameters)
        if not isinstance(sent, dict):
            return f"/{name} takes a JSON object of named arguments ({takes}), got {echo(sent)}"
        unknown = [key for key in sent if key not in {p.name for p in parameters}]
        missing = [p.name for p in parameters if p.default is p.empty and p.name not in sent]
        if unknown:
            return f"/{name} has no argument {echo(unknown[0])}: it takes {takes}"
        if missing:
            return f"/{name} needs {', '.join(missing)}: it takes {takes}"
        return None


class PreparedAnswers:
    """ASGI middleware: a call of a page server function whose answer is bytes the server holds
    (`views.server_function`: the training history and the positional-encoding table, encoded at start; a
    translation's payload, kept until its page fetches it) answered here. Gradio would first open a session for the
    caller, building every component's configuration on its event loop (54 ms each on a loaded 2-core machine): 16
    callers with new session ids held every other request up for over a second."""

    ROUTE = re.compile(r"/gradio_api/component_server/?$")

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks

    async def __call__(self, scope, receive, send):
        if not (scope["type"] == "http" and scope["method"] == "POST" and self.ROUTE.search(scope["path"])):
            return await self.app(scope, receive, send)
        body, receive = await read_body(receive)
        try:
            asked = json.loads(body)
            block = self.blocks.blocks.get(asked.get("component_id"))
            answer = getattr(getattr(block, str(asked.get("fn_name")), None), "answer", None)
        except (ValueError, AttributeError, TypeError):
            answer = None
        if answer is None:
            return await self.app(scope, receive, send)  # another server function, or Gradio says what is wrong
        accepted = dict(scope["headers"]).get(b"accept-encoding", b"").decode("latin-1")
        await answer(asked.get("data"), accepted)(scope, receive, send)


async def answer_json(scope, receive, send, status, error):
    """Answer an ASGI request from a middleware: {"error": `error`} with HTTP `status`."""
    await JSONResponse({"error": error}, status_code=status)(scope, receive, send)


async def read_body(receive):
    """(the request's body, a `receive` that gives it again, then whatever comes next)."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"", lambda: _return(message)
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body, replayed = b"".join(chunks), False

    async def again():
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, again


async def _return(message):
    return message


class BodyLimit:
    """ASGI middleware: a request whose body is over `max_bytes` is answered 413 without being read further (by its
    Content-Length when it gives one, else once that many bytes have arrived). Neither Starlette nor Gradio bounds a
    request body (Gradio's `max_file_size` bounds each uploaded file, once it has been read): a 150 MB body was read
    whole, 1.9 GB at its peak."""

    def __init__(self, app, max_bytes):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await self.refuse(scope, receive, send)
        received, started, over = 0, False, False

        async def counted_receive():
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    return {"type": "http.disconnect"}  # the app stops reading, as if the client had gone
            return message

        async def watched_send(message):
            nonlocal started
            if over and not started:
                return  # the app's answer to a body it did not get whole: ours goes instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            await self.refuse(scope, receive, send)

    async def refuse(self, scope, receive, send):
        megabytes = self.max_bytes / (1024 * 1024)
        await answer_json(scope, receive, send, 413, f"request body over {megabytes:g} MB: this server takes no more")


def compression():
    """Starlette's GZipMiddleware for every answer of 1 kB or more, the queue's event streams included (the page's
    translation payload arrives in one; Starlette leaves streams out by default, and flushes each message when it
    does compress one), at level 6: most of level 9's gain for a fraction of its CPU."""
    streams_too = tuple(kind for kind in DEFAULT_EXCLUDED_CONTENT_TYPES if kind != "text/event-stream")
    return Middleware(GZipMiddleware, minimum_size=1000, compresslevel=6, exclude_content_types=streams_too)
