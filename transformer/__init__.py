"""A from-scratch encoder-decoder Transformer for English -> Italian translation."""

from .model import Transformer, TransformerConfig
from .translator import Inspection, ModelLoadError, Translator

__all__ = ["Transformer", "TransformerConfig", "Translator", "Inspection", "ModelLoadError"]
