"""Does an input look like English? The model translates English only, and turns French, German, Spanish or
Italian into confident nonsense, so the app warns when the input looks like one of those instead.

The rule, small enough to read and explain: count the words that are frequent *function words* (articles,
pronouns, auxiliaries, prepositions, greetings, everyday verbs) of English and of each of the four languages. The
foreign lists leave out every word English also uses ("a", "in", "die", "come", "per", "son"), so such a word counts
for no language. A word spelled with a letter English does not use (é, ü, ß, ñ, ...) counts as foreign too, but
only next to at least one foreign function word, so that "José" or "café" alone stay English. The input does not
look like English when its foreign words outnumber its English ones and make at least a third of its words.
Numbers, names and capitals (the text is lower-cased first) count for no language.
`python -m bench.language_check` measures the false alarms on the English of the test sets and the detection
rate on sentences of the four languages (data/demo/not-english*.tsv).
"""

import re
from dataclasses import dataclass

from .checks import check_text

ENGLISH_WORDS = frozenset(
    """
    the an is are were be been being of to and that it you he she we they this these those what which with for on
    from by or but if how why where when who whom whose have has had do does did not can could would should shall
    may might must my your yours his her hers its our their them him me us i i'm i've i'll i'd you're you've
    you'll he's she's it's we're they're that's there's what's don't doesn't didn't can't won't isn't aren't wasn't
    weren't haven't hasn't couldn't wouldn't shouldn't there here at about into over under after before because
    than then very too just please thank thanks hello hi yes good morning evening night bye any some all every
    each much many more most who's let's let going want need like know think see get go said say as so was will
    also am up out one now
""".split()
)

# The frequent function words of each language, without any word English also uses ("die", "war", "son", "era",
# "per", "come", "pour", "con", "no" are left out by hand, the English list's words here); a word shared by two of
# the languages counts for both.
FOREIGN_WORDS = {
    "French": """
        je j' tu il elle nous vous ils elles on est sont suis es sommes êtes ai avons avez ont était étais été
        les des du de une un le la l' d' en et ou où qui que qu' quoi pas ne n' ni avec dans sur sous chez
        par mais très bien merci bonjour bonsoir salut voudrais veux veut peux peut dois doit faut vais va allons
        ce c' cet cette ces ça mon ma mes ton ta tes notre votre nos vos leur leurs au aux oui non moi toi lui
        eux se s' me m' te t' y aujourd'hui demain hier plaît beaucoup rien toujours jamais pourquoi comment
        quand aussi encore déjà être avoir faire fait dit voir tout tous toute toutes plus moins peu trop ici
    """,
    "German": """
        ich du er sie es wir ihr ist sind bin bist hast habe haben hatte waren und oder nicht kein keine
        keinen der den dem des das ein eine einen einem einer eines mit auf für von vom zu zum zur bei nach aus
        im ins um über unter durch gegen ohne wie wo woher wohin warum wann wer heute morgen gestern zeit jahr
        jahre uhr danke bitte guten abend nacht ja nein noch schon sehr auch aber wenn weil dass ob mein meine
        dein deine sein seine ihre unser euer mich mir dich dir sich uns euch wird werden kann können muss müssen
        möchte willst gibt geht gehen kommen machen sagen nur hier dort jetzt immer nie nichts alles etwas
        viel viele schön neu neue
    """,
    "Spanish": """
        el los las es está están estoy estás soy eres somos fue y que qué quién de en por para una un del
        al lo le les se me te nos su sus mi mis tu tú yo usted ustedes él ella muy pero hoy ayer mañana tiempo
        gracias hola buenos buenas días noches dónde cómo cuándo cuánto cuánta hay tengo tiene tienes tenemos
        quiero quieres puedo puedes nosotros ellos ellas también porque siempre nunca nada mucho mucha muchos
        muchas este esta estos estas eso esto aquí allí ahora bien sí más menos hace hacer ser estar todo todos
    """,
    "Italian": """
        il lo la le gli i un una uno un' l' di che non sono sei è siamo siete hai ho ha abbiamo avete hanno
        del della dello dei delle degli dell' nel nella nello nei nelle nell' sul sulla sull' alla alle allo agli
        all' ai dal dalla dall' questo questa questi queste quello quella quelli io tu lui lei noi voi loro mio
        mia miei tuo tua suo sua nostro vostro mi ti ci si ne ma anche molto molta molti poco troppo grazie prego
        ciao buongiorno buonasera buonanotte scusa scusi oggi domani ieri adesso ora sto stai sta stiamo vorrei
        voglio vuoi posso puoi può devo dobbiamo perché cosa chi quanto quanta quando dov' qui qua lì là
        tutto tutti sempre mai niente nulla ancora già essere avere fare fa bene più meno
    """,
}
FOREIGN_WORDS = {language: frozenset(words.split()) - ENGLISH_WORDS for language, words in FOREIGN_WORDS.items()}

