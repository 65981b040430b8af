"""Names the model never met, in a translation as the English writes them: a decoding rule for the lesson's
`Translator`.

A name the training pairs never held ("Molterer", "Dirndl") reaches the model as pieces of the vocabulary
(`▁Mol tere r`), and a small model copies the first pieces and then guesses: part 14 wrote "Wilhelm Molta controese"
for "Wilhelm Molterer" and "Dirl" for "Dirndl". Where the English holds a capitalised word its model never met
(`modeldir.seen.WordCounts.never_met`), `NamesAsWritten` lets a word of the translation that has begun as that name
(its first PREFIX letters or more, with the same capital) go on only as the name goes on, letter for letter, until it
is the whole name, and then end. A word that never begins so is free, and so is a name the model met: "London" may
become "Londra".
Chosen on dev, dev-news and the demo set: docs/training-log.md#names-the-model-never-met."""

from functools import lru_cache

import torch

from .rules import LETTERS, RowsOfSource, Spelling, hold

PREFIX = 3  # letters of a name written before it is held: fewer could be the start of an Italian word ("Su", "Mo")


class NamesAsWritten(Spelling):
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, after each prefix `ys` (B, T) that ends
    in the beginning of a name its source `src` (B, S) holds and the model never met (`never_met(word)`), forbid
    every token but those that go on spelling it, and after the whole name, the letters that would go on with it."""

    def __init__(self, tokenizer, never_met):
        super().__init__(tokenizer)
        self.never_met = never_met
        # Decoding asks at every step: each source's names, and what may follow a name's beginning, are worked out once.
        self.source_names = lru_cache(maxsize=4096)(self.names)
        self.going_on = lru_cache(maxsize=4096)(self.tokens_going_on)
        self.rows_with_names = RowsOfSource(self.source_names)  # [(row, its names)] of the rows with names

    def names(self, source):
        """The capitalised words of the token ids `source` (a tuple), runs of letters longer than PREFIX, that the
        model never met."""
        return frozenset(
            run
            for word in self.words(source)
            for run in LETTERS.findall(word)
            if run[0].isupper() and len(run) > PREFIX and self.never_met(run)
        )

    def tokens_going_on(self, names, word):
        """What may follow `word` (`open_word`) when the source holds `names`: (True, ids) when only the token ids
        `ids` (a tensor) may, those that go on spelling a name `word` has begun; (False, ids) when every token but
        `ids` may, those that would go on with letters after a whole name (Italian adds none to a name, and the
        model, free again, would write its end twice: "Guildfordford"); None when `word` is neither, or is a whole
        name that another goes on from."""
        if len(word) < PREFIX:
            return None
        begun = [name for name in names if name.startswith(word) and name != word]
        if word in names:
            return None if begun else (False, self.letters)
        if not begun:
            return None
        going_on = [i for i, text in self.inside if any(name.startswith(word + text) for name in begun)]
        return True, torch.tensor(going_on, dtype=torch.long)

    def __call__(self, logits, ys, src):
        for row, names in self.rows_with_names(src):
            held = self.going_on(names, self.open_word(ys[row].tolist()))
            if held is not None:
                hold(logits, row, *held)
        return logits
