"""The loaded model as the page's handlers and the API call it: one object holding the translator, its model directory
and the model calls, each wrapped once (`spaces.GPU` on a ZeroGPU Space) when the app starts.

Two lanes share the model (`serving.batching`, `deploy.lane`). Light work, one hypothesis (greedy or sampled) of a text
of up to `light_tokens` source tokens, goes into batches run one after another (greedy ones decoded together). Heavy
work (beam search, longer inputs, heads switched off, gradient attribution, /inspect) takes turns, `heavy_slots` at a
time in order of arrival, `heavy_waiting` more in line and the others refused at once, each within `heavy_budget`
seconds from its arrival (its wait included): so heavy requests, however many, never hold up a short greedy one, nor the
threads it needs.

The page keeps no state on the server: an experiment (one head's numbers, attribution) names the sentence and the
decoding settings it is about, and the translation's `Inspection` is looked up among the recent ones (`recent`, a
`Recent` bounded in bytes) or made again. A translation's payload waits for its page in `payloads` (encoded, bounded
in bytes too: `webapp.translation.sent_payload`), not in the page's Gradio session.
"""

import threading
import time
import types
from collections import OrderedDict
from typing import NamedTuple

from deploy.lane import Busy, DeadlineExceeded, Lane, stop_at_deadline
from deploy.routes import Refusal
from interpretability import embedding_norms, head_details, inspect
from interpretability.ablation import ablated
from interpretability.attribution import float32_model, source_attribution
from interpretability.inspection import LONG_INPUT_TOKENS
from interpretability.kinds import head_grid
from modeldir.loading import dtype_name
from serving.batching import batched_decoder
from serving.decoding_process import DecodingProcess

HEAVY_WORK = "beam search, long inputs, heads switched off, attribution, /inspect"


def inspection_bytes(inspection):
    """About what an `Inspection` holds in memory: its attention maps and the model map's numbers (`Internals`; the
    rest is a few kB)."""
    return (
        sum(
            maps.nbytes
            for maps in (inspection.encoder_attention, inspection.decoder_attention, inspection.cross_attention)
        )
        + inspection.internals.nbytes
        + 4096
    )


class Made(NamedTuple):
    """An `Inspection` with the seconds making it took, and whether it was answered again from the recent ones (so
    that the page says so rather than "0.00 s")."""

    inspection: object
    seconds: float
    kept: bool = False


