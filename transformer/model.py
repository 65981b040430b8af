"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), from scratch.

Components are named as in the paper and appear in its order: input embedding, positional encoding,
multi-head attention, position-wise feed-forward, residual connection with layer normalisation, encoder and
decoder layers and stacks, masks, output projection. Attention takes the fused
`F.scaled_dot_product_attention` kernel unless its weights are asked for; then an explicit softmax path
computes the same thing and returns the weights (rows are queries, columns are keys). The decoder's key/value
cache (`KVCache`, one `LayerCache` per decoder layer) keeps the keys and values of earlier steps when decoding.
"""

import json
import math
import numbers
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

from .tokenizer import PAD_ID


@dataclass
class TransformerConfig:
    vocab_size: int = 8000  # one vocabulary shared by English and Italian (see transformer/tokenizer.py)
    d_model: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 256  # longest sequence (in tokens) the positional encoding covers
    norm_first: bool = True  # pre-norm (stable without long warmup); False is the paper's post-norm
    tie_embeddings: bool = True  # source embedding = target embedding = output projection (paper, section 3.4)
    pad_id: int = PAD_ID

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.d_model % 2:
            raise ValueError(f"d_model ({self.d_model}) must be even: the positional encoding pairs sin and cos")

    def to_json(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(asdict(self), f, indent=2)

    @classmethod
    def from_dict(cls, values):
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        return cls(**values)


class InputEmbedding(nn.Module):
    """Token embedding multiplied by sqrt(d_model), so it is not drowned by the positional encoding."""

    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.lut = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens):
        return self.lut(tokens) * self.scale  # (B, T, C)


def sinusoidal_positional_encoding(max_len, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq)
    return pe  # (max_len, C)


class PositionalEncoding(nn.Module):
    """Adds the precomputed sinusoidal table; `offset` is the position of the first token (used when decoding
    one token at a time with a cache)."""

    def __init__(self, d_model, max_len, dropout):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, offset=0):
        T = x.size(1)
        if offset + T > self.pe.size(0):
            raise ValueError(f"sequence of {offset + T} tokens exceeds max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[offset : offset + T])


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over n_heads subspaces: softmax(QK^T / sqrt(d_k)) V, heads concatenated
    and projected by W_O.

    `mask` is boolean and broadcastable to (B, nh, Tq, Tk); True means "may attend". `forward` projects the
    keys and values itself; the decoder calls `project_kv` and `attend` separately, so that a LayerCache can
    keep keys and values between decoding steps."""

    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def split_heads(self, x):
        B, T, C = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, nh, T, hs)

    def merge_heads(self, x):
        B, nh, T, hs = x.shape
        return x.transpose(1, 2).reshape(B, T, nh * hs)  # (B, T, C)

    def project_kv(self, x):
        """(B, T, C) -> keys and values, each (B, nh, T, hs): what a LayerCache keeps."""
        return self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))

    def forward(self, query, key_value, mask=None, need_weights=False):
        return self.attend(query, *self.project_kv(key_value), mask, need_weights)

    def attend(self, query, k, v, mask=None, need_weights=False):
        """The queries of `query` (B, Tq, C) attend to keys and values already projected, (B, nh, Tk, hs)."""
        q = self.split_heads(self.q_proj(query))  # (B, nh, Tq, hs)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)  # (B, nh, Tq, Tk)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = F.softmax(scores.float(), dim=-1).to(q.dtype)
            y = F.dropout(weights, dropout_p, self.training) @ v  # (B, nh, Tq, hs)
        else:
            weights = None
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, nh, Tq, hs)
        return self.out_proj(self.merge_heads(y)), weights


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position separately."""

    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(F.relu(self.w_1(x))))


class ResidualConnection(nn.Module):
    """x + Dropout(Sublayer(x)) with LayerNorm: before the sublayer (pre-norm) or after the sum (post-norm,
    LayerNorm(x + Sublayer(x)) as in the paper)."""

    def __init__(self, d_model, dropout, norm_first):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            out, weights = sublayer(self.norm(x))
            return x + self.dropout(out), weights
        out, weights = sublayer(x)
        return self.norm(x + self.dropout(out)), weights


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.attn_residual, self.ff_residual = (ResidualConnection(cfg.d_model, cfg.dropout, cfg.norm_first)
                                                for _ in range(2))

    def forward(self, x, src_mask, need_weights=False):
        x, weights = self.attn_residual(x, lambda h: self.self_attn(h, h, src_mask, need_weights=need_weights))
        x, _ = self.ff_residual(x, lambda h: (self.feed_forward(h), None))
        return x, weights


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.self_residual, self.cross_residual, self.ff_residual = (
            ResidualConnection(cfg.d_model, cfg.dropout, cfg.norm_first) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask, cache, need_weights=False):
        """`cache` (a LayerCache) supplies the keys and values of earlier steps and the encoder memory's."""

        def self_attention(h):
            k, v = cache.self_kv(self.self_attn, h)  # (B, nh, T_past + T, hs)
            return self.self_attn.attend(h, k, v, tgt_mask, need_weights)

        def cross_attention(h):
            k, v = cache.cross_kv(self.cross_attn, memory)  # (B, nh, S, hs)
            return self.cross_attn.attend(h, k, v, src_mask, need_weights)

        x, self_w = self.self_residual(x, self_attention)
        x, cross_w = self.cross_residual(x, cross_attention)
        x, _ = self.ff_residual(x, lambda h: (self.feed_forward(h), None))
        return x, self_w, cross_w


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(self, x, src_mask, need_weights=False):
        maps = []
        for layer in self.layers:
            x, w = layer(x, src_mask, need_weights)
            maps.append(w)
        return self.norm(x), maps


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(self, x, memory, src_mask, tgt_mask, cache, need_weights=False):
        self_maps, cross_maps = [], []
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x, self_w, cross_w = layer(x, memory, src_mask, tgt_mask, layer_cache, need_weights)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        return self.norm(x), self_maps, cross_maps


