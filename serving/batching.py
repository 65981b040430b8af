"""How a server shares one model among concurrent requests: light ones decoded together (`Batcher`,
`batched_decoder`; those sampled one by one in the same run), heavy ones taken one at a time in order of arrival
within a time budget (`deploy.lane`), so that a beam search of 8 or a long input never holds up a short greedy
translation.

Decoding together: a decoder step reads every weight whether it serves one sentence or sixteen, so a server under load
decodes a batch of sentences where it would decode them one by one. No timer and no thread of its own: a caller that
finds no batch running runs one at once, with every request queued so far; requests that arrive meanwhile wait, and go
together into the next batch. A lone request is never delayed, and a batch runs in one caller's thread (on a Hugging
Face ZeroGPU Space, inside that request's GPU call). A heavy request, too, runs in its caller's thread.
"""

import logging
import threading

from deploy.lane import no_deadline
from serving.decoding_process import Gone, generate


class _Request:
    def __init__(self, item):
        self.item = item
        self.done = False
        self.value = None
        self.error = None


class Batcher:
    """`batcher(item)` returns `fn(items)[i]` for its item, `fn` called on the items of up to `max_size` concurrent
    callers at once (each result in the order of `items`); an exception of `fn` is raised to every caller of its
    batch. Thread-safe; one batch runs at a time."""

    def __init__(self, fn, max_size=16):
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size}")
        self.fn = fn
        self.max_size = max_size
        self._changed = threading.Condition()
        self._queue = []  # requests no batch has taken yet, oldest first
        self._running = False

    def __call__(self, item):
        request = _Request(item)
        with self._changed:
            self._queue.append(request)
        while batch := self._take(request):
            self._run(batch)
        if request.error is not None:
            raise request.error
        return request.value

    def _take(self, request):
        """The next batch, for this thread to run; [] once `request` is done (by this thread or another)."""
        with self._changed:
            self._changed.wait_for(lambda: request.done or not self._running)
            if request.done:
                return []
            self._running = True  # no batch runs and `request` is not done: it is still queued, and goes in one
            batch, self._queue = self._queue[: self.max_size], self._queue[self.max_size :]
            return batch

    def _run(self, batch):
        values, error = [None] * len(batch), RuntimeError("its batch stopped before it finished")
        try:
            with no_deadline():  # a batch serves other callers: a deadline of this thread's is not theirs
                results = list(self.fn([r.item for r in batch]))
            if len(results) != len(batch):
                raise ValueError(f"{len(batch)} items gave {len(results)} results")
            values, error = results, None
        except Exception as e:  # every caller of the batch gets it
            error = e
        finally:
            with self._changed:
                for request, value in zip(batch, values):
                    request.value, request.error, request.done = value, error, True
                self._running = False
                self._changed.notify_all()


def batched_decoder(translator, inspect, max_size=16, wrap=lambda fn: fn, decoding=None):
    """A `Batcher` of `(text, beam, sampling, inspected)` requests: the texts of concurrent calls decoded together
    (`decoding_process.generate`: one `translate_ids` per beam width in a batch, those sampled one by one in the same
    run). Each gets its translation (a string, as `translator.translate` writes it) or, when `inspected`,
    `inspect(translator, text, beam, generated=..., sampling=...)` of its own output in the same run (the app passes
    `interpretability.inspect`). `decoding`: a `DecodingProcess` that generates in a process of its own once it is ready
    (the batch is decoded here before, and once it has gone); `wrap` wraps the function that runs a batch (the app
    passes `spaces.GPU`, for ZeroGPU Spaces)."""

    def generated_ids(requests):
        if decoding is not None and decoding.ready():
            try:
                return decoding(requests)
            except Gone as e:
                logging.getLogger(__name__).error("%s: decoding in the server's process from now on", e)
        return generate(translator, requests)

    def run(requests):
        generated = generated_ids([(text, beam, sampling) for text, beam, sampling, _ in requests])
        return [
            inspect(translator, text, beam, generated=ids, sampling=sampling)
            if inspected
            else translator.target_text(text, ids)
            for (text, beam, sampling, inspected), ids in zip(requests, generated)
        ]

    return Batcher(wrap(run), max_size)
