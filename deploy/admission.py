"""Heavy work admitted or refused at the door: a request whose event carries a `ticket` saying it asks for heavy work
(`admitted`) gets a place in the heavy lane (`deploy.lane.Lane.admit`) before it joins Gradio's queue, or is refused
there at once (`HeavyAdmission`), and gives the place back to the lane when it reaches its handler."""

import functools
import inspect
import json
import re

from .routes import answer_json, read_body

ARRIVAL_S = 5.0  # a call let in at the door is expected at its handler within this (Gradio's queue, a loaded machine)


def admitted(fn, lane, ticket):
    """`fn` carrying `ticket` (its arguments -> whether they ask for heavy work), which `HeavyAdmission` asks at the
    door; once called, a heavy call's place in `lane` is counted by the lane's `run` (`Lane.arrived`)."""

    @functools.wraps(fn)  # Gradio reads the signature: __wrapped__ keeps it
    def arriving(*args, **kwargs):
        if ticket(*args):
            lane.arrived()
        return fn(*args, **kwargs)

    arriving.ticket = ticket
    return arriving


class HeavyAdmission:
    """ASGI middleware: a call of heavy work for which the heavy lane has no place (`Lane.admit`: its slots, its line
    and the calls let in before it, not arrived yet) is refused at once, before it becomes an event in Gradio's queue:
    an API call by name with HTTP 503 and the busy message, a page event joining the queue with HTTP 429 and the busy
    message, which the page shows (Gradio's page shows its own words for a 503). Heavy: an event of `blocks` whose
    function carries a `ticket` (`admitted`) that says so of the call's arguments. In the queue, a burst of them would
    go first, in order of arrival, each opening a session on the event loop before the lane refuses it: 100 of them
    held up the greedy request that came next for 10 s. `served`: its `lane` and its `busy_message`."""

    ROUTE = re.compile(r"/gradio_api/(call/v2|call)/([^/]+)/?$")
    JOIN = re.compile(r"/gradio_api/queue/join/?$")

    def __init__(self, app, served, blocks):
        self.app, self.served, self.blocks = app, served, blocks

    async def __call__(self, scope, receive, send):
        posted = scope["type"] == "http" and scope["method"] == "POST"
        route = posted and self.ROUTE.search(scope["path"])
        joins = posted and self.JOIN.search(scope["path"])
        if not (route or joins):
            return await self.app(scope, receive, send)
        body, receive = await read_body(receive)
        heavy = self.heavy_call(*route.groups(), body) if route else self.heavy_page_event(body)
        if heavy and not self.served.lane.admit(ARRIVAL_S):
            status = 503 if route else 429
            return await answer_json(scope, receive, send, status, self.served.busy_message("the heavy lane is full"))
        await self.app(scope, receive, send)

    def heavy_call(self, kind, name, body):
        """Whether a call by name asks for heavy work: its data in order (/call) or by name (/call/v2); what it gets
        wrong, the endpoint says."""
        fn = next((fn.fn for fn in self.blocks.fns.values() if fn.api_name == name and fn.fn), None)
        ticket = getattr(fn, "ticket", None)
        if ticket is None:
            return False
        try:
            sent = json.loads(body)
            if kind == "call":
                return ticket(*sent["data"])
            bound = inspect.signature(fn).bind_partial(**sent)
            bound.apply_defaults()
            return ticket(*bound.args)
        except (ValueError, TypeError, KeyError):
            return False

    def heavy_page_event(self, body):
        """Whether a page event joining the queue asks for heavy work (its `ticket`)."""
        try:
            sent = json.loads(body)
            return self.blocks.fns[sent["fn_index"]].fn.ticket(*sent["data"])
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            return False  # not a heavy page event, or one Gradio or its handler says is wrong