class Recent:
    """The values of the most recently used keys, least recently used dropped first so that their sizes (`size` of
    each) together stay under `max_bytes`; a value larger than that alone is not kept. Thread-safe. No cache of
    Gradio's is bounded in bytes."""

    def __init__(self, max_bytes, size=len):
        self.max_bytes, self.size = max_bytes, size
        self._kept = OrderedDict()  # key -> (value, its bytes), least recently used first
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self):
        return self._bytes

    def __len__(self):
        return len(self._kept)

    def get(self, key):
        with self._lock:
            if key not in self._kept:
                return None
            self._kept.move_to_end(key)
            return self._kept[key][0]

    def put(self, key, value):
        size = self.size(value)
        with self._lock:
            if key in self._kept:
                self._bytes -= self._kept.pop(key)[1]
            if size > self.max_bytes:
                return
            self._kept[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._bytes -= self._kept.popitem(last=False)[1][1]


class ServedModel:
    """`directory`: the opened model directory (`modeldir.directory.open_model`); `source`: where it was opened from
    (a path or a Hub id), for the page's instructions; up to `batch_size` concurrent light translations are decoded
    together; `heavy_slots` heavy computations run at once, each within `heavy_budget` seconds, `heavy_waiting` more
    waiting for a turn; the inspections of recent translations kept up to `inspections_bytes`, their payloads (gzip
    JSON, until their page fetches them) up to `payloads_bytes`; light batches decoded in a process of their own if
    `decode_process` (`serving.decoding_process`, with `threads` torch threads); `wrap` wraps every model call."""

    def __init__(
        self,
        directory,
        source,
        batch_size=16,
        wrap=lambda fn: fn,
        heavy_slots=1,
        heavy_budget=30.0,
        heavy_waiting=4,
        inspections_bytes=32 * 2**20,
        payloads_bytes=8 * 2**20,
        light_tokens=LONG_INPUT_TOKENS,
        decode_process=False,
        threads=1,
    ):
        translator = self.translator = directory.translator
        self.directory, self.source, self.batch_size = directory, source, batch_size
        self.heavy_budget, self.light_tokens = heavy_budget, light_tokens
        # The most requests one concurrency group may run at once for light ones never to wait behind heavy ones: a
        # full batch of light ones beside every heavy one the lane holds (running or in line); more heavy ones are
        # refused at once, freeing their place.
        self.concurrency = batch_size + heavy_slots + heavy_waiting
        # The page's events that translate share one queue, so that those arriving together are decoded together.
        self.queue = dict(concurrency_limit=self.concurrency, concurrency_id="translate")
        self.cfg = translator.model.cfg
        stop_at_deadline(translator.model)
        self.lane = Lane(heavy_slots, heavy_waiting)
        self.recent = Recent(inspections_bytes, lambda made: inspection_bytes(made.inspection))
        self.payloads = Recent(payloads_bytes)
        self.decoding = None
        if decode_process:
            self.decoding = DecodingProcess(directory.path, dtype_name(translator.model), threads)
        self._batcher = batched_decoder(translator, inspect, batch_size, wrap=wrap, decoding=self.decoding)
        self._inspect_alone = wrap(
            lambda translator, text, beam, sampling: inspect(translator, text, beam, sampling=sampling)
        )
        self._translate_alone = wrap(
            lambda translator, text, beam, sampling: translator.translate(text, beam, sampling=sampling)
        )
        # /inspect: a beam search's output decoded untraced (the API shows no beam), then inspected with `top_k`
        # candidates per step.
        self.inspect_alone = wrap(
            lambda text, beam, sampling, top_k: inspect(
                translator,
                text,
                beam,
                top_k=top_k,
                sampling=sampling,
                generated=translator.translate_ids([text], beam)[0] if beam > 1 else None,
            )
        )

        def attribute(inspection, method):
            stop_at_deadline(float32_model(translator))  # the float32 copy it differentiates stops at the deadline too
            return source_attribution(translator, inspection, method)

        self._attribute = wrap(attribute)
        self.embedding_norms = wrap(lambda source: embedding_norms(translator, source))
        self.head_details = wrap(lambda *args: head_details(translator, *args))

    def is_light(self, text, beam=1, sampling=None, heads=()):
        """Whether translating `text` so is light work: one hypothesis (greedy or sampled), all heads on, at most
        `light_tokens` source tokens."""
        if beam != 1 or heads:
            return False
        (ids,), _ = self.translator.encode_source([text])
        return len(ids) - 1 <= self.light_tokens  # without </s>

    def translate(self, text, beam=1, sampling=None, heads=()):
        """`text` in Italian, as `translator.translate` writes it, and nothing else (the API's lean path): light work
        decoded with concurrent light requests, the rest in the heavy lane."""
        if self.is_light(text, beam, sampling, heads):
            return self._batcher((text, 1, sampling, False))
        return self.heavy(lambda: self._translate_alone(self._with_heads(heads), text, beam, sampling))

    def inspect(self, text, beam=1, sampling=None, heads=()):
        """`interpretability.inspect` of `text` (`made`'s)."""
        return self.made(text, beam, sampling, heads).inspection

    def made(self, text, beam=1, sampling=None, heads=()):
        """`interpretability.inspect` of `text`, as a `Made`: light work with concurrent light requests (each then
        given its teacher-forced pass), beam search (traced step by step), long inputs and heads switched off
        (`ablation.ablated`) in the heavy lane. With all heads on, a recent one is answered again (`recent`)."""
        key = (text, beam, sampling)
        if not heads and (kept := self.recent.get(key)) is not None:
            return kept._replace(kept=True)
        start = time.perf_counter()
        if self.is_light(text, beam, sampling, heads):
            inspection = self._batcher((text, 1, sampling, True))
        else:
            inspection = self.heavy(lambda: self._inspect_alone(self._with_heads(heads), text, beam, sampling))
        made = Made(inspection, time.perf_counter() - start)
        if not heads:
            self.recent.put(key, made)
        return made

    def attribute(self, inspection, method):
        """`attribution.source_attribution` of an inspection, in the heavy lane."""
        return self.heavy(lambda: self._attribute(inspection, method))

    def heavy(self, fn):
        """`fn()` in the heavy lane, within the budget; a gr.Error that says what happened otherwise."""
        try:
            return self.lane.run(fn, self.heavy_budget)
        except Busy as e:
            raise Refusal(self.busy_message(e)) from e
        except DeadlineExceeded as e:
            raise Refusal(
                f"This request needed more than the {self.heavy_budget:g} s each heavy request may take "
                f"({HEAVY_WORK}), its wait included: try a shorter text or a narrower beam."
            ) from e

    def busy_message(self, why):
        return (
            f"The server is busy with heavy requests ({HEAVY_WORK}): {why}. Try again in a moment, or use greedy "
            "decoding on a shorter text."
        )

    def close(self, timeout=5.0):
        """Refuse heavy work from now on and stop what runs at its next model step (`Lane.close`); whether it ended
        within `timeout` seconds. The decoding process, if any, ends too (a batch it held is decoded here)."""
        ended = self.lane.close(timeout)
        if self.decoding is not None:
            self.decoding.close()
        return ended

    def _with_heads(self, heads):
        return ablated(self.translator, heads) if heads else self.translator

    def layers(self, kind):
        """How many layers the attention of `kind` has: encoder and decoder may differ in depth."""
        return head_grid(self.cfg)[kind][0]

    def bind(self, handler):
        """`handler(served, ...)` as `handler(...)`: a bound method, whose signature and type hints Gradio reads."""
        return types.MethodType(handler, self)
