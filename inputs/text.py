"""Text as people type it, read as the model reads best, behind the lesson's `Translator`: `CheckedTranslator` takes
strings only, reads at most what the model can use of them, replaces broken characters, reads capitals in sentence case,
dates, percentages and decimals as Italian writes them, an amount's currency in words, initials in full and a
capitalised word the model barely knows in lower case, writes numbers (`numbers`), the names the model never met
(`names`) and the characters its vocabulary spells in bytes (`characters`) as the English does and the words it would
copy or make up Italian for as its training pairs translate them (`copies`), and refuses decoding arguments outside
their limits (`checks`) with a clear error."""

import re
import string
from difflib import SequenceMatcher

from transformer.translator import Translator

from .characters import BytesAsWritten
from .checks import check_decoding, check_text
from .copies import CopiesTranslated
from .names import NamesAsWritten
from .numbers import CENTURY, ORDINAL, PER_CENT, CenturiesAsWritten, NumbersAsWritten
from .repeats import NoWordThrice
from .rules import LETTERS, SENTENCE_END, Rules

SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair: not a character, and UTF-8 cannot encode it
SHOUTED_WORD = re.compile(r"\b[^\W\d_]{2,}\b")  # words of two or more letters
SENTENCE_START = re.compile(r"(^|[.!?]\s+)(\w)")
ENGLISH_I = re.compile(r"\bi\b")  # the pronoun, also in i'm, i'll, i've, i'd
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
UNITS = "first second third fourth fifth sixth seventh eighth ninth".split()
TEENS = "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth".split()
# Ordinals in words up to a month's last day, and their numbers: "fifth" 5, "twenty-first" 21, "thirtieth" 30.
ORDINAL_WORDS = dict(zip(UNITS + TEENS, range(1, 20)))
ORDINAL_WORDS |= {"twentieth": 20, "thirtieth": 30, "thirty-first": 31}
ORDINAL_WORDS |= {f"twenty-{unit}": 20 + n for n, unit in enumerate(UNITS, 1)}


def alternatives(words):
    """A regex matching any of `words` in any case, the longest first ("twenty-first" before "first")."""
    return "(?i:" + "|".join(sorted(words, key=len, reverse=True)) + ")"


# A day in words: "first" is left as typed, for Italian writes "il primo maggio", as the model does.
DAY_WORDS = alternatives(word for word in ORDINAL_WORDS if word != "first")
JOINED = "(?:-? (?:and|or|to) (?:the )?|, |[-–])"  # "fifteenth and sixteenth", "eighteenth- and nineteenth-"
ORDINAL_WORD = re.compile(rf"\b{alternatives(ORDINAL_WORDS)}\b")


def dates_pattern(months):
    """The regex of `read_dates`: a day and a month ("the 12th of October", "15th November", "the fifth of May";
    "March 3rd, 1985", "September 19", "May the fifth", with its comma before a year) or centuries in words ("the
    nineteenth century", "the fifteenth and sixteenth centuries", "eighteenth-century")."""
    return re.compile(
        rf"\b(?:(?:(?P<day>\d{{1,2}}){ORDINAL}(?: of)?|(?P<day_word>{DAY_WORDS}) of) (?P<month>{months})\b"
        rf"|(?P<month_first>{months}) (?:(?P<day_after>\d{{1,2}}){ORDINAL}?|(?:the )?(?P<day_after_word>{DAY_WORDS}))"
        rf"\b(?!-)(?:,(?= \d{{4}}\b))?"
        rf"|(?P<centuries>(?:{ORDINAL_WORD.pattern}{JOINED})*{ORDINAL_WORD.pattern})[ -]{CENTURY}\b)"
    )


