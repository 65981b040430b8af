"""Numbers in a translation as the English writes them: a decoding rule for the lesson's `Translator`.

The vocabulary spells a number digit by digit ("600" is `▁6 0 0`), and a small model miscounts repeated digits:
part 14 wrote "Costa 60 euro." for "It costs 600 euros." and "55 1234" for "555 1234". Where the English holds
digits, `NumbersAsWritten` forbids, at each decoding step, a digit that would make a number the English does not
hold, and the end of a number that is not yet one of them: "60" can only go on to "600". Separators are free to
change (English "75,000" and "29.8" may become Italian "75.000" and "29,8"), a space between groups of three digits
may be kept or dropped ("40 000"), and a number may be written out in words: only digits are held to the English.
An English sentence without digits is decoded as the model alone decodes it. Chosen on dev, dev-news and the demo
set: docs/training-log.md#numbers-as-the-english-writes-them."""

from functools import lru_cache

import torch

from .rules import RowsOfSource, hold

SEPARATORS = ".,"  # inside a number: "1,000", "29.8" (Italian swaps them: "1.000", "29,8")
GROUP = "|"  # where a separator stood in a number's digits: "75|000" is "75,000", "75.000" or "75 000"


class NumbersAsWritten:
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, forbid the tokens after each prefix
    `ys` (B, T) that would write a number its source `src` (B, S) does not hold."""

    def __init__(self, tokenizer):
        vocab = tokenizer.get_vocab()
        self.digits = {}  # token id -> (its digits, whether it starts a number: "▁6" does, "0" goes on)
        for token, i in vocab.items():
            digits = token.removeprefix("▁")
            if digits.isdigit():
                self.digits[i] = (digits, token.startswith("▁"))
        self.separators = {vocab[s] for s in SEPARATORS if s in vocab}
        self.space = vocab.get("▁")  # "40 000" is `▁4 0 ▁ 0 0 0`
        self.digit_set = set(self.digits)
        # Decoding asks at every step: each source's numbers, and what may follow a number, are worked out once.
        self.source_numbers = lru_cache(maxsize=4096)(self.numbers)
        self.allowed_after = lru_cache(maxsize=4096)(self.allowed_after_number)
        self.rows_with_digits = RowsOfSource(self.source_numbers)  # [(row, its numbers)] of the rows with digits

    def numbers(self, source):
        """The numbers of the token ids `source` (a tuple), each as its digits with GROUP where a separator stood;
        groups of three digits after a space ("40 000") also joined to the number before them, and a four-digit
        number's last two digits also a number of its own (a year's decade)."""
        runs = []  # [digits, whether a lone space separates it from the number before it]
        number, spaced, previous = None, False, None
        for token in source:
            if token in self.digits and number is not None and not self.digits[token][1]:
                number[0] += (GROUP if previous in self.separators else "") + self.digits[token][0]  # "6" "0"
            elif token in self.digits:  # a new number: "▁6", or a digit after what is not one
                if number is not None:
                    runs.append(number)
                number = [self.digits[token][0], spaced or previous in self.digits]  # "555 123": `▁5 5 5 ▁1 2 3`
            elif not (token in self.separators and previous in self.digits):  # the number, if any, ends here
                if number is not None:
                    runs.append(number)
                spaced = token == self.space and previous in self.digits
                number, previous = None, token
                continue
            spaced, previous = False, token
        if number is not None:
            runs.append(number)
        found, joined = set(), None
        for digits, after_space in runs:
            joined = joined + GROUP + digits if after_space and len(digits) == 3 and joined else digits
            found.update((digits, joined))
            if len(digits) == 4 and digits.isdigit():  # a year's decade: "the 1980s" are "gli anni '80"
                found.add(digits[2:])
        return frozenset(found)

    def open_number(self, prefix):
        """The number `prefix` (token ids) ends in, as `numbers` writes it, and whether its last token is a
        separator; (None, False) when it ends in anything else."""
        start = len(prefix)
        while start and (prefix[start - 1] in self.digits or prefix[start - 1] in self.separators):
            start -= 1
        number, separated = None, False
        for token in prefix[start:]:
            if token in self.separators:
                number, separated = (None, False) if number is None or separated else (number, True)
            elif number is None or self.digits[token][1]:
                number, separated = self.digits[token][0], False
            else:
                number, separated = number + (GROUP if separated else "") + self.digits[token][0], False
        return number, separated

    def allowed_after_number(self, numbers, number, separated):
        """What may follow the open `number` (`open_number`; None: none), its last token a separator or not, when the
        source holds `numbers`: (True, ids) when only the token ids `ids` (a tensor) may, (False, ids) when every
        token but `ids` may."""

        def starts_one(digits):
            return any(n.startswith(digits) for n in numbers)

        complete = number is None or number in numbers
        glue = GROUP if separated else ""
        digits_allowed = [
            token
            for token, (digits, starts) in self.digits.items()
            if (
                starts_one(number + glue + digits)
                if number is not None and not starts
                else complete and starts_one(digits)
            )
        ]
        if complete:  # anything but a digit that starts no number of the English
            return False, torch.tensor(sorted(self.digit_set.difference(digits_allowed)), dtype=torch.long)
        if not separated and starts_one(number + GROUP):  # unfinished: its own digits, or a separator inside it
            digits_allowed += sorted(self.separators)
        return True, torch.tensor(digits_allowed, dtype=torch.long)

    def __call__(self, logits, ys, src):
        for row, numbers in self.rows_with_digits(src):
            hold(logits, row, *self.allowed_after(numbers, *self.open_number(ys[row].tolist())))
        return logits
