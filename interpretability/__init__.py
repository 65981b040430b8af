"""Looking inside the Transformer of `transformer/` while it translates: every attention map and each decoding
step's candidates (`inspection`), one head's arithmetic (`head_details`), what each head does (`diagnostics`),
switching heads off (`ablation`), which source words a translation depends on (`attribution`), beam search step by
step (`beam_trace`), everything else the model computes — embeddings, residual stream, layer norms, feed-forward,
logits (`internals`).
"""

from .beam_trace import BeamTrace, beam_trace
from .head_details import HeadDetails, head_details
from .inspection import InputReport, Inspection, embedding_norms, input_report, inspect, positional_encoding
from .internals import Internals

__all__ = [
    "BeamTrace",
    "HeadDetails",
    "Inspection",
    "InputReport",
    "beam_trace",
    "embedding_norms",
    "head_details",
    "input_report",
    "inspect",
    "positional_encoding",
    "Internals",
]