DATES = dates_pattern(MONTHS)  # "march 3 miles" is not a date
DATES_ANY_CASE = dates_pattern(f"(?i:{MONTHS})")  # text typed in capitals, its months in lower case once unshouted
PERCENT = re.compile(rf"\b(\d+(?:[.,]\d+)?) ?{PER_CENT}\b", re.IGNORECASE)  # "29 percent", "5.5 per cent"
# A currency sign -> what is read after the amount, (for 1, for any other): the words the model translates ("20 euros":
# "20 euro"), or the pound's own sign, which it translates after the amount ("12 £": "12 sterline") and not as a word
# ("pounds": "libbre").
CURRENCIES = {"€": ("euro", "euros"), "$": ("dollar", "dollars"), "¥": ("yen", "yen"), "£": ("£", "£")}
SIGN = "[" + "".join(CURRENCIES) + "]"
AMOUNT = r"\d+(?:[.,]\d+)*(?: (?i:thousand|million|billion|trillion)\b)?"  # "20", "250,000", "8.5 billion"
# "€20", "$ 8.5 billion" (not "US$5"), or "20€", "20 €"
AMOUNTS = re.compile(rf"(?<![^\W\d_])(?P<sign>{SIGN}) ?(?P<amount>{AMOUNT})|\b(?P<before>{AMOUNT}) ?(?P<after>{SIGN})")
# "31.25", "8.5", with the word before it and what follows it; not "1.2.3", "2.000" (thousands or not), "v2.1",
# "GIMP-2.10", "libm-2.7.so", nor a whole "2.0", which is a version's or a setting's more often than a measure's
DECIMAL = re.compile(
    r"(?:(?P<word>\S+) )?(?<![\w.,])(?<!\w-)(?P<units>\d+)\.(?P<decimals>\d{1,2})(?<!\.0)(?![\d.,]*\d|\.\w)"
    r"(?=(?P<after>.{0,12}))"
)
# A time of day, which Italian writes with its point ("alle 7.30"): after these words, or before "am"/"pm"/"o'clock"
TIME_BEFORE = {"at", "by", "until", "till", "before", "after", "from", "between", "to", "and", "around", "about"}
TIME_AFTER = re.compile(r" ?(?:[ap]\.?m\b|o'clock|h\b|hours?\b|hrs\b)", re.IGNORECASE)
# What makes a number after those words a quantity, not a time ("at 7.50 euros", "to 23.07 dollars")
QUANTITY_AFTER = re.compile(
    rf" ?(?:%|(?:{'|'.join(word for words in CURRENCIES.values() for word in set(words))}|cents?|thousand|million"
    r"|billion|trillion)\b)",
    re.IGNORECASE,
)
# A version, a chapter or a model's number, after a name or such a word: "Python 3.11", "LibreOffice 5.0", "version
# 2.1", "the Jazz 1.4" (not after a word in capitals: "EUR 11.2 billion")
NUMBERED = re.compile(r".*[A-Z].*[a-z].*|version|release|chapter|section|figure|table|verse|step|part|model|pavilion")
# Initials the model met in too few pairs to know them, and the words it knows them by
INITIALS = {"EU": "European Union", "UN": "United Nations", "UK": "United Kingdom", "US": "United States"}
# "EU", "U.S." and whether a dotted one ends the text (its point then ends the sentence too); not "US$5", "U.S.-led",
# nor before a capitalised word ("the UN Security Council", "U.S. Congress"), which Italian writes in another order
DOTTED_INITIALS = "|".join(re.escape(".".join(initials) + ".") for initials in INITIALS)  # E\.U\.|U\.N\.|…
# "US" is "us" too, in capitals ("HELP US"): undotted, it is read in full after "the" only ("in the US")
UNDOTTED_INITIALS = "|".join(rf"(?<=\b[Tt]he ){initials}" if initials == "US" else initials for initials in INITIALS)
INITIALS_TYPED = re.compile(
    rf"\b(?P<initials>{DOTTED_INITIALS}|{UNDOTTED_INITIALS})(?![-$\w])(?P<end>\s*$)?(?!\s+[A-Z])"
)


def ordinal(number):
    """`number` (1 to 31) written as English writes an ordinal in digits: "1st", "2nd", "13th", "21st"."""
    return f"{number}{'th' if number in (11, 12, 13) else {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"


def mostly(words, test, at_least):
    """Whether there are `at_least` `words` and two thirds of them pass `test`: text in capitals (`unshout`), a title
    in Title Case (`is_title`)."""
    return len(words) >= at_least and sum(map(test, words)) >= 2 / 3 * len(words)


def unshout(text):
    """Text typed in capitals ("WHERE IS THE BATHROOM?") in sentence case ("Where is the bathroom?"); other text
    unchanged. In capitals, every word is spelled letter by letter by a vocabulary learnt on ordinary text, which
    the model rarely sees; in sentence case it reads words it knows. Names lose their capital, which lower-cased
    training input teaches the model to restore. Shouted: two or more words, two thirds of them in capitals."""
    if not mostly(SHOUTED_WORD.findall(text), str.isupper, at_least=2):
        return text
    text = SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text.lower())
    return ENGLISH_I.sub("I", text)


