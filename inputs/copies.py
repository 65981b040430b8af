"""English words the model copies where its training pairs translate them: a decoding rule for the lesson's
`Translator`.

A word met in a handful of training pairs is one a small model half knows: part 14 wrote "Le Alps separano l'Italia
dalla Francia" and "La Sicily è l'isola più grande", though its pairs hold "Alps" nine times beside "Alpi" and never
copy it. The model directory's word counts keep, for each English word its pairs translate and rarely or never copy,
the Italian word that goes with it in them (`modeldir.seen.translations`). Where the model is about to finish copying
such a word of its English (the copy is its most likely next token), `CopiesTranslated` writes that Italian word
instead, from the letters written so far ("Al" + "pi", not "Al" + "ps"). Where a copy's letters leave the Italian
word before its last token ("▁E" + "aster" cannot become "Pasqua"), the rule looks ahead at the token where they would
leave it: it follows the model alone to the word's end, and where that spells the English word whole, it writes the
Italian word from there ("Buona Pasqua!", not "Buona Easter!"). A translation that does not copy the word is free.
Chosen on dev, dev-news and the demo set: docs/training-log.md#words-the-model-copies."""

from collections import OrderedDict
from functools import lru_cache

import torch

from .rules import LETTERS, SENTENCE_END, RowsOfSource, Spelling, hold, writes_no_word

SHORTEST = 3  # letters of the shortest word followed: shorter ones ("di", "la") are written everywhere
MAX_BEGUN = 4096  # the Italian words begun that are remembered


def words_and_starts(text):
    """(word, whether it starts a sentence) for the words of `text`: runs of SHORTEST letters or more."""
    for match in LETTERS.finditer(text):
        if len(match.group()) >= SHORTEST:
            yield match.group(), SENTENCE_END.search(text, 0, match.start()) is not None


def keyed_words(text):
    """The words of `text` as the training pairs are counted by them: as typed, but a sentence's first word in lower
    case, where a capital says only that a sentence starts ("Fuel", "Turkey")."""
    for word, first in words_and_starts(text):
        yield word.lower() if first else word


