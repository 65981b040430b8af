"""The model's three kinds of attention (section 3.2.3 of the paper), each with the sequence its queries and its keys
come from: the encoder's self-attention, the decoder's masked self-attention, and the decoder's attention over the
encoder's output (cross-attention). Every table of attention maps or heads is keyed by them, in this order
(`Transformer.attention_layers` returns the layers in the same order)."""

ATTENTION_KINDS = {"encoder": ("source", "source"), "decoder": ("target", "target"), "cross": ("target", "source")}


def head_grid(cfg):
    """{kind: (layers, heads)} of each of the ATTENTION_KINDS: the shape of any per-head table of a model."""
    return {
        kind: (cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers, cfg.n_heads)
        for kind in ATTENTION_KINDS
    }
