"""Batched greedy and beam-search decoding.

With `use_cache=True` a `KVCache` keeps every decoder layer's keys and values of the tokens generated so far and
of the encoder memory, so a new token costs one decoder step over one position; `use_cache=False` re-runs the
decoder over the whole prefix at every step (the textbook loop, kept to check the cache against it and to
measure what it saves).
"""

import torch
import torch.nn.functional as F

from .tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID


def max_output_lengths(src, model, ratio=2.0, extra=10):
    """Per sentence, the most tokens to generate: a multiple of the source length, within max_len."""
    src_lengths = (src != PAD_ID).sum(dim=1)
    return (src_lengths.float() * ratio + extra).long().clamp(max=model.cfg.max_len - 1)  # (B,)


def _next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram=0):
    """Logits for the token after the prefix `ys` (B, T): one position with the cache, all without."""
    step_input = ys[:, -1:] if cache is not None else ys
    logits, _, _ = model.decode(step_input, memory, src_mask, cache)
    logits = logits[:, -1].float()  # (B, V)
    logits[:, [PAD_ID, BOS_ID, UNK_ID]] = float("-inf")  # never generated (byte fallback spells any character)
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
    logits[rows, ys[rows, starts + n - 1]] = float("-inf")  # the token that followed each earlier occurrence


def _strip(tokens):
    """Generated ids after BOS, up to (not including) EOS."""
    out = []
    for t in tokens:
        if t in (EOS_ID, PAD_ID):
            break
        out.append(t)
    return out


@torch.inference_mode()
def greedy_decode(model, src, use_cache=True, no_repeat_ngram=0):
    """src (B, S) -> list of B token-id lists, each the argmax continuation until EOS or its length cap."""
    B = src.size(0)
    memory, src_mask, _ = model.encode(src)
    limits = max_output_lengths(src, model)
    ys = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = model.new_cache() if use_cache else None
    for step in range(int(limits.max())):
        next_token = _next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram).argmax(dim=-1)  # (B,)
        next_token = next_token.masked_fill(finished, PAD_ID)
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, step + 2)
        finished |= (next_token == EOS_ID) | (step + 1 >= limits)
        if finished.all():
            break
    return [_strip(row) for row in ys[:, 1:].tolist()]


def length_penalty(length, alpha):
    """GNMT length normalisation ((5 + |Y|) / 6)^alpha: without it beam search prefers short outputs."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.inference_mode()
def beam_search(model, src, beam=4, alpha=0.6, use_cache=True, no_repeat_ngram=0):
    """src (B, S) -> list of B token-id lists: the best finished hypothesis of each sentence's beam.

    Scores are summed log-probabilities; a hypothesis that emits EOS among the top `beam` candidates is kept
    as finished with its length-normalised score, and a sentence is done once it has `beam` finished hypotheses
    and no live one can beat them (with beam=1 this is exactly greedy decoding)."""
    B, K = src.size(0), beam
    device = src.device
    memory, src_mask, _ = model.encode(src)
    memory = memory.repeat_interleave(K, dim=0)  # (B*K, S, C)
    src_mask = src_mask.repeat_interleave(K, dim=0)  # (B*K, 1, 1, S)
    limits = max_output_lengths(src, model).tolist()
    ys = torch.full((B * K, 1), BOS_ID, dtype=torch.long, device=device)
    scores = torch.zeros(B, K, device=device)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    finished = [[] for _ in range(B)]  # per sentence: (normalised score, token ids)
    done = [False] * B
    cache = model.new_cache() if use_cache else None
    for step in range(max(limits)):
        log_probs = F.log_softmax(_next_logits(model, ys, memory, src_mask, cache, no_repeat_ngram), dim=-1)  # (B*K, V)
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
                    finished[b].append((top_scores[b, rank].item() / length_penalty(length, alpha), prefix))
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
                finished[b].append((0.0, ys[b * K + best, 1:].tolist()))
        done = [d or length >= limits[b] or _beam_finished(finished[b], scores[b], K, length, alpha)
                for b, d in enumerate(done)]
        if all(done):
            break
    return [_strip(max(hypotheses, key=lambda h: h[0])[1]) for hypotheses in finished]


def _beam_finished(finished, live_scores, K, length, alpha):
    """A sentence is done once it has K finished hypotheses and no live beam, normalised at its current length,
    beats the best of them. Stopping at K finished alone let early, short hypotheses win on long inputs."""
    if len(finished) < K:
        return False
    best_live = live_scores.max().item() / length_penalty(length, alpha)
    return best_live <= max(score for score, _ in finished)


def generate(model, src, beam=1, use_cache=True, no_repeat_ngram=0, alpha=0.6):
    """One entry point for both strategies: greedy for beam=1, beam search (length penalty `alpha`) otherwise."""
    if beam <= 1:
        return greedy_decode(model, src, use_cache=use_cache, no_repeat_ngram=no_repeat_ngram)
    return beam_search(model, src, beam=beam, alpha=alpha, use_cache=use_cache, no_repeat_ngram=no_repeat_ngram)