def read_each(pattern, text, reading):
    """(`text` with each match of `pattern` replaced as `reading(match)` reads it, [(each as typed, as read)]), the
    readings' one mechanism: `reading` gives (as typed, as read) to write the read in place of the whole match, (as
    typed, as read, written) where the match holds more than what is read, or None to leave the match as typed."""
    found = []

    def replaced(match):
        named = reading(match)
        if named is None:
            return match.group()
        found.append(named[:2])
        return named[-1]

    return pattern.sub(replaced, text), found


def read_dates(text, any_case=False):
    """(`text` with each date of a day and a month written as Italian writes it, the day first and as a cardinal
    number, and each century in words in digits, [(each as typed, as read)]): "I was born on 3 March 1985" for "I
    was born on March 3rd, 1985", "the 5 May" for "the fifth of May", "the 19th century" for "the nineteenth century";
    other text unchanged. Months are matched in any case where `any_case` (text typed in capitals: `unshout`). The
    model met few English dates: read "March 3rd", it wrote "il 3rdine", "the fifth of May" "il quinto di maggio",
    "the 15th November" "al XVII secolo" (a century, as "the 15th" often is), and "December 24th" "il 24
    settembre"; read "3 March", it writes "il 3 marzo". A century in words it barely knows ("nel Nineteentesimo
    secolo"); in digits it writes Roman numerals, held to the English's (`inputs.numbers.CenturiesAsWritten`). Chosen
    on dev-news and the demo set: docs/training-log.md#dates-read-as-italian-writes-them and
    #centuries-in-roman-numerals."""

    def read(match):
        if match["centuries"]:
            ordinals = match["centuries"]
            as_read = ORDINAL_WORD.sub(lambda word: ordinal(ORDINAL_WORDS[word.group().lower()]), ordinals)
            return match.group(), as_read + match.group()[len(ordinals) :]
        day_word = match["day_word"] or match["day_after_word"]
        day = match["day"] or match["day_after"] or str(ORDINAL_WORDS[day_word.lower()])
        return match.group().rstrip(","), f"{day} {(match['month'] or match['month_first']).capitalize()}"

    return read_each(DATES_ANY_CASE if any_case else DATES, text, read)


def with_currency_words(text):
    """(`text` with each amount in a currency sign read as Italian writes it, the currency after the amount, in words
    (`CURRENCIES`), [(each as typed, as read)]): "20 euros" for "€20" and "20€". Read with its sign, the model wrote
    "Costa xi20." for "It costs €20.", "Costa 20 luglio." for "It costs 20€.", "Costa 20 $." for "It costs 20 €." and
    "circa 47" for "about $ 47"; read "20 euros", it writes "Costa 20 euro.". Chosen on dev-news and by hand:
    docs/training-log.md#amounts-with-their-currency-in-words."""

    def in_words(match):
        amount, sign = match.group("amount") or match.group("before"), match.group("sign") or match.group("after")
        one, other = CURRENCIES[sign]
        return match.group(), f"{amount} {one if amount == '1' else other}"

    return read_each(AMOUNTS, text, in_words)


def is_time(units, decimals, word, after):
    """Whether `units`.`decimals` (two digits, the units a day's hours), after `word` (its punctuation stripped) and
    before `after`, is a time of day: "at 7.30", "7.30 pm", not "at 7.50 euros"."""
    if len(decimals) != 2 or int(units) > 24 or int(decimals) > 59 or QUANTITY_AFTER.match(after):
        return False
    return word.lower() in TIME_BEFORE or TIME_AFTER.match(after) is not None


def with_decimal_commas(text):
    """(`text` with each decimal number written with the comma Italian writes it with, [(each as typed, as read)]):
    "31,25 dollars" for "31.25 dollars". Read with the point, the model kept it ("31.25 dollari", "il 29.8%"), which
    an Italian reader takes for thousands; read with the comma, it writes "31,25 dollari". A time of day
    (`is_time`: "at 7.30"), a version or a model's number ("Python 3.11", "the Jazz 1.4": `NUMBERED`), and three
    decimals ("2.000", thousands or not) are read as typed. Chosen on dev-news:
    docs/training-log.md#decimals-with-the-italian-comma."""

    def with_comma(match):
        units, decimals, after = match.group("units", "decimals", "after")
        word = (match.group("word") or "").strip(string.punctuation)
        if is_time(units, decimals, word, after) or NUMBERED.fullmatch(word):
            return None
        read = f"{units},{decimals}"
        return f"{units}.{decimals}", read, match.group()[: match.start("units") - match.start()] + read

    return read_each(DECIMAL, text, with_comma)


