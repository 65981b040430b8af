"""What the translator's decoding rules share (`characters.BytesAsWritten`, `numbers.NumbersAsWritten`,
`repeats.NoWordThrice`, `names.NamesAsWritten`, `copies.CopiesTranslated`), and the rules together as the one `rule`
the lesson's decoding takes (`transformer.decoding.apply_decoding_rules`)."""

import re

import torch

LETTERS = re.compile(r"[^\W\d_]+")  # a word as the rules and the reading see it: a run of letters
LAST_LETTERS = re.compile(r"[^\W\d_]+$")  # the word being written: "Arabia" in "dell'Arabia"
# What precedes a sentence's first word; an initial ("George W. Bush") ends no sentence.
SENTENCE_END = re.compile(r"(^|(?<!\b[A-Z])[.!?]\s+)$")


def writes_no_word(token):
    """Whether the vocabulary's `token` is no part of a word of the text: a special token (<s>, </s>, <unk>, <pad>)
    or a byte of a character the vocabulary lacks (<0xE6>)."""
    return token.startswith("<") and token.endswith(">")


class Rules:
    """Decoding rules applied in turn, as one `rule(logits, ys, src)`: what any of them forbids stays forbidden."""

    def __init__(self, *rules):
        self.rules = rules

    def __call__(self, logits, ys, src):
        for rule in self.rules:
            rule(logits, ys, src)
        return logits

    def for_model(self, model):
        """These rules for decoding with `model`: a rule that looks ahead with the model follows `model` afresh (its
        `for_model`); the others read only the text and serve any model."""
        return Rules(*(rule.for_model(model) if hasattr(rule, "for_model") else rule for rule in self.rules))


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


class Spelling:
    """What the tokens of a vocabulary write, for rules that follow words letter by letter: `text[i]` (token i
    without its "▁"), `word_starts` (the ids of tokens that start a word), `inside` ((id, text) of the others),
    `letters` (the ids of those that go on with a letter: "ford") and `special` (the ids of those that write no word:
    `writes_no_word`)."""

    def __init__(self, tokenizer):
        vocab = tokenizer.get_vocab()
        self.text = {i: token.removeprefix("▁") for token, i in vocab.items()}
        self.word_starts = {i for token, i in vocab.items() if token.startswith("▁")}
        self.inside = [(i, text) for i, text in self.text.items() if i not in self.word_starts and text]
        self.letters = torch.tensor([i for i, text in self.inside if text[0].isalpha()], dtype=torch.long)
        self.special = {i for i, text in self.text.items() if writes_no_word(text)}  # </s>, <0xE6>: read as no word

    def word_tokens(self, ids):
        """The token ids `ids` as words, each a tuple of ids from one that starts a word ("▁a h": ("▁a", "h"))."""
        words = []
        for i in ids:
            if i in self.word_starts or not words:
                words.append(())
            words[-1] += (i,)
        return words

    def words(self, ids):
        """The words that the token ids `ids` spell, each from a token that starts one ("▁Mol tere r": "Molterer")."""
        return ["".join(self.text.get(i, "") for i in word) for word in self.word_tokens(ids)]

    def spelt(self, ids):
        """The words the token ids `ids` spell, joined by spaces, special tokens and bytes left out."""
        return " ".join(self.words(i for i in ids if i not in self.special))

    def last_word_start(self, prefix):
        """The index in the token ids `prefix` of the last token that starts a word (0 when none does)."""
        start = len(prefix)
        while start and prefix[start - 1] not in self.word_starts:
            start -= 1
        return max(start - 1, 0)

    def open_word(self, prefix):
        """The letters the token ids `prefix` end in, from the last token that starts a word: the word being
        written ("" after a space or a punctuation mark)."""
        written = LAST_LETTERS.search("".join(self.text.get(i, "") for i in prefix[self.last_word_start(prefix) :]))
        return written.group() if written else ""
