"""`Translator`: a trained model directory behind two calls, `load` and `translate`.

A model directory holds `model.safetensors` (weights in float32, float16 or bfloat16), `config.json` (the
TransformerConfig) and `tokenizer.json` (BPE); `modeldir` describes the rest of what it may hold (scores,
notes, the training history) and writes it. Looking inside a translation is `interpretability`'s work; checking and
cleaning what people type, `inputs`' (`inputs.text.CheckedTranslator`).
"""

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from .decoding import BEAM_ALPHA, generate
from .model import Transformer, TransformerConfig
from .tokenizer import EOS_ID, decode, encode_batch, load_tokenizer, pad_sequences

# Decoding never repeats an n-gram of this many tokens (0: no such rule). Chosen on dev-news:
# docs/training-log.md#decoding-long-unfamiliar-inputs.
NO_REPEAT_NGRAM = 4


class Translator:
    def __init__(self, model, tokenizer, no_repeat_ngram=NO_REPEAT_NGRAM):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.no_repeat_ngram = no_repeat_ngram
        self.beam_alpha = BEAM_ALPHA
        self.rule = None  # a further decoding rule (`decoding.apply_decoding_rules`); the lesson's model needs none

    @classmethod
    def load(cls, model_dir, dtype="float32", device="cpu"):
        """The model of a directory (config.json, tokenizer.json, model.safetensors) on `device`, run in `dtype`
        ("float32", "float16" or "bfloat16") whatever precision its weights are stored in: nanoGPT's
        from_pretrained, trusting what it reads. `modeldir.directory.open_model` checks the files first, takes a
        Hub repository id, picks the device and reads the directory's optional files."""
        model_dir = Path(model_dir)
        model = Transformer(TransformerConfig(**json.loads((model_dir / "config.json").read_text(encoding="utf-8"))))
        weights = load_file(str(model_dir / "model.safetensors"))  # tied matrices are stored once: strict=False
        model.load_state_dict({name: w.float() for name, w in weights.items()}, strict=False)
        return cls(model.to(getattr(torch, dtype)).to(device), load_tokenizer(model_dir / "tokenizer.json"))

    @property
    def device(self):
        """Where the model runs: the inputs of its passes go there."""
        return next(self.model.parameters()).device

    @property
    def max_source_tokens(self):
        return self.model.cfg.max_len - 1  # room for EOS

    def encode_source(self, texts):
        """Token ids (with EOS) of each text of the list `texts`, truncated to what the model takes; and which were
        truncated."""
        ids = encode_batch(self.tokenizer, list(texts))
        truncated = [len(x) > self.max_source_tokens for x in ids]
        return [x[: self.max_source_tokens] + [EOS_ID] for x in ids], truncated

    def _batches(self, sequences, max_tokens):
        """Indices grouped by similar length so little padding is computed."""
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        batch = []
        for i in order:
            if batch and (len(batch) + 1) * len(sequences[i]) > max_tokens:
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch

    def translate_ids(self, texts, beam=1, use_cache=True, max_tokens=4096, sampling=None):
        """Generated token ids for each text (no BOS/EOS), decoded in length-sorted batches; drawn at random when
        `sampling` (a `decoding.Sampling`) is given, each sentence with its own generator seeded `sampling.seed`."""
        sources, _ = self.encode_source(texts)
        outputs = [None] * len(sources)
        for batch in self._batches(sources, max_tokens // beam):
            src = pad_sequences([sources[i] for i in batch]).to(self.device)  # the model may be on a GPU (training)
            outs = generate(
                self.model,
                src,
                beam=beam,
                use_cache=use_cache,
                no_repeat_ngram=self.no_repeat_ngram,
                alpha=self.beam_alpha,
                sampling=sampling,
                rule=self.rule,
            )
            for i, out in zip(batch, outs):
                outputs[i] = out
        return outputs

    def translate(self, text_or_list, beam=1, use_cache=True, sampling=None):
        """English -> Italian: a string for a string, a list (or tuple) of strings for a list (`beam`, `sampling`:
        see `translate_ids`)."""
        single = isinstance(text_or_list, str)
        texts = [text_or_list] if single else list(text_or_list)
        if not texts:
            return []
        generated = self.translate_ids(texts, beam, use_cache, sampling=sampling)
        outputs = [self.target_text(text, ids) for text, ids in zip(texts, generated)]
        return outputs[0] if single else outputs

    def target_text(self, text, ids):
        """The translation of `text` as a string, from the token ids generated for it."""
        return decode(self.tokenizer, ids)
