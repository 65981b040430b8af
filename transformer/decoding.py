"""Batched decoding: greedy, sampling (temperature and top-k) and beam search.

Greedy decoding and sampling share one loop and differ only in how the next token is chosen from its distribution:
the most probable one, or a draw. Beam search keeps the `beam` best hypotheses at every step; `beam_search_steps`
yields them after each step, for a learner to watch (`beam_search` keeps the last).

With `use_cache=True` a `KVCache` keeps every decoder layer's keys and values of the tokens generated so far and
of the encoder memory, so a new token costs one decoder step over one position; `use_cache=False` re-runs the
decoder over the whole prefix at every step (the textbook loop, kept to check the cache against it and to
measure what it saves).
"""

from dataclasses import dataclass, fields
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID


@dataclass
class LayerCache:
    """One decoder layer's keys and values between decoding steps, each (B, nh, T, d_k)."""

    self_k: torch.Tensor | None = None  # every target position so far: one more per step
    self_v: torch.Tensor | None = None
    cross_k: torch.Tensor | None = None  # the encoder memory's: projected at the first step, reused after
    cross_v: torch.Tensor | None = None

    @property
    def length(self):
        return 0 if self.self_k is None else self.self_k.size(2)

    def self_kv(self, attn, x):
        """Keys and values of the cached positions followed by those of the new tokens `x` (B, T, C)."""
        k, v = attn.project_kv(x)  # (B, nh, T, d_k)
        if self.self_k is not None:
            k = torch.cat([self.self_k, k], dim=2)  # (B, nh, T_past + T, d_k)
            v = torch.cat([self.self_v, v], dim=2)
        self.self_k, self.self_v = k, v
        return k, v

    def cross_kv(self, attn, memory):
        """The encoder memory's keys and values: the memory is the same at every step, so it is projected once."""
        if self.cross_k is None:
            self.cross_k, self.cross_v = attn.project_kv(memory)  # (B, nh, S, d_k)
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


def max_output_lengths(src, model, ratio=2.0, extra=10):
    """Per sentence, the most tokens to generate: a multiple of the source length, within max_len."""
    src_lengths = (src != PAD_ID).sum(dim=1)
    return (src_lengths.float() * ratio + extra).long().clamp(max=model.cfg.max_len - 1)  # (B,)


def _next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram=0, rule=None, src=None):
    """Logits for the token after the prefix `ys` (B, T): one position with the cache, all without."""
    step_input = ys[:, -1:] if cache is not None else ys
    logits = model.decode(step_input, memory, src_mask, cache)
    return apply_decoding_rules(logits[:, -1].float(), ys, no_repeat_ngram, rule, src)  # (B, V)


def apply_decoding_rules(logits, ys, no_repeat_ngram=0, rule=None, src=None):
    """Forbid (in place, and returned) what decoding never writes after the prefixes `ys` (B, T): padding, <s> and
    <unk> (byte fallback spells any character), with `no_repeat_ngram` a repeated n-gram, and what `rule(logits, ys,
    src)` forbids in place, given each row's source `src` (B, S): a rule the lesson leaves to its users (the app's
    `inputs.rules.Rules`: numbers, and names the model never met, as the English writes them). logits (B, V)."""
    logits[:, [PAD_ID, BOS_ID, UNK_ID]] = float("-inf")
    if rule is not None:
        rule(logits, ys, src)
    if no_repeat_ngram:
        block_repeated_ngrams(logits, ys, no_repeat_ngram)
    return logits


def block_repeated_ngrams(logits, ys, n):
    """Forbid (in place) every token that would complete an n-gram already in the prefix `ys` (B, T): a small
    model on an input unlike its training data otherwise loops ("sessenraleno nel servizio nel servizio ...")."""
    if ys.size(1) < n:
        return
    windows = ys.unfold(1, n - 1, 1)  # (B, T - n + 2, n - 1): every (n-1)-gram of the prefix
    seen_before = (windows[:, :-1] == windows[:, -1:]).all(dim=-1)  # (B, T - n + 1): equal to the last (n-1)-gram
    rows, starts = seen_before.nonzero(as_tuple=True)
    tokens = ys[rows, starts + n - 1]  # the token that followed each earlier occurrence
    kept = logits[rows, tokens]
    logits[rows, tokens] = float("-inf")
    # A row left nothing to write keeps its repeats: a rule may allow only a number's next digit ("nel 2009" after
    # "nel 2007").
    stuck = torch.isinf(logits).all(dim=-1)[rows]
    logits[rows[stuck], tokens[stuck]] = kept[stuck]


def _strip(tokens):
    """Generated ids after BOS, up to (not including) EOS."""
    out = []
    for t in tokens:
        if t in (EOS_ID, PAD_ID):
            break
        out.append(t)
    return out