def padding_mask(tokens, pad_id):
    """(B, T) tokens -> (B, 1, 1, T) boolean mask: every query may attend to every non-padding key."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(size, device=None, offset=0):
    """(1, 1, T, offset + T) lower-triangular mask: position i may attend to positions <= i only. `offset` is
    the number of earlier (cached) positions, which every new position may attend to."""
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
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # output projection to logits
        self.apply(self._init_weights)
        if cfg.tie_embeddings:
            self.tgt_embed.lut.weight = self.src_embed.lut.weight
            self.generator.weight = self.src_embed.lut.weight

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.cfg.d_model**-0.5)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def encode(self, src, need_weights=False, embedded=None):
        """src (B, S) -> memory (B, S, C), src_mask (B, 1, 1, S), encoder maps [(B, nh, S, S)] per layer. `embedded`
        (B, S, C): the source's input vectors to read instead of src's embeddings (gradient attribution varies them;
        src then only gives the padding mask)."""
        src_mask = padding_mask(src, self.cfg.pad_id)
        x = self.positional_encoding(self.src_embed(src) if embedded is None else embedded)  # (B, S, C)
        memory, maps = self.encoder(x, src_mask, need_weights)
        return memory, src_mask, maps

    def decode(self, tgt, memory, src_mask, cache=None, need_weights=False, project=True):
        """tgt (B, T) -> logits (B, T, V). With a cache, `tgt` holds only the new tokens, the earlier ones'
        keys and values come from the cache, and no causal mask is needed for a single new token. Without one,
        an empty cache, dropped afterwards, makes this the plain pass over the whole of `tgt`. `project=False`
        returns the decoder's output (B, T, C) before the output projection (gradient attribution projects one
        position at a time)."""
        cache = self.new_cache() if cache is None else cache
        offset = cache.length
        T = tgt.size(1)
        # Targets are right-padded, so the causal mask alone keeps padding out of every real position.
        tgt_mask = causal_mask(T, tgt.device, offset) if T > 1 else None  # (1, 1, T, offset + T)
        x = self.positional_encoding(self.tgt_embed(tgt), offset)  # (B, T, C)
        x, self_maps, cross_maps = self.decoder(x, memory, src_mask, tgt_mask, cache, need_weights)
        return (self.generator(x) if project else x), self_maps, cross_maps

    def forward(self, src, tgt):
        """Teacher-forced training pass: logits (B, T, V) for every target position."""
        memory, src_mask, _ = self.encode(src)
        logits, _, _ = self.decode(tgt, memory, src_mask)
        return logits

    def new_cache(self):
        """An empty key/value cache for this model's decoder, filled as decoding goes."""
        return KVCache(self.cfg.n_decoder_layers)


@dataclass
class LayerCache:
    """One decoder layer's keys and values between decoding steps, each (B, nh, T, hs)."""

    self_k: torch.Tensor | None = None  # every target position so far: one more per step
    self_v: torch.Tensor | None = None
    cross_k: torch.Tensor | None = None  # the encoder memory's: projected at the first step, reused after
    cross_v: torch.Tensor | None = None

    @property
    def length(self):
        return 0 if self.self_k is None else self.self_k.size(2)

    def self_kv(self, attn, x):
        """Keys and values of the cached positions followed by those of the new tokens `x` (B, T, C)."""
        k, v = attn.project_kv(x)  # (B, nh, T, hs)
        if self.self_k is not None:
            k = torch.cat([self.self_k, k], dim=2)  # (B, nh, T_past + T, hs)
            v = torch.cat([self.self_v, v], dim=2)
        self.self_k, self.self_v = k, v
        return k, v

    def cross_kv(self, attn, memory):
        """The encoder memory's keys and values: the memory is the same at every step, so it is projected once."""
        if self.cross_k is None:
            self.cross_k, self.cross_v = attn.project_kv(memory)  # (B, nh, S, hs)
        return self.cross_k, self.cross_v

    def reorder(self, index):
        for f in fields(self):
            cached = getattr(self, f.name)
            if cached is not None:
                setattr(self, f.name, cached.index_select(0, index))


class KVCache:
    """The decoder's key/value cache, a LayerCache per decoder layer: decoding step t then runs the decoder over
    the new token only instead of the whole prefix."""

    def __init__(self, n_layers):
        self.layers = [LayerCache() for _ in range(n_layers)]

    @property
    def length(self):
        """Target positions cached so far: the position of the next token."""
        return self.layers[0].length

    def reorder(self, index):
        """Keep the hypotheses `index` (B',), in that order: beam search's surviving beams.

        The cross-attention keys and values are selected too, so the cache is that of the chosen hypotheses for
        any `index` (the caller selects the same rows of `src_mask`). In beam search the memory is repeated per
        beam and `index` stays within each sentence's beams, so there this copy changes no value (and costs
        under 1% of a decoder step)."""
        for layer in self.layers:
            layer.reorder(index)
