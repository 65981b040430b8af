"""What the translator's decoding rules share (`numbers.NumbersAsWritten`, `names.NamesAsWritten`), and the rules
together as the one `rule` the lesson's decoding takes (`transformer.decoding.apply_decoding_rules`)."""

import torch


class Rules:
    """Decoding rules applied in turn, as one `rule(logits, ys, src)`: what any of them forbids stays forbidden."""

    def __init__(self, *rules):
        self.rules = rules

    def __call__(self, logits, ys, src):
        for rule in self.rules:
            rule(logits, ys, src)
        return logits


class RowsOfSource:
    """`rows(src)`: the rows b of `src` (B, S) for which `about(row)` (a row's token ids, a tuple) is anything but
    empty, as [(b, about(row))]. Decoding asks at every step with the same `src`, so the last one's answer is kept."""

    def __init__(self, about):
        self.about = about
        self.last = (None, [])  # the last `src` and its answer

    def __call__(self, src):
        last = self.last  # read once, as another thread may replace it
        if last[0] is not src:
            answers = ((b, self.about(tuple(row))) for b, row in enumerate(src.tolist()))
            last = (src, [(b, answer) for b, answer in answers if answer])
            self.last = last
        return last[1]


def hold(logits, row, only, tokens):
    """Apply, in place, a rule's decision for `logits[row]`: with `only`, forbid every token but the ids `tokens` (a
    tensor), unless those are all forbidden already (after a prefix the rule did not write, or by another rule: a row
    is never left nothing to write); without, forbid the ids `tokens`."""
    tokens = tokens.to(logits.device)
    if not only:
        logits[row, tokens] = float("-inf")
    elif torch.isfinite(logits[row, tokens]).any():
        kept = logits[row, tokens]
        logits[row] = float("-inf")
        logits[row, tokens] = kept