def decode_token_by_token(model, src, choose, use_cache, no_repeat_ngram, rule=None):
    """The loop of greedy decoding and sampling: src (B, S) -> list of B token-id lists, each continued by
    `choose(logits (B, V)) -> (B,)` until EOS or its length cap."""
    B = src.size(0)
    memory, src_mask = model.encode(src)
    limits = max_output_lengths(src, model)
    ys = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = KVCache(model.cfg.n_decoder_layers) if use_cache else None
    for step in range(int(limits.max())):
        next_token = choose(_next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram, rule, src))  # (B,)
        next_token = next_token.masked_fill(finished, PAD_ID)
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, step + 2)
        finished |= (next_token == EOS_ID) | (step + 1 >= limits)
        if finished.all():
            break
    return [_strip(row) for row in ys[:, 1:].tolist()]


@torch.inference_mode()
def greedy_decode(model, src, use_cache=True, no_repeat_ngram=0, rule=None):
    """src (B, S) -> list of B token-id lists, each the argmax continuation until EOS or its length cap."""
    return decode_token_by_token(model, src, lambda logits: logits.argmax(dim=-1), use_cache, no_repeat_ngram, rule)


@dataclass(frozen=True)
class Sampling:
    """How to sample: logits divided by `temperature` (below 1 sharpens the distribution towards greedy, above 1
    flattens it), only the `top_k` most probable tokens kept (0 or more than the vocabulary: all), random draws
    seeded by `seed`."""

    temperature: float = 1.0
    top_k: int = 0
    seed: int = 0


def tempered_distribution(logits, temperature, top_k):
    """Probabilities (..., V) the sampler draws from: softmax(logits / temperature) over the `top_k` most probable
    tokens (0: all), the others at 0. Logits of -inf (forbidden tokens) stay at probability 0."""
    # Softmax does not change when a constant is subtracted; subtracting the largest logit first keeps a tiny
    # temperature from dividing the logits into infinities.
    scaled = (logits.float() - logits.float().amax(dim=-1, keepdim=True)) / temperature  # (..., V)
    if 0 < top_k < scaled.size(-1):
        keep = torch.zeros_like(scaled, dtype=torch.bool).scatter_(-1, scaled.topk(top_k, dim=-1).indices, True)
        scaled = scaled.masked_fill(~keep, float("-inf"))
    return F.softmax(scaled, dim=-1)


def draw_tokens(probs, generators):
    """One token per row of `probs` (B, V), by inverse transform sampling with one generator per row: a uniform
    number u in [0, 1) from the row's generator picks the token whose slice of the cumulative probabilities holds it."""
    u = torch.cat([torch.rand(1, generator=g, device=probs.device) for g in generators])  # (B,)
    cumulative = probs.cumsum(dim=-1)  # (B, V)
    # Scaled by the total, which rounding may leave just below 1; right=True skips tokens of probability 0.
    token = torch.searchsorted(cumulative, (u * cumulative[:, -1])[:, None], right=True)  # (B, 1)
    return token[:, 0]


@torch.inference_mode()
def sample_decode(model, src, temperature=1.0, top_k=0, seed=0, use_cache=True, no_repeat_ngram=0, rule=None):
    """src (B, S) -> list of B token-id lists, each token drawn from `tempered_distribution` (see `Sampling`).

    Every sentence has its own random generator seeded with `seed`, so its output depends on the seed only: the same
    with the same seed, whichever batch it is decoded in (up to floating-point differences between batched and
    single-sentence logits, which could move a draw that falls right at the edge of a token's slice)."""
    generators = [torch.Generator(device=src.device).manual_seed(seed) for _ in range(src.size(0))]

    def choose(logits):
        return draw_tokens(tempered_distribution(logits, temperature, top_k), generators)

    return decode_token_by_token(model, src, choose, use_cache, no_repeat_ngram, rule)


# Beam search's GNMT length penalty exponent: larger favours longer outputs. Chosen on dev-news:
# docs/training-log.md#decoding-long-unfamiliar-inputs.
BEAM_ALPHA = 1.0


def length_penalty(length, alpha):
    """GNMT length normalisation ((5 + |Y|) / 6)^alpha: without it beam search prefers short outputs."""
    return ((5.0 + length) / 6.0) ** alpha


class Finished(NamedTuple):
    """A hypothesis that ended at step `length` (1-based): with </s>, or at its length cap when none did. Its
    normalised score comes first: hypotheses are ranked by it."""

    normalised: float  # score / length_penalty(length, alpha)
    tokens: list  # token ids, without <s> and </s>
    score: float  # summed log-probabilities of its tokens (and of </s>)

    @classmethod
    def at(cls, length, tokens, score, alpha):
        return cls(score / length_penalty(length, alpha), tokens, score)


class BeamState(NamedTuple):
    """Beam search after one step, as `beam_search_steps` yields it: B sentences of K beams each."""

    ys: torch.Tensor  # (B*K, 1 + step): the kept hypotheses, <s> first, K per sentence, best first
    scores: torch.Tensor  # (B, K): their summed log-probabilities (-inf: no hypothesis yet to fill that beam)
    log_probs: torch.Tensor  # (B*K, V): the next-token log-probabilities of the hypotheses this step extended
    parents: torch.Tensor  # (B*K,): the row of `log_probs` each kept hypothesis extends
    finished: list  # per sentence, its Finished hypotheses so far, in the order they ended


