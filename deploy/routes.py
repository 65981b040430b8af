"""What of the page's events the outside world reaches: the page's events are private (`make_private`), their inputs
checked beyond what Gradio checks (`check_inputs`), no named route but the API's answers (`PublicRoutesOnly`), no
request body larger than a limit (`BodyLimit`), the page's prepared data sent as it is (`PreparedAnswers`), and every
answer of some size compressed (`compression`: Starlette's GZipMiddleware). A request refused says why in one line
(`Refusal`)."""

import functools
import html
import inspect
import json
import logging
import math
import numbers
import re
from dataclasses import dataclass

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.responses import JSONResponse

from inputs.checks import echo

log = logging.getLogger(__name__)


class Refusal(gr.Error):
    """A request refused, with its one-line reason for the client: logged as that one line (WARNING), never as a
    traceback (Gradio prints one for every other error). Quote what the client sent with `inputs.checks.echo`: its
    "<" and "&" are escaped, since the page renders a message as HTML (a quoted link would be a link)."""

    def __init__(self, message):
        message = html.escape(message, quote=False)
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
    """Each private event of `demo` answers an error its inputs cause in its handler (a TypeError, ValueError,
    LookupError or AttributeError: a value of the wrong shape that the door's checks, `input_refusal`, let through)
    with a one-line `Refusal`, not Gradio's `{"error": null}` and a traceback in the log. Returns how many it
    guards."""
    guarded = 0
    for fn in demo.fns.values():
        if fn.fn is not None and fn.api_visibility != "public":
            fn.fn = _refusing(fn.fn, fn.api_name)
            guarded += 1
    return guarded


def _refusing(fn, name):
    @functools.wraps(fn)  # Gradio reads the signature: __wrapped__ keeps it
    def refusing(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, LookupError, AttributeError) as e:
            raise Refusal(f"{name} cannot use what was sent: {type(e).__name__}: {echo(str(e), 80)}") from e

    return refusing


OFFERED = (gr.Radio, gr.Dropdown, gr.CheckboxGroup, gr.Slider, gr.Number)  # components whose values Gradio checks


def input_refusal(component, value):
    """Why the page's `component` would not take `value`, or None: a number that is not finite (Gradio's bounds let
    NaN through), a list of choices naming one twice (Gradio checks that each is a choice, not how many: thousands of
    copies of one dimension cost seconds of CPU to draw), or a value Gradio itself refuses (not a choice, out of range),
    said here in one line rather than by Gradio with a traceback in the log."""
    label = getattr(component, "label", None) or getattr(component, "elem_id", None) or type(component).__name__
    if not isinstance(component, OFFERED):
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isfinite(value):
        return f"{label}: must be a finite number, got {echo(value)}"
    if isinstance(value, (list, tuple)) and len(set(map(repr, value))) != len(value):
        return f"{label}: each choice at most once, got {len(value)} with repeats"
    try:
        component.preprocess(value)
    except Exception:  # Gradio's words quote the value unescaped, with its type
        return f"{label}: not a value it offers, got {echo(value)}"
    return None


class CallRefused(Exception):
    """A call refused at the door: its HTTP status and its one-line reason."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class EventCall:
    """A call of an event as Gradio will run it, read once at the door (`event_call`): the route it came by (call,
    call/v2, run, api or join), the event's index and its `BlockFunction`, and its arguments in order."""

    route: str
    index: int
    fn: object
    arguments: list


NAMED_ROUTE = re.compile(r"/gradio_api/(call/v2|call|run|api)/([^/]+)/?$")
QUEUE_JOIN = re.compile(r"/gradio_api/queue/join/?$")


