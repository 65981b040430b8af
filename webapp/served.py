"""The loaded model as the page's handlers call it: one object holding the translator, its model directory and the
model calls the handlers make, each wrapped once (`spaces.GPU` on a ZeroGPU Space) when the app starts."""

import types

from interpretability import embedding_norms, head_details, inspect
from interpretability.ablation import ablated
from interpretability.attribution import source_attribution
from serving.batching import batched_inspect


class ServedModel:
    """`directory`: the opened model directory (`serving.model_dir.open_model`); `source`: where it was opened from
    (a path or a Hub id), for the page's instructions; up to `batch_size` concurrent greedy translations are decoded
    together; `wrap` wraps every model call."""

    def __init__(self, directory, source, batch_size=16, wrap=lambda fn: fn):
        translator = self.translator = directory.translator
        self.directory, self.source, self.batch_size = directory, source, batch_size
        # The events that decode share one queue, up to `batch_size` at once, so that those arriving together are
        # decoded together.
        self.queue = dict(concurrency_limit=batch_size, concurrency_id="translate")
        self.cfg = translator.model.cfg
        self._batched = batched_inspect(translator, batch_size, wrap=wrap)
        self._alone = wrap(lambda translator, text, beam, sampling: inspect(translator, text, beam,
                                                                            sampling=sampling))
        self.embedding_norms = wrap(lambda source: embedding_norms(translator, source))
        self.head_details = wrap(lambda *args: head_details(translator, *args))
        self.attribute = wrap(lambda inspection, method: source_attribution(translator, inspection, method))

    def inspect(self, text, beam=1, sampling=None, heads=()):
        """`interpretability.inspect` of `text`; greedy translations of concurrent requests decoded together
        (`batched_inspect`), beam search (traced step by step) and sampling one by one; with `heads` switched off
        (`ablation.ablated`)."""
        if heads:
            return self._alone(ablated(self.translator, heads), text, beam, sampling)
        if beam == 1 and sampling is None:
            return self._batched(text, 1)
        return self._alone(self.translator, text, beam, sampling)

    def layers(self, kind):
        """How many layers the attention of `kind` has: encoder and decoder may differ in depth."""
        return self.cfg.n_encoder_layers if kind == "encoder" else self.cfg.n_decoder_layers

    def bind(self, handler):
        """`handler(served, ...)` as `handler(...)`: a bound method, whose signature and type hints Gradio reads."""
        return types.MethodType(handler, self)
