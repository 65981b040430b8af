"""A from-scratch encoder-decoder Transformer for English -> Italian translation: the tokenizer (`tokenizer`), the
model in the paper's order (`model`), decoding (`decoding`) and the `Translator` that puts them behind `load` and
`translate`."""

from .decoding import Sampling
from .model import Transformer, TransformerConfig
from .translator import Translator

__all__ = ["Transformer", "TransformerConfig", "Translator", "Sampling"]