def with_initials_in_full(text):
    """(`text` with the initials of `INITIALS` written in full, [(each as typed, as read)]): "the European Union" for
    "the EU". Its pairs hold them a handful of times: read "EU", the model wrote "la Terra" ("I work for the EU.":
    "Lavoro per la Terra."), "UN" it copied ("l'UN"); read in full, it writes "l'Unione europea", "le Nazioni Unite".
    Chosen on dev-news: docs/training-log.md#initials-read-in-full."""

    def in_full(match):
        typed = match["initials"]
        read = INITIALS[typed.replace(".", "")]
        ends = "." if typed.endswith(".") and match["end"] is not None else ""
        return typed, read, read + ends + (match["end"] or "")

    return read_each(INITIALS_TYPED, text, in_full)


def with_percent_signs(text):
    """(`text` with each percentage in digits written with its sign, as Italian news writes it, [(each as typed, as
    read)]): "29%" for "29 percent". Read "3 percent", the model wrote "per cento" and dropped the number ("I prezzi
    sono rossi per cento"), or repeated it ("25,6 per cento per cento percento"); read "3%", it writes "il 3%". Chosen
    on dev-news: docs/training-log.md#percentages-with-their-sign."""
    return read_each(PERCENT, text, lambda match: (match.group(), match.group(1) + "%"))


def is_title(words):
    """Words of a title written in Title Case ("Attention Is All You Need"): four or more words of two or more
    letters (three can be a name: "Happy New Year"), two thirds of them capitalised."""
    return mostly([w for w in words if len(w) >= 2], lambda w: w[0].isupper(), at_least=4)


def capitalised(word):
    """Whether `word` is written with a capital and then small letters ("Attention", "Boston"; not "I" or "NATO")."""
    return len(word) >= 2 and word[0].isupper() and word[1:].islower()


def lower_rare_capitals(text, rare):
    """`text` with each capitalised word that starts a sentence (every one, in a title: `is_title`) in lower case
    where `rare(word)` says the model met it capitalised too rarely to know it, and in lower case often: training
    sentences start with a capital, so "Attention" opening a sentence was met a handful of times, "attention" hundreds
    (`modeldir.seen.WordCounts.rarely_capitalised`). Names keep their capital ("Boston"), and so does a word met
    capitalised often ("Happy", as in "Happy New Year!")."""
    title = is_title(LETTERS.findall(text))

    def read(match):
        word = match.group()
        starts = title or SENTENCE_END.search(text, 0, match.start()) is not None
        return word.lower() if starts and capitalised(word) and rare(word) else word

    return LETTERS.sub(read, text)


def read_in_lower_case(typed, read):
    """The capitalised words of `typed` that the translator `read` (its `source_text`) in lower case, in order: what
    the page names, so that a learner seeing the token "▁attention" for "Attention" knows why."""
    typed_words, read_words = LETTERS.findall(typed), LETTERS.findall(read)
    # Paired where they read the same in lower case: a date or a percentage read otherwise ("3rd of May" as "3 May",
    # "29 percent" as "29%") has words the read text lacks.
    matcher = SequenceMatcher(None, [w.lower() for w in typed_words], [w.lower() for w in read_words], autojunk=False)
    pairs = ((typed_words[i + k], read_words[j + k]) for i, j, n in matcher.get_matching_blocks() for k in range(n))
    return [word for word, seen in pairs if capitalised(word) and seen == word.lower()]


def capitalised_like(typed, read, translation):
    """`translation` with its first letter capitalised when `typed`'s is and the translator `read` it in lower case
    (`lower_rare_capitals`: "computers are..." for "Computers are..."): the model starts its translation as what it
    reads starts."""
    words = [LETTERS.search(text) for text in (typed, read, translation)]
    if None in words or not (words[0].group()[0].isupper() and words[1].group()[0].islower()):
        return translation
    first = words[2].start()  # the translation's first letter
    return translation[:first] + translation[first].upper() + translation[first + 1 :]


