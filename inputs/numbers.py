"""Numbers in a translation as the English writes them: a decoding rule for the lesson's `Translator`.

The vocabulary spells a number digit by digit ("600" is `▁6 0 0`), and a small model miscounts repeated digits:
part 14 wrote "Costa 60 euro." for "It costs 600 euros." and "55 1234" for "555 1234". Where the English holds
digits, `NumbersAsWritten` forbids, at each decoding step, a digit that would make a number the English does not
hold, and the end of a number that is not yet one of them: "60" can only go on to "600". Separators are free to
change (English "75,000" and "29.8" may become Italian "75.000" and "29,8"), a space between groups of three digits
may be kept or dropped ("40 000"), and a number may be written out in words: only digits are held to the English.
An English sentence without digits is decoded as the model alone decodes it. Chosen on dev, dev-news and the demo
set: docs/training-log.md#numbers-as-the-english-writes-them.

Numbers in words are the model's too: part 14 wrote "ha venti giorni" for "has twenty-eight days". `number_words`
gives the Italian words of the numbers an English sentence says (`italian_number`, `english_numbers`), which
`copies.CopiesTranslated` writes where the model begins another number word; a century's Roman numerals are held by
`CenturiesAsWritten`."""

import re
import unicodedata
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


ROMAN_LETTERS = "IVXLC"
ORDINAL = "(?:st|nd|rd|th)"  # "3rd", "19th"
CENTURY = "(?i:centur(?:y|ies))"  # "century", "centuries", in any case
CENTURY_WORD = re.compile(rf"\b{CENTURY}\b")
ORDINAL_NUMBER = re.compile(rf"\b(\d{{1,2}}){ORDINAL}\b")  # "19th"
ROMAN_CENTURY = re.compile(r"\b([IVX]+)[ -](?i:centur)")  # "the V century"
ROMAN = re.compile(r"\b(?=[IVX]{2,}\b)X{0,3}(?:IX|IV|V?I{0,3})\b")  # a Roman numeral the English holds: "XIX", "II"


def roman(number):
    """`number` (1 to 39) in Roman numerals: 19 is "XIX", as Italian writes a century ("il XIX secolo")."""
    tens, units = divmod(number, 10)
    return "X" * tens + ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"][units]


