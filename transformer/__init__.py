"""A from-scratch encoder-decoder Transformer for English -> Italian translation."""

from .decoding import Sampling
from .head_details import HeadDetails
from .model import Transformer, TransformerConfig
from .translator import Inspection, ModelLoadError, Translator

__all__ = ["Transformer", "TransformerConfig", "Translator", "Inspection", "HeadDetails", "ModelLoadError", "Sampling"]
