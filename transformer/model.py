"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), from scratch.

Read it top to bottom: the components come in the paper's order and carry its names — input embedding (3.4),
positional encoding (3.5), scaled dot-product and multi-head attention (3.2), position-wise feed-forward network
(3.3), the residual connection around each sublayer with layer normalisation (5.4), encoder and decoder stacks (3.1),
masks, and the output projection to next-token logits (3.4).

Attention runs the fused `F.scaled_dot_product_attention` kernel; only inside `recording_attention` does it take the
explicit softmax path, which computes the same thing and records the weights for whoever wants to look at them. Decoding
one token at a time passes a key/value cache (`transformer.decoding.KVCache`) to `decode`; training passes none and
builds none.
"""

import json
import math
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .tokenizer import PAD_ID


@dataclass
class TransformerConfig:
    vocab_size: int = 8000  # one vocabulary shared by English and Italian, set from the tokenizer (tokenizer.py)
    d_model: int = 512
    n_heads: int = 8  # h in the paper; each head works in d_k = d_model / h dimensions
    n_encoder_layers: int = 6  # N in the paper
    n_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1  # P_drop
    max_len: int = 256  # longest sequence (in tokens) the positional encoding covers
    norm_first: bool = True  # pre-norm (stable without long warmup); False is the paper's post-norm
    tie_embeddings: bool = True  # source embedding = target embedding = output projection (paper, section 3.4)
    pad_id: int = PAD_ID

    def to_json(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(asdict(self), f, indent=2)


class InputEmbedding(nn.Module):
    """Token embedding multiplied by sqrt(d_model), so it is not drowned by the positional encoding (3.4)."""

    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens):
        return self.embedding(tokens) * self.scale  # (B, T, C)


def sinusoidal_positional_encoding(max_len, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)) (3.5)."""
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq)
    return pe  # (max_len, C)


class PositionalEncoding(nn.Module):
    """Adds the precomputed sinusoidal table; `offset` is the position of the first token (decoding one token at a
    time, the new token's position is the number of tokens before it)."""

    def __init__(self, d_model, max_len, dropout):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, offset=0):
        T = x.size(1)
        if offset + T > self.pe.size(0):
            raise ValueError(f"sequence of {offset + T} tokens exceeds max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[offset : offset + T])


_recording = threading.local()  # .attention: this thread's RecordedAttention inside `recording_attention`


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V (3.2.1), written out: the output and the weights.
    q (B, nh, Tq, d_k), k and v (B, nh, Tk, d_k); mask broadcastable to (B, nh, Tq, Tk), True = may attend."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (B, nh, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = F.softmax(scores.float(), dim=-1).to(q.dtype)  # rows are queries, columns keys; each row sums to 1
    return F.dropout(weights, dropout_p) @ v, weights  # (B, nh, Tq, d_k)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) (3.2.2).
    The h heads' projections are the column blocks of one d_model x d_model matrix each (W^Q, W^K, W^V).

    `forward` projects the keys and values itself, or takes them already projected (`keys_values`), which is how
    the decoder's cache hands back those of earlier steps."""

    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def split_heads(self, x):
        B, T, C = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, nh, T, d_k)

    def merge_heads(self, x):
        B, nh, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, nh * d_k)  # (B, T, C): the heads concatenated

    def project_kv(self, x):
        """(B, T, C) -> keys and values, each (B, nh, T, d_k): what the decoder's cache keeps."""
        return self.split_heads(self.w_k(x)), self.split_heads(self.w_v(x))

    def forward(self, query, key_value, mask=None, keys_values=None):
        q = self.split_heads(self.w_q(query))  # (B, nh, Tq, d_k)
        k, v = self.project_kv(key_value) if keys_values is None else keys_values  # (B, nh, Tk, d_k)
        dropout_p = self.dropout if self.training else 0.0
        recorded = getattr(_recording, "attention", None)
        if recorded is not None:
            y, recorded[self] = scaled_dot_product_attention(q, k, v, mask, dropout_p)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, nh, Tq, d_k)
        return self.w_o(self.merge_heads(y))  # (B, Tq, C)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to each position separately (3.3)."""

    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(F.relu(self.w_1(x))))