class CopiesTranslated(Spelling):
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, where the most likely next token after
    the prefix `ys` (B, T) finishes copying a word of the source `src` (B, S) that `translated` (a dict: English word,
    as `keyed_words` gives it, -> Italian word) holds, forbid every token but those that go on spelling its Italian
    word from what is written; then hold the word so begun to its end, and end it there."""

    def __init__(self, tokenizer, translated, model=None):
        super().__init__(tokenizer)
        self.translated = translated
        self.model = model  # followed ahead where a copy may begin (`copies_ahead`); None: not followed
        self.special = {i for i, text in self.text.items() if writes_no_word(text)}  # </s>, <0xE6>: read as no word
        # {(source, prefix): (Italian word, the open word then)} where this rule began an Italian word in place of a
        # copy: decoding asks again at each of its letters, and holds it to its end. The oldest go first.
        self.begun = OrderedDict()
        self.source_copies = lru_cache(maxsize=4096)(self.copies)
        self.going_on = lru_cache(maxsize=4096)(self.tokens_spelling)
        self.copies_ahead = lru_cache(maxsize=4096)(self.copies_whole)
        self.encoded = lru_cache(maxsize=64)(self.encode)  # a sentence's copies are looked ahead at several steps
        self.rows_with_copies = RowsOfSource(self.with_copies)  # [(row, (its source, its words))]

    def copies(self, source):
        """((English word, Italian word), ...) of the token ids `source` (a tuple): its words that `translated`
        holds, a sentence's first word found as typed where it is held so ("Sicily"), else in lower case."""
        found = {}
        for typed, first in words_and_starts(" ".join(self.words(i for i in source if i not in self.special)).strip()):
            for key in (typed, typed.lower()) if first else (typed,):
                if key in self.translated:
                    found.setdefault(typed.lower(), self.translated[key])
                    break
        return tuple(found.items())

    def with_copies(self, source):
        """(`source`, its `copies`) when it has any, else (): decoding's steps then need not read `src` again."""
        copies = self.source_copies(source)
        return (source, copies) if copies else ()

    def tokens_spelling(self, word, written, starting):
        """The ids (a tensor) of the tokens that go on spelling `word` after the open word `written`: tokens that
        start a word when `starting` (`written` is then ""), else tokens inside one. None when `written` does not
        begin `word` or is all of it."""
        if not word.lower().startswith(written.lower()) or written.lower() == word.lower():
            return None
        rest = word[len(written) :]
        if starting:
            ids = [i for i in self.word_starts if self.text[i] and rest.startswith(self.text[i])]
        else:
            ids = [i for i, text in self.inside if rest.startswith(text)]
        return torch.tensor(ids, dtype=torch.long) if ids else None

    def begun_word(self, source, prefix, written):
        """The Italian word this rule began in place of a copy, when the open word `written` of `prefix` (a list of
        ids) is one it began after the English `source` (a tuple), with nothing else written since; else None."""
        for end in range(self.last_word_start(prefix), len(prefix)):  # begun at an earlier step, not this one
            begun = self.begun.get((source, tuple(prefix[:end])))
            if begun is not None:
                italian, then = begun  # its Italian word, and the open word when it began it
                since = "".join(self.text.get(i, "") for i in prefix[end:])
                if then + since == written:
                    return italian
        return None

    def copied(self, source, copies, prefix, written, best):
        """The Italian word of the English word of `copies` that the token `best` finishes copying after the open
        word `written` ("" when `best` starts a word) of the ids `prefix`. Where the copy begins the Italian word too
        ("▁protest" may begin "protestano"), only when the model would end the word there (`copies_ahead`: "pilot",
        not "pilota"). None when it copies none."""
        spelt = (written + self.text[best]).lower()
        for english, italian in copies:
            if english != spelt:
                continue
            if not italian.lower().startswith(spelt):
                return italian
            if self.model is not None and self.copies_ahead(source, tuple(prefix), best, english):
                return italian
        return None

    def encode(self, source):
        """The model's encoder output (1, S, C) and source mask for the source ids `source` (a tuple)."""
        with torch.inference_mode():
            return self.model.encode(torch.tensor([source], device=next(self.model.parameters()).device))

    def copies_whole(self, source, prefix, best, english):
        """Whether the model alone, writing the token `best` after the ids `prefix` (a tuple) for the source ids
        `source` (a tuple), goes on to write the word `english` and end it: its most likely tokens followed while they
        spell `english`'s letters, to the next word."""
        memory, src_mask = self.encoded(source)
        with torch.inference_mode():
            ys = torch.tensor([prefix + (best,)], device=memory.device)  # (1, T)
            word = self.open_word(prefix + (best,))
            while english.startswith(word.lower()):
                last = self.model.decoder_output(ys, memory, src_mask)[:, -1]  # (1, C): only the next token's
                following = int(self.model.output_projection(last).argmax())
                if following in self.word_starts or not self.text[following][:1].isalpha():
                    break  # a word, a space or a mark follows (</s> and bytes are no letters either)
                word += self.text[following]
                ys = torch.cat([ys, ys.new_tensor([[following]])], dim=1)  # (1, T + 1)
        return word.lower() == english

    def copy_leaving(self, source, copies, prefix, written, best):
        """The Italian word of the English word of `copies` that the token `best`, after the open word `written` of
        the ids `prefix`, goes on copying where its letters leave the Italian word's, capitals counted ("" + "E" for
        "Easter" leaves "Pasqua", "" + "T" for "Turkish" leaves "turco", "A" + "ug" for "August" "agosto"), when the
        model would copy it whole (`copies_ahead`): the last token at which the Italian word can still be written.
        None when it leaves none, or would not copy it."""
        if self.model is None:
            return None
        spelt = written + self.text[best]
        for english, italian in copies:
            leaves = english.startswith(spelt.lower()) and not italian.startswith(spelt)
            if leaves and italian.lower().startswith(written.lower()):
                if self.copies_ahead(source, tuple(prefix), best, english):
                    return italian
        return None

    def __call__(self, logits, ys, src):
        for row, (source, copies) in self.rows_with_copies(src):
            prefix = ys[row].tolist()
            written = self.open_word(prefix)
            italian = self.begun_word(source, prefix, written)
            if italian is not None and written.lower() == italian.lower():
                hold(logits, row, False, self.letters)  # the word is written whole: it ends there
                continue
            begins, starting = italian is None, False
            if begins:
                best = int(logits[row].argmax())
                starting = best in self.word_starts
                written = "" if starting else written
                if starting and not any(LETTERS.search(self.text[i]) for i in prefix if i not in self.special):
                    copies = tuple((en, it[0].upper() + it[1:]) for en, it in copies)  # the translation's first word
                italian = self.copied(source, copies, prefix, written, best)
                if italian is None:
                    italian = self.copy_leaving(source, copies, prefix, written, best)
                if italian is None:
                    continue
            held = self.going_on(italian, written, starting)
            if held is None or not torch.isfinite(logits[row, held]).any():
                continue  # nothing writes it from here (another rule forbids it): the model goes on alone
            if begins:
                self.begun[(source, tuple(prefix))] = (italian, written)
                while len(self.begun) > MAX_BEGUN:
                    self.begun.popitem(last=False)  # one call: safe beside another thread's decoding
            hold(logits, row, True, held)
        return logits
