"""Heavy work admitted or refused at the door: a request whose event carries a `ticket` saying it asks for heavy work
(`admitted`) gets a place in the heavy lane (`deploy.lane.Lane.admit`) before it joins Gradio's queue, or is refused
there at once (`HeavyAdmission`), and gives the place back to the lane when it reaches its handler."""

import functools
import logging

from .routes import CallRefused, answer_json, read_event_call

log = logging.getLogger(__name__)

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
    message, which the page shows (Gradio's page shows its own words for a 503). Heavy: an event whose function
    carries a `ticket` (`admitted`) that says so of the call's arguments, by whichever route it comes
    (`routes.event_call`). In the queue, a burst of them would go first, in order of arrival, each opening a session
    on the event loop before the lane refuses it, and held up the greedy request that came next for seconds.
    `served`: its `lane` and its `busy_message`; `blocks`: the page and the API."""

    def __init__(self, app, served, blocks):
        self.app, self.served, self.blocks = app, served, blocks

    async def __call__(self, scope, receive, send):
        try:
            call, receive = await read_event_call(scope, receive, self.blocks)
        except CallRefused:
            call = None  # what is wrong with it, `routes.PublicRoutesOnly` says
        if call is not None and self.heavy(call) and not self.served.lane.admit(ARRIVAL_S):
            status, reason = 429 if call.route == "join" else 503, self.served.busy_message("the heavy lane is full")
            log.warning("refused: %s", reason)
            return await answer_json(scope, receive, send, status, reason)
        await self.app(scope, receive, send)

    @staticmethod
    def heavy(call):
        """Whether a call asks for heavy work (its event's `ticket`); a call its handler will refuse is not."""
        ticket = getattr(call.fn.fn, "ticket", None)
        try:
            return ticket is not None and bool(ticket(*call.arguments))
        except (TypeError, ValueError):
            return False