# Letters English does not use, and the language each one points to first (a tie-breaker between languages).
FOREIGN_LETTERS = {
    **dict.fromkeys("çêâîôûœëï", "French"),
    **dict.fromkeys("äöüß", "German"),
    **dict.fromkeys("ñáíóú¿¡", "Spanish"),
    **dict.fromkeys("ìòù", "Italian"),
    **dict.fromkeys("éèà", None),
}

# Words, with the apostrophes inside them ("don't", "s'il"); an elided article or pronoun ("l'", "s'") is its own word.
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|[¿¡]")
ELISION = re.compile(r"^(?:[ldjcnsmt]|qu|un|dov|dell|nell|all|dall|sull)'(?=\w)")


@dataclass(frozen=True)
class LanguageCheck:
    """What `check_language` found: whether the text looks English, and if not the likeliest other language and
    the words that gave it away."""

    looks_english: bool
    language: str | None  # French, German, Spanish or Italian when not English; None otherwise
    english_words: tuple
    foreign_words: tuple

    @property
    def warning(self):
        """One line for the page, or None when the text looks English."""
        if self.looks_english:
            return None
        evidence = ", ".join(dict.fromkeys(self.foreign_words))
        return (
            f"This looks like {self.language} ({evidence}), not English: the model translates from English only, "
            "so its Italian may be nonsense."
        )


def words_of(text):
    """Lower-cased words, an elided French/Italian article or pronoun split off as a word of its own ("l'")."""
    out = []
    for word in WORD.findall(text.lower().replace("’", "'")):
        elided = ELISION.match(word)
        if elided and word not in ENGLISH_WORDS:
            out += [elided.group(0), word[elided.end() :]]
        else:
            out.append(word)
    return out


def check_language(text):
    """Whether `text` looks like English, by the rule in this module's docstring -> LanguageCheck; a ValueError
    unless `text` is a string."""
    check_text(text)
    words = words_of(text)
    english = tuple(w for w in words if w in ENGLISH_WORDS)
    hits = {language: [w for w in words if w in vocabulary] for language, vocabulary in FOREIGN_WORDS.items()}
    function_words = {w for found in hits.values() for w in found}
    accented = [
        w for w in words if w not in function_words and w not in ENGLISH_WORDS and any(c in FOREIGN_LETTERS for c in w)
    ]
    foreign = tuple(w for w in words if w in function_words) + (tuple(accented) if function_words else ())
    looks_english = not (function_words and len(foreign) > len(english) and 3 * len(foreign) >= len(words))
    if looks_english:
        return LanguageCheck(True, None, english, foreign)
    letter_votes = [FOREIGN_LETTERS[c] for w in foreign for c in w if FOREIGN_LETTERS.get(c)]
    language = max(hits, key=lambda lang: (len(hits[lang]), letter_votes.count(lang)))
    return LanguageCheck(False, language, english, foreign)


def looks_like_english(text):
    """True unless `text` reads as French, German, Spanish or Italian (see `check_language`)."""
    return check_language(text).looks_english