def without_lone_surrogates(text):
    """`text` with UTF-16 surrogate pairs joined into their character and lone halves replaced by U+FFFD. A
    JavaScript client that cuts a string by length can split an emoji into halves; the text around it still
    deserves a translation, so the half is replaced rather than the whole input refused."""
    if SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class CheckedTranslator(Translator):
    """The lesson's `Translator` for text from people (`modeldir.directory.open_model` opens this one)."""

    def __init__(self, model, tokenizer, **settings):
        super().__init__(model, tokenizer, **settings)
        self.unshout = True  # read text in capitals in sentence case (`unshout`); False feeds it as typed
        # The rules that need only the vocabulary, built once (`know_words` adds the word counts' to them): characters
        # spelt in bytes, digits and a century's Roman numerals as the English writes them, no word three times in a
        # row. `rule` is what decoding applies; None decodes as the model alone.
        self.vocabulary_rules = (
            BytesAsWritten(tokenizer),
            NumbersAsWritten(tokenizer),
            CenturiesAsWritten(tokenizer),
            NoWordThrice(tokenizer),
        )
        self.rule = Rules(*self.vocabulary_rules)
        # Whether the model met a capitalised word too rarely to know it (`lower_rare_capitals`); `open_model` sets it
        # from the directory's word counts (`know_words`). None: capitalised words are read as typed.
        self.rare_capital = None
        # Characters of a text read at most: max_source_tokens of the vocabulary's longest token. The rest cannot
        # reach the model anyway, so a 10 MB input costs what a long sentence costs.
        self.max_source_chars = self.max_source_tokens * max(map(len, tokenizer.get_vocab()))

    def know_words(self, counts):
        """Read and write by what the model's training pairs held (`modeldir.seen.WordCounts`): a capitalised word it
        barely knows read in lower case (`rare_capital`), a name it never met written as the English writes it,
        beside the numbers (`NamesAsWritten`), and a word it starts to copy, or makes up Italian for, that its pairs
        translate written as they translate it, and a phrase's one Italian word it splits written whole
        (`CopiesTranslated`)."""
        self.rare_capital = counts.rarely_capitalised
        self.rule = Rules(
            *self.vocabulary_rules,
            NamesAsWritten(self.tokenizer, counts.never_met),
            CopiesTranslated(
                self.tokenizer,
                counts.all_translated,
                self.model,
                counts.italian,
                counts.loanwords(),
                counts.phrases,
                counts.english,
                counts.compounds,
            ),
        )

    def reading(self, text):
        """(`text` as the model reads it, the dates, percentages, amounts, decimals and initials read otherwise in it,
        each (as typed, as read)): its first max_source_chars characters, lone surrogates replaced
        (`without_lone_surrogates`), in sentence case if typed in capitals (`unshout`), dates, percentages, amounts and
        decimals as Italian writes them (`read_dates`, `with_percent_signs`, `with_currency_words`,
        `with_decimal_commas`), initials in full (`with_initials_in_full`), rare capitalised words in lower case
        (`lower_rare_capitals`). The page names what was read otherwise from here, so it names only what the model
        read."""
        typed = without_lone_surrogates(text[: self.max_source_chars])
        text = unshout(typed) if self.unshout else typed
        text, dates = read_dates(text, any_case=text != typed)
        text, percentages = with_percent_signs(text)
        text, amounts = with_currency_words(text)
        text, decimals = with_decimal_commas(text)
        text, initials = with_initials_in_full(text)
        read = text if self.rare_capital is None else lower_rare_capitals(text, self.rare_capital)
        return read, dates + percentages + amounts + decimals + initials

    def source_text(self, text):
        """`text` as the model reads it (`reading`)."""
        return self.reading(text)[0]

    def target_text(self, text, ids):
        """`Translator.target_text`, starting with a capital where `text` did before it was read in lower case
        (`capitalised_like`)."""
        return capitalised_like(text, self.source_text(text), super().target_text(text, ids))

    def encode_source(self, texts):
        """`Translator.encode_source` of each text as the model reads it (`source_text`); a text cut to
        max_source_chars counts as truncated, whatever its tokens."""
        if not isinstance(texts, (list, tuple)):
            raise ValueError(f"texts must be a list of strings, got {type(texts).__name__}")
        for i, text in enumerate(texts):
            check_text(text, f"texts[{i}]")
        ids, truncated = super().encode_source([self.source_text(t) for t in texts])
        return ids, [cut or len(t) > self.max_source_chars for t, cut in zip(texts, truncated)]

    def translate_ids(self, texts, beam=1, use_cache=True, max_tokens=4096, sampling=None):
        """`Translator.translate_ids`, `beam` in 1..checks.MAX_BEAM and `sampling` checked first."""
        check_decoding(beam, sampling)
        return super().translate_ids(texts, beam, use_cache, max_tokens, sampling)

    def translate(self, text_or_list, beam=1, use_cache=True, sampling=None):
        """`Translator.translate` of a string or a list (or tuple) of strings; a ValueError for anything else."""
        if not isinstance(text_or_list, (str, list, tuple)):
            raise ValueError(f"text must be a string or a list of strings, got {type(text_or_list).__name__}")
        return super().translate(text_or_list, beam, use_cache, sampling)