def event_call(blocks, path, body):
    """The `EventCall` of a POST to `path` with `body`, None when the route runs no event; a `CallRefused` for a call
    that is not one of the public endpoints (`make_private`) or that Gradio would answer with a bare 500 or
    `{"error": null}`: a body that is not a JSON object (or nested too deep to read), an event index that names no
    event or (on a named route) not the endpoint named, arguments left out or unknown, a direct run (run, api) where the
    queue takes none (`queue(api_open=False)`): refused here, it takes no place at the door. Every route that runs an
    event comes here: named routes run the event their body's fn_index names, if any, and Gradio reads "3" and 3.0 as
    3."""
    named, joins = NAMED_ROUTE.search(path), QUEUE_JOIN.search(path)
    if not (named or joins):
        return None
    sent = read_json(body)
    if joins:
        if not isinstance(sent, dict):
            raise CallRefused(422, f"the request body must be a JSON object, got {echo(body[:20])}")
        index = event_index(sent.get("fn_index"))
        if index not in blocks.fns:
            raise CallRefused(404, f"no event {echo(sent.get('fn_index'))}")
        fn = blocks.fns[index]
        return EventCall("join", index, fn, queued_arguments(index, fn, sent))
    route, name = named.groups()
    public = {fn.api_name: (index, fn) for index, fn in blocks.fns.items() if fn.api_visibility == "public" and fn.fn}
    if name not in public:
        raise CallRefused(404, f"no endpoint named {echo(name)}: the API has {', '.join(sorted(public))}")
    index, fn = public[name]
    if route in ("run", "api") and fn.queue and not blocks.api_open:  # Gradio's 404, said before the door admits it
        raise CallRefused(
            404, f"/{route}/{name} runs nothing outside the queue here: join the queue, POST /gradio_api/call/{name}"
        )
    if route == "call/v2":
        return EventCall(route, index, fn, named_arguments(name, fn, sent))
    if not isinstance(sent, dict):
        raise CallRefused(422, f'/{name} takes a JSON object {{"data": [its arguments]}}, got {echo(body[:20])}')
    if route != "call" and sent.get("fn_index") is not None and event_index(sent["fn_index"]) != index:
        raise CallRefused(404, f"/{route}/{name} runs /{name} only, not event {echo(sent['fn_index'])}")
    return EventCall(route, index, fn, positional_arguments(name, fn, sent))


def read_json(body):
    """The JSON value of a request's body, None for one that is not JSON; a `CallRefused` (400) for one nested too
    deeply for Python to read (json.loads raises RecursionError, which Gradio answered with a bare 500)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise CallRefused(400, "the request body is nested too deeply to read") from None
    except ValueError:
        return None


def event_index(value):
    """An event's index as Gradio reads it from a body (an int, or a string or float that is one); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return value if isinstance(value, int) else None


def queued_arguments(index, fn, sent):
    """The inputs of a page event joining the queue (the page sends them all, by number)."""
    data = sent.get("data")
    if not isinstance(data, list):
        raise CallRefused(
            422, f"event {index} ({fn.api_name}) takes a list of its {len(fn.inputs)} inputs as data, got {echo(data)}"
        )
    if len(data) < len(fn.inputs):
        raise CallRefused(422, f"event {index} ({fn.api_name}) takes {len(fn.inputs)} inputs, got {len(data)}")
    for component, value in zip(fn.inputs, data):
        if refusal := input_refusal(component, value):
            raise CallRefused(422, html.escape(f"event {index} ({fn.api_name}): {refusal}", quote=False))
    return data


def positional_arguments(name, fn, sent):
    """The arguments of a call to /gradio_api/call/NAME ({"data": [arguments in order]})."""
    data = sent.get("data")
    names = fn.input_parameter_names or [f"argument {i + 1}" for i in range(len(fn.inputs))]
    if not isinstance(data, list):
        raise CallRefused(422, f'/{name} takes {{"data": [{", ".join(names)}]}}, got data {echo(data)}')
    if len(data) < len(names):
        raise CallRefused(
            422,
            f"/{name} takes {len(names)} arguments, in order: {', '.join(names)}; got "
            f"{len(data)}. Send them all, or name those you send in a call to "
            f"/gradio_api/call/v2/{name} (the others take their defaults).",
        )
    return data


def named_arguments(name, fn, sent):
    """The arguments, in order, of a call to /gradio_api/call/v2/NAME ({"argument": value, ...}), those left out
    taking their defaults: Gradio answers a bare HTTP 500 to an unknown argument or one left out."""
    parameters = [p for p in inspect.signature(fn.fn).parameters.values() if p.name != "request"]
    takes = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in parameters)
    if not isinstance(sent, dict):
        raise CallRefused(422, f"/{name} takes a JSON object of named arguments ({takes}), got {echo(sent)}")
    unknown = [key for key in sent if key not in {p.name for p in parameters}]
    missing = [p.name for p in parameters if p.default is p.empty and p.name not in sent]
    if unknown:
        raise CallRefused(422, f"/{name} has no argument {echo(unknown[0])}: it takes {takes}")
    if missing:
        raise CallRefused(422, f"/{name} needs {', '.join(missing)}: it takes {takes}")
    return [sent.get(p.name, p.default) for p in parameters]