class CenturiesAsWritten:
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, hold the Roman numerals of a translation
    to the centuries its source `src` (B, S) names ("the 15th century": "il XV secolo") and the numerals it holds.

    Italian writes a century in Roman numerals, which the vocabulary spells letter by letter (`▁ X V I`), and the
    model miscounts them as it does digits: part 14 wrote "XVI" for "the 15th century" and "II" for "the 3rd". Where
    the English names a century, its ordinals in digits (`inputs.text.read_dates` reads a century's in words so) are
    the numerals it may write (`numerals`): a letter that would make a numeral none of them begins is forbidden, and
    so is ending a numeral of two or more letters before it is one of them; words stay free ("il quindicesimo
    secolo"). A numeral is a run of the letters I, V, X, L and C started by a word's first token ("▁I", "▁V") or
    after a token that ends in no letter ("▁", "'": "dell'XI"). One letter may end it, as the article "I" does ("I
    robot"), unless it follows a lone space ("▁ X": a numeral). Chosen on dev-news and the demo set:
    docs/training-log.md#centuries-in-roman-numerals."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.letters = {vocab[letter]: letter for letter in ROMAN_LETTERS if letter in vocab}  # inside a word
        self.starts = {vocab["▁" + letter]: letter for letter in ROMAN_LETTERS if "▁" + letter in vocab}  # "▁I"
        self.letterless = {i for token, i in vocab.items() if not token[-1:].isalpha()}  # "▁", "'", "("
        self.space = vocab.get("▁")  # "▁ X I X": what follows a lone space is a numeral, even one letter of it
        self.source_numerals = lru_cache(maxsize=4096)(self.numerals)
        self.allowed_after = lru_cache(maxsize=4096)(self.allowed_after_numeral)
        self.rows_with_centuries = RowsOfSource(self.source_numerals)  # [(row, its numerals)]

    def numerals(self, source):
        """The Roman numerals the token ids `source` (a tuple) may be translated with where it names a century: each
        ordinal's in digits ("XIX" for "the 19th century", "XII" and "XIII" for "the late 12th and early 13th
        centuries") and those the English holds ("World War II", "the V century"); empty where it names no century,
        and then decoding is the model's own."""
        text = self.tokenizer.decode(list(source))
        if not CENTURY_WORD.search(text):
            return frozenset()
        ordinals = {roman(int(n)) for n in ORDINAL_NUMBER.findall(text) if 1 <= int(n) <= 39}
        return frozenset(ordinals | set(ROMAN.findall(text)) | set(ROMAN_CENTURY.findall(text)))

    def open_numeral(self, prefix):
        """(The Roman numeral `prefix` (token ids) ends in, as letters, whether it follows a lone space); ("", False)
        when it ends in anything else, or in letters inside a word."""
        start = len(prefix)
        while start and prefix[start - 1] in self.letters:
            start -= 1
        run = "".join(self.letters[token] for token in prefix[start:])
        before = prefix[start - 1] if start else None
        if before in self.starts:
            return self.starts[before] + run, False
        return (run, before == self.space) if before is None or before in self.letterless else ("", False)

    def allowed_after_numeral(self, numerals, numeral, spaced):
        """What may follow the open `numeral` (`open_numeral`; `spaced`: after a lone space) when the source names
        `numerals`: (True, ids) when only the token ids `ids` (a tensor) may, (False, ids) when every token but `ids`
        may."""
        going_on = {
            token for token, letter in self.letters.items() if any(n.startswith(numeral + letter) for n in numerals)
        }
        # "XV" when the English names the 16th century: only its letters may follow, to "XVI"
        if (spaced or len(numeral) >= 2) and numeral not in numerals:
            return True, torch.tensor(sorted(going_on), dtype=torch.long)
        return False, torch.tensor(sorted(set(self.letters).difference(going_on)), dtype=torch.long)

    def __call__(self, logits, ys, src):
        for row, numerals in self.rows_with_centuries(src):
            numeral, spaced = self.open_numeral(ys[row].tolist())
            if numeral:
                hold(logits, row, *self.allowed_after(numerals, numeral, spaced))
        return logits


ITALIAN_UNITS = (
    "zero uno due tre quattro cinque sei sette otto nove dieci undici dodici tredici quattordici quindici sedici "
    "diciassette diciotto diciannove"
).split()
ITALIAN_TENS = "_ _ venti trenta quaranta cinquanta sessanta settanta ottanta novanta".split()


def italian_number(number):
    """`number` (0 to 999,999) in Italian words, as one word: 28 "ventotto", 23 "ventitré", 180 "centottanta", 2000
    "duemila"."""
    if number >= 1000:
        thousands, rest = divmod(number, 1000)
        head = "mille" if thousands == 1 else italian_number(thousands) + "mila"
        return head + (italian_number(rest) if rest else "")
    if number >= 100:
        hundreds, rest = divmod(number, 100)
        head = "cento" if hundreds == 1 else italian_number(hundreds) + "cento"
        tail = italian_number(rest) if rest else ""
        return (head[:-1] if tail[:1] == "o" else head) + tail  # "centottanta": Italian drops the vowel before "o"
    if number >= 20:
        tens, unit = divmod(number, 10)
        head = ITALIAN_TENS[tens]
        if unit in (1, 8):
            head = head[:-1]  # "ventuno", "ventotto"
        return head + ("tré" if unit == 3 else ITALIAN_UNITS[unit] if unit else "")
    return ITALIAN_UNITS[number]


ENGLISH_UNITS = {
    word: n
    for n, word in enumerate(
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
        "eighteen nineteen".split(),
        1,
    )
}
ENGLISH_TENS = dict(zip("twenty thirty forty fifty sixty seventy eighty ninety".split(), range(20, 100, 10)))
ENGLISH_ALONE = {"once": 1, "twice": 2, "dozen": 12, "fortnight": 15}  # "due volte", "una dozzina", "quindici giorni"
NUMBER_WORD = re.compile(r"[a-z]+|\d+")


def english_numbers(text, digits=True):
    """The numbers `text` says in words, and in digits unless not `digits`, in order: "twenty-eight" 28, "two
    hundred and fifty" 250, "a thousand" 1000, "sixty million" 60 (Italian writes it "sessanta milioni"), "600" 600;
    "thousands" none."""
    found, total, current, started, previous = [], 0, 0, False, ""

    def flush():
        if started:
            found.append(total + current)
        return 0, 0, False

    for word in NUMBER_WORD.findall(text.lower()) + [""]:
        value = ENGLISH_UNITS.get(word) or ENGLISH_TENS.get(word)
        if value:
            tens_open = current % 100 >= 20 and current % 10 == 0  # "twenty" waits for "eight"
            if started and not (current % 100 == 0 or (tens_open and value < 10)):
                total, current, started = flush()  # "two three": two numbers
            current, started = current + value, True
        elif word == "hundred" and (started and 0 < current < 100 or previous == "a"):
            current, started = max(current, 1) * 100, True
        elif word == "thousand" and (started or previous == "a"):
            total, current, started = total + max(current, 1) * 1000, 0, True
        elif word == "and" and started and current % 100 == 0:
            continue  # "two hundred and fifty"
        else:
            total, current, started = flush()  # "sixty million": sixty, as Italian writes it ("sessanta milioni")
            if digits and word.isdigit() and len(word) <= 6:
                found.append(int(word))
            elif word in ENGLISH_ALONE:
                found.append(ENGLISH_ALONE[word])
        previous = word
    return found


def plain(word):
    """`word` in lower case without its accents: "ventitré" and "Ventitre" are one number."""
    return unicodedata.normalize("NFD", word.lower()).encode("ascii", "ignore").decode()


# The Italian number words the model may write in place of another (2 to 9,999, thousands to 999,000, and the tens
# elided: "trent'anni"), without "sei", which is also "you are".
ITALIAN_NUMBERS = frozenset(
    plain(word)
    for word in [italian_number(n) for n in range(2, 10000)]
    + [italian_number(n * 1000) for n in range(10, 1000)]
    + [tens[:-1] for tens in ITALIAN_TENS[2:]]
    if word != "sei"
)
NUMBER_BEGINNINGS = frozenset(word[:end] for word in ITALIAN_NUMBERS for end in range(1, len(word) + 1))  # and whole
PER_CENT = "(?:percent|per cent)"
PERCENT_WORD = re.compile(rf"\b{PER_CENT}\b", re.IGNORECASE)


def number_words(text):
    """(said, allowed) for the English `text`: the Italian words of the numbers it says in words (`english_numbers`),
    in order, and the plain words a translation may write for its numbers: those and its numbers in digits in words,
    the tens elided ("vent'anni"), and "cento" where it says "percent" ("tre per cento")."""
    said = tuple(italian_number(n) for n in english_numbers(text, digits=False) if 1 < n < 1_000_000)
    every = [plain(italian_number(n)) for n in english_numbers(text) if 1 < n < 1_000_000]
    allowed = set(every) | {word[:-1] for word in every}
    if PERCENT_WORD.search(text):
        allowed.add("cento")
    return said, frozenset(allowed)
