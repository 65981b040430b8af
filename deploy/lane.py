"""Heavy work, one at a time, in order, within a budget: a `Lane` of a few slots and a short line, each call with a
deadline (`deadline_at`) that the model checks between steps (`stop_at_deadline`), so that a beam search of 8 or a
long input never holds up a short greedy translation, and a burst of them is refused at once (`Lane.admit`, asked at
the door: `deploy.admission`)."""

import threading
import time
from collections import deque


class Busy(RuntimeError):
    """A heavy request that waited its whole budget for its turn: the server is busy with others."""


class DeadlineExceeded(RuntimeError):
    """A model call still running when its time budget ran out (raised inside the model by `stop_at_deadline`)."""


_this_thread = threading.local()  # .deadline: (time.monotonic() by which this thread's model calls must end, an Event
# that ends them sooner when set, or None), or None


class no_deadline:
    """Within it, this thread's model calls have no deadline (restored on leaving)."""

    def __enter__(self):
        self.saved = getattr(_this_thread, "deadline", None)
        _this_thread.deadline = None

    def __exit__(self, *exc):
        _this_thread.deadline = self.saved


class deadline_at(no_deadline):
    """Within it, this thread's model calls end by `deadline` (time.monotonic()), or as soon as `stopped` (an
    Event) is set: `stop_at_deadline` checks."""

    def __init__(self, deadline, stopped=None):
        self.deadline = (deadline, stopped)

    def __enter__(self):
        super().__enter__()
        _this_thread.deadline = self.deadline


def check_deadline(*_):
    at, stopped = getattr(_this_thread, "deadline", None) or (None, None)
    if at is not None and (time.monotonic() > at or (stopped is not None and stopped.is_set())):
        raise DeadlineExceeded("the time budget ran out")


def stop_at_deadline(model):
    """Make each encoder pass, each decoder step and each use of the output projection of `model` (and of copies
    made of it later, such as `ablation.ablated`'s) raise `DeadlineExceeded` once the deadline of the calling thread
    (`deadline_at`) has passed: a beam search that runs too long stops within one step, a gradient attribution within
    one output token (it projects each token's state on its own, then takes its gradient). Threads with no deadline
    are unaffected (one attribute lookup per step)."""
    if not getattr(model, "stops_at_deadline", False):  # once per model, however many servers wrap it
        for part in (model.encoder, model.decoder, model.output_projection):
            part.register_forward_pre_hook(check_deadline)
        model.stops_at_deadline = True
    return model


class Lane:
    """At most `slots` calls at once, in their callers' threads, at most `max_waiting` others waiting in order of
    arrival (each freed slot goes to the longest waiting). `lane.run(fn, budget)` runs `fn()` once a slot is free,
    with a deadline `budget` seconds after the call (waiting included): `Busy` at once if the line is full or the
    lane is closed (`close`), `Busy` if no slot freed within the budget, `DeadlineExceeded` from inside the model if
    `fn` runs past it (`stop_at_deadline`), `Busy` if the lane is closed while `fn` runs. A full line refused at
    once keeps a burst of heavy requests from holding the threads (and the Gradio concurrency slots) that light
    requests need."""

    def __init__(self, slots=1, max_waiting=None):
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.slots = slots
        self.max_waiting = max_waiting
        self._lock = threading.Condition()
        self._free = slots
        self._waiting = deque()  # threading.Event per waiting caller, oldest first
        self._admitted = deque()  # when each call let in at the door (`admit`) but not arrived yet stops counting
        self._closed = threading.Event()

    @property
    def waiting(self):
        return len(self._waiting)

    def _taken(self, now):
        """Places taken: slots running, callers waiting, calls admitted (`admit`) that have not arrived yet."""
        while self._admitted and self._admitted[0] < now:
            self._admitted.popleft()  # admitted, never arrived (its client went)
        return self.slots - self._free + len(self._waiting) + len(self._admitted)

    def admit(self, within):
        """Let in a call that will come to `run` within `within` seconds, if there is a place for it (a slot or a
        place in line, counting those let in before that have not come yet); False, holding nothing, otherwise. A
        server's door asks it before a request joins a queue in front of the lane, so that a burst is refused there
        whole rather than one request at a time from that queue."""
        with self._lock:
            now = time.monotonic()
            if self._closed.is_set() or (
                self.max_waiting is not None and self._taken(now) >= self.slots + self.max_waiting
            ):
                return False
            self._admitted.append(now + within)
            return True

    def arrived(self):
        """A call let in by `admit` has come (to run, or to be refused before it needed the lane): its place is
        counted by `run` from now on, or is free."""
        with self._lock:
            if self._admitted:
                self._admitted.popleft()

    def _acquire(self, timeout):
        with self._lock:
            if self._closed.is_set():
                raise Busy("the server is shutting down")
            if self._free and not self._waiting:
                self._free -= 1
                return True
            if self.max_waiting is not None and len(self._waiting) >= self.max_waiting:
                raise Busy(f"{len(self._waiting)} heavy requests already wait for a turn")
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(max(timeout, 0)):
            return True
        with self._lock:
            if turn.is_set():  # given the slot just as it stopped waiting
                return True
            self._waiting.remove(turn)
            return False

    def _release(self):
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # the slot passes straight to the next in line
            else:
                self._free += 1
                self._lock.notify_all()

    def run(self, fn, budget):
        deadline = time.monotonic() + budget
        if not self._acquire(budget):
            raise Busy(f"waited {budget:g} s for a turn")
        try:
            with deadline_at(deadline, self._closed):
                return fn()
        except DeadlineExceeded:
            if self._closed.is_set():  # stopped by `close`, not by its budget
                raise Busy("the server is shutting down") from None
            raise
        finally:
            self._release()

    def close(self, timeout):
        """Refuse every call from now on, stop those running at their next model step (their deadline made now), and
        wait up to `timeout` seconds for them to end: a process stopping (SIGTERM) leaves no thread inside the
        model. Returns whether the lane is idle."""
        with self._lock:
            self._closed.set()
            return self._lock.wait_for(lambda: self._free == self.slots, timeout)