async def read_event_call(scope, receive, blocks):
    """(the `EventCall` of an ASGI request, or None, and a `receive` that gives its body again), read once per
    request: the middlewares after the first find it in the scope. A `CallRefused` as `event_call`."""
    if "event_call" in scope:
        return scope["event_call"], receive
    if not (
        scope["type"] == "http"
        and scope["method"] == "POST"
        and (NAMED_ROUTE.search(scope["path"]) or QUEUE_JOIN.search(scope["path"]))
    ):
        return None, receive
    body, receive = await read_body(receive)
    scope["event_call"] = event_call(blocks, scope["path"], body)
    return scope["event_call"], receive


class PublicRoutesOnly:
    """ASGI middleware: every route that runs an event (POST /gradio_api/call/NAME, call/v2/NAME, run/NAME, api/NAME,
    queue/join) is read once (`event_call`), and a call that is not of a public endpoint of `blocks` or that Gradio
    would answer with a bare error is refused with its one-line reason. Gradio's api_visibility="private" hides an
    event from the API's description and from gradio_client, but the named routes call it all the same (by name, or
    by the fn_index of their body); the page calls its events through the queue, by number."""

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks

    async def __call__(self, scope, receive, send):
        try:
            _, receive = await read_event_call(scope, receive, self.blocks)
        except CallRefused as refused:
            log.warning("refused: %s", refused.reason)
            return await answer_json(scope, receive, send, refused.status, refused.reason)
        await self.app(scope, receive, send)


class PreparedAnswers:
    """ASGI middleware: a call of a page server function whose answer is bytes the server holds
    (`views.server_function`: the training history and the positional-encoding table, encoded at start; a
    translation's payload, kept until its page fetches it) answered here. Gradio would first open a session for the
    caller, building every component's configuration on its event loop (bench.session_cost measures it): a few
    callers with new session ids held every other request up."""

    ROUTE = re.compile(r"/gradio_api/component_server/?$")

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks

    async def __call__(self, scope, receive, send):
        if not (scope["type"] == "http" and scope["method"] == "POST" and self.ROUTE.search(scope["path"])):
            return await self.app(scope, receive, send)
        body, receive = await read_body(receive)
        try:
            asked = read_json(body)
            block = self.blocks.blocks.get(asked.get("component_id")) if isinstance(asked, dict) else None
            server_function = getattr(block, str(asked.get("fn_name")), None) if block else None
        except (CallRefused, TypeError) as e:  # an id JSON has but a dict cannot hold (a list)
            server_function = e
        if not getattr(server_function, "_is_server_fn", False):
            reason = (
                server_function.reason
                if isinstance(server_function, CallRefused)
                else "component_server takes a JSON object naming a component_id and the fn_name of its server "
                "function: no such function"
            )
            log.warning("refused: %s", reason)
            return await answer_json(scope, receive, send, 404, reason)
        answer = getattr(server_function, "answer", None)
        if answer is None:
            return await self.app(scope, receive, send)  # another server function: Gradio runs it
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


class NoUploads:
    """ASGI middleware: no file comes in, at any size (the app takes none): a POST to Gradio's upload routes
    (/gradio_api/upload, process_recording) or of a multipart body anywhere (component_server reads one too) is
    answered 404 before a byte of it is read. Gradio keeps an upload an hour, and a refused chunked upload left its
    temporary file behind (docs/benchmarks.md, "A hostile visitor")."""

    ROUTE = re.compile(r"/gradio_api/(upload|process_recording)/?$")

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and (
                self.ROUTE.search(scope["path"])
                or dict(scope["headers"]).get(b"content-type", b"").lower().startswith(b"multipart/")
            )
        ):
            return await answer_json(scope, receive, send, 404, "this app takes no files")
        await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request whose body is over `max_bytes` is answered 413 without being read further (by its
    Content-Length when it gives one, else once that many bytes have arrived). Neither Starlette nor Gradio bounds a
    request body (Gradio's `max_file_size` bounds each uploaded file, once it has been read): a body of any size was
    read whole, taking many times its size in memory."""

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