class SublayerConnection(nn.Module):
    """The residual connection around each sublayer, with layer normalisation: x + Dropout(Sublayer(Norm(x)))
    (pre-norm), or the paper's Norm(x + Dropout(Sublayer(x))) (post-norm)."""

    def __init__(self, d_model, dropout, norm_first):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a SublayerConnection."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attention = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.sublayer = nn.ModuleList(SublayerConnection(cfg.d_model, cfg.dropout, cfg.norm_first) for _ in range(2))

    def forward(self, x, src_mask):
        x = self.sublayer[0](x, lambda h: self.self_attention(h, h, src_mask))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the encoder's output (cross-attention), then the feed-forward network."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attention = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.cross_attention = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.sublayer = nn.ModuleList(SublayerConnection(cfg.d_model, cfg.dropout, cfg.norm_first) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        """`cache` (a decoding.LayerCache) when decoding token by token: `x` holds the new tokens only, and the keys
        and values of the earlier ones and of the memory come from it."""
        self_kv = (lambda h: cache.self_kv(self.self_attention, h)) if cache is not None else (lambda h: None)
        cross_kv = cache.cross_kv(self.cross_attention, memory) if cache is not None else None
        x = self.sublayer[0](x, lambda h: self.self_attention(h, h, tgt_mask, self_kv(h)))
        x = self.sublayer[1](x, lambda h: self.cross_attention(h, memory, src_mask, cross_kv))
        return self.sublayer[2](x, self.feed_forward)


class Encoder(nn.Module):
    """N encoder layers; with pre-norm, a final LayerNorm (the last sublayer's output is not normalised otherwise)."""

    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(self, x, src_mask):
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x)


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        layer_caches = cache.layers if cache is not None else [None] * len(self.layers)
        for layer, layer_cache in zip(self.layers, layer_caches, strict=True):
            x = layer(x, memory, src_mask, tgt_mask, layer_cache)
        return self.norm(x)


def padding_mask(tokens, pad_id):
    """(B, T) tokens -> (B, 1, 1, T) boolean mask: every query may attend to every non-padding key."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(size, device=None, offset=0):
    """(1, 1, T, offset + T) lower-triangular mask: position i may attend to positions <= i only (3.2.3). `offset`
    is the number of earlier (cached) positions, which every new position may attend to."""
    return torch.ones(size, offset + size, dtype=torch.bool, device=device).tril(diagonal=offset)[None, None]


class Transformer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = InputEmbedding(cfg.vocab_size, cfg.d_model)
        self.tgt_embed = InputEmbedding(cfg.vocab_size, cfg.d_model)
        self.positional_encoding = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.dropout)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.output_projection = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # to next-token logits
        self.apply(self._init_weights)
        if cfg.tie_embeddings:
            self.tgt_embed.embedding.weight = self.src_embed.embedding.weight
            self.output_projection.weight = self.src_embed.embedding.weight

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.cfg.d_model**-0.5)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def encode(self, src):
        """src (B, S) -> memory (B, S, C) and src_mask (B, 1, 1, S)."""
        src_mask = padding_mask(src, self.cfg.pad_id)
        return self.encode_embeddings(self.src_embed(src), src_mask), src_mask

    def encode_embeddings(self, embeddings, src_mask):
        """The source's input embeddings (B, S, C) -> memory (B, S, C): the positional encoding added, then the
        encoder stack."""
        return self.encoder(self.positional_encoding(embeddings), src_mask)

    def decode(self, tgt, memory, src_mask, cache=None):
        """tgt (B, T) -> logits (B, T, V): the decoder's output through the output projection."""
        return self.output_projection(self.decoder_output(tgt, memory, src_mask, cache))

    def decoder_output(self, tgt, memory, src_mask, cache=None):
        """tgt (B, T) -> the decoder stack's output (B, T, C). With a cache, `tgt` holds only the new tokens, the
        earlier ones' keys and values come from the cache, and a single new token needs no causal mask."""
        offset = cache.length if cache is not None else 0
        T = tgt.size(1)
        # Targets are right-padded, so the causal mask alone keeps padding out of every real position.
        tgt_mask = causal_mask(T, tgt.device, offset) if T > 1 else None  # (1, 1, T, offset + T)
        x = self.positional_encoding(self.tgt_embed(tgt), offset)  # (B, T, C)
        return self.decoder(x, memory, src_mask, tgt_mask, cache)  # (B, T, C)

    def forward(self, src, tgt):
        """Teacher-forced training pass: logits (B, T, V) for every target position."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)

    def attention_layers(self):
        """Every MultiHeadAttention by kind: {"encoder": [...], "decoder": [...], "cross": [...]} (the encoder's
        self-attention, the decoder's masked self-attention, its cross-attention), one per layer, first layer first."""
        return {
            "encoder": [layer.self_attention for layer in self.encoder.layers],
            "decoder": [layer.self_attention for layer in self.decoder.layers],
            "cross": [layer.cross_attention for layer in self.decoder.layers],
        }


class RecordedAttention(dict):
    """Attention layer -> the weights (B, nh, Tq, Tk) of its last pass inside `recording_attention`."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def maps(self, kind):
        """The weights of every layer of one kind ("encoder", "decoder" or "cross"), first layer first."""
        return [self[attn] for attn in self.model.attention_layers()[kind]]


@contextmanager
def recording_attention(model):
    """Inside the block, the passes this thread makes take the explicit softmax path and record their attention
    weights in the RecordedAttention it yields; other threads (the app serves several people at once) run the fused
    kernel and record nothing."""
    recorded, outer = RecordedAttention(model), getattr(_recording, "attention", None)
    _recording.attention = recorded
    try:
        yield recorded
    finally:
        _recording.attention = outer