@torch.inference_mode()
def beam_search_steps(model, src, beam=4, alpha=BEAM_ALPHA, use_cache=True, no_repeat_ngram=0, rule=None):
    """Beam search on src (B, S), one `BeamState` yielded after each step, until every sentence is done.

    Scores are summed log-probabilities; a hypothesis that emits EOS among the top `beam` candidates is kept
    as finished with its length-normalised score, and a sentence is done once it has `beam` finished hypotheses
    and no live one can beat them (with beam=1 this is exactly greedy decoding)."""
    B, K = src.size(0), beam
    device = src.device
    memory, src_mask = model.encode(src)
    memory = memory.repeat_interleave(K, dim=0)  # (B*K, S, C)
    src_mask = src_mask.repeat_interleave(K, dim=0)  # (B*K, 1, 1, S)
    beam_src = src.repeat_interleave(K, dim=0)  # (B*K, S): each hypothesis's source, for `rule`
    limits = max_output_lengths(src, model).tolist()
    ys = torch.full((B * K, 1), BOS_ID, dtype=torch.long, device=device)
    scores = torch.zeros(B, K, device=device)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    finished = [[] for _ in range(B)]  # per sentence: Finished hypotheses
    done = [False] * B
    cache = KVCache(model.cfg.n_decoder_layers) if use_cache else None
    for step in range(max(limits)):
        logits = _next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram, rule, beam_src)  # (B*K, V)
        log_probs = F.log_softmax(logits, dim=-1)
        V = log_probs.size(-1)
        candidates = scores[:, :, None] + log_probs.view(B, K, V)  # (B, K, V)
        top_scores, top_index = candidates.view(B, K * V).topk(2 * K, dim=1)  # (B, 2K)
        top_beam, top_token = top_index // V, top_index % V
        is_eos = top_token == EOS_ID
        length = step + 1
        for b in range(B):
            if done[b]:
                continue
            for rank in range(K):
                if is_eos[b, rank] and top_scores[b, rank] > float("-inf"):
                    prefix = ys[b * K + top_beam[b, rank], 1:].tolist()
                    finished[b].append(Finished.at(length, prefix, top_scores[b, rank].item(), alpha))
        # The best K candidates that do not end the sentence continue (stable sort keeps score order).
        keep = torch.sort(is_eos.int(), dim=1, stable=True).indices[:, :K]  # (B, K)
        scores = top_scores.gather(1, keep)
        source_beam = top_beam.gather(1, keep)
        flat_index = (torch.arange(B, device=device)[:, None] * K + source_beam).view(-1)  # (B*K,)
        ys = torch.cat([ys.index_select(0, flat_index), top_token.gather(1, keep).view(-1, 1)], dim=1)
        if cache is not None:
            cache.reorder(flat_index)
        for b in range(B):
            if not done[b] and length >= limits[b] and not finished[b]:
                # Length cap reached without EOS: fall back to the best unfinished beam now, not after the
                # beam has kept going for the batch's longer sentences (that made results batch-dependent).
                best = int(scores[b].argmax())
                finished[b].append(Finished.at(length, ys[b * K + best, 1:].tolist(), scores[b, best].item(), alpha))
        yield BeamState(ys, scores, log_probs, flat_index, finished)
        done = [
            d or length >= limits[b] or _beam_finished(finished[b], scores[b], K, length, alpha)
            for b, d in enumerate(done)
        ]
        if all(done):
            break


def beam_search(model, src, beam=4, alpha=BEAM_ALPHA, use_cache=True, no_repeat_ngram=0, rule=None):
    """src (B, S) -> list of B token-id lists: the best finished hypothesis of each sentence's beam, once every
    sentence is done (`beam_search_steps`)."""
    for state in beam_search_steps(model, src, beam, alpha, use_cache, no_repeat_ngram, rule):
        pass
    return [_strip(max(hypotheses, key=lambda h: h.normalised).tokens) for hypotheses in state.finished]


def _beam_finished(finished, live_scores, K, length, alpha):
    """A sentence is done once it has K finished hypotheses and no live beam, normalised at its current length,
    beats the best of them. Stopping at K finished alone let early, short hypotheses win on long inputs."""
    if len(finished) < K:
        return False
    best_live = live_scores.max().item() / length_penalty(length, alpha)
    return best_live <= max(normalised for normalised, *_ in finished)


def generate(model, src, beam=1, use_cache=True, no_repeat_ngram=0, alpha=BEAM_ALPHA, sampling=None, rule=None):
    """One entry point for every strategy: greedy for beam=1, beam search (length penalty `alpha`) otherwise, and
    sampling (`Sampling`, with beam 1) when `sampling` is given; `rule`: see `apply_decoding_rules`."""
    if sampling is not None:
        return sample_decode(
            model,
            src,
            sampling.temperature,
            sampling.top_k,
            sampling.seed,
            use_cache=use_cache,
            no_repeat_ngram=no_repeat_ngram,
            rule=rule,
        )
    if beam == 1:
        return greedy_decode(model, src, use_cache=use_cache, no_repeat_ngram=no_repeat_ngram, rule=rule)
    return beam_search(model, src, beam, alpha, use_cache, no_repeat_ngram, rule)
