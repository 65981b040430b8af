"""A word not written three times in a row: a decoding rule for the lesson's `Translator`.

The lesson's n-gram block (`transformer.decoding.block_repeated_ngrams`, 4-grams) stops a phrase from looping, but a
single word can still come back three and four times before any 4-gram repeats: on dev-news the shipped model wrote
"il secondo secondo secondo secondo passo", "un lungo lungo lungo lungo noto" and "altro music music music music".
Italian writes a word twice in a row now and then ("molto molto"), almost never three times, so `NoWordThrice`
forbids the token that would write a word a third time in a row, unless the English itself says a word three times
in a row ("ha ha ha"). Chosen on dev, dev-news and the demo set: docs/training-log.md#a-word-three-times-in-a-row."""

import torch

from .rules import LETTERS, RowsOfSource, Spelling, hold


class NoWordThrice(Spelling):
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, after each prefix `ys` (B, T) that has
    written a word of letters twice in a row, forbid the token that would write it a third time, unless its source
    `src` (B, S) says a word three times in a row itself or nothing else is left to write."""

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        self.saying_none_thrice = RowsOfSource(lambda source: not self.says_a_word_thrice(source))

    def last_words(self, prefix, count=3):
        """The last `count` words of the token ids `prefix` (of `word_tokens`; fewer where it holds fewer), read from
        the end: decoding asks after every token, and only the last words can make a word thrice."""
        start, starts = len(prefix), 0
        while start and starts < count:
            start -= 1
            starts += prefix[start] in self.word_starts
        return self.word_tokens(prefix[start:])

    def is_letters(self, word):
        """Whether the token ids `word` spell a word of letters alone ("secondo", not "2" or "...")."""
        return "".join(self.text.get(i, "") for i in word).isalpha()

    def says_a_word_thrice(self, ids):
        """Whether the token ids `ids` say a word of letters three times in a row, in any case ("Ha ha ha")."""
        words = LETTERS.findall(self.spelt(ids).lower())
        return any(a == b == c for a, b, c in zip(words, words[1:], words[2:]))

    def third_time(self, words):
        """The token that would end a word a third time in a row after `words` (of `word_tokens`), or None: a word
        that starts a word after two of one token ("▁secondo ▁secondo"), or the last token of two equal words the
        last word is that word short of ("▁a h ▁a h ▁a")."""
        if len(words) >= 2 and len(words[-1]) == 1 and words[-1] == words[-2] and self.is_letters(words[-1]):
            return words[-1][0]
        if len(words) >= 3 and words[-3] == words[-2] and words[-2][:-1] == words[-1] and self.is_letters(words[-2]):
            return words[-2][-1]
        return None

    def __call__(self, logits, ys, src):
        for row, _ in self.saying_none_thrice(src):
            token = self.third_time(self.last_words(ys[row, 1:].tolist()))
            if token is not None and torch.isfinite(logits[row]).sum() > 1:
                hold(logits, row, False, torch.tensor([token]))
        return logits
