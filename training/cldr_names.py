"""train-names.tsv: the English and Italian names of countries and regions, languages, the currencies in use, months
and days of the week, from the Unicode CLDR data that the `babel` package ships (Unicode License v3).

Such names are what a sentence pair holds rarely and a visitor types often: the shipped model leaves *August* in
English ("…fu firmato in August 1992."). CLDR has every one of them, checked by translators, in one consistent form, so
they are built here rather than written by hand. The CLDR files read are pinned by sha256 (`SHA256`, those of babel
`BABEL`, which requirements.txt pins), as every downloaded source is: another release may name things differently.
"""

from datetime import date
from pathlib import Path

from .pinned import SourceChanged, sha256

BABEL = "2.17.0"
# The CLDR files the names are read from, inside the babel package: the global data (currencies in use) and the
# English and Italian locales with the root locale they inherit from.
SHA256 = {
    "global.dat": "c11607a7f9d2c1993a4b54b4927de0db4cc70189b6bebed3866bd5eeea83aa03",
    "locale-data/en.dat": "0b410cb8298ca9def16da7145240f333ac6fce111659081b774b083ef5f941b0",
    "locale-data/it.dat": "9fca7129a32e4b67a40fb10e495fb73e655f7739bd36ac45e73034ef7c798ad5",
    "locale-data/root.dat": "bdc609ac38ba59589eafce37d95121750dd9647f29b405ecccd3fbe3b6888aad",
}
LICENCE = "Unicode License v3 (the CLDR data babel ships)"
CREDIT = "Unicode Common Locale Data Repository (CLDR), https://cldr.unicode.org, as shipped by babel " + BABEL
NOT_PLACES = {"ZZ", "XA", "XB", "001"}  # Unknown Region, Pseudo-Accents, Pseudo-Bidi; "world", lower-case in English
IN_USE_ON = date(2025, 1, 1)  # currencies: legal tender somewhere on this day (a fixed day: the same file every run)


def territory_pairs(english, italian):
    """Countries, territories and the regions of the world ("Southern Europe"), ordered by their CLDR code."""
    codes = sorted(set(english.territories) & set(italian.territories) - NOT_PLACES)
    return [(english.territories[code], italian.territories[code]) for code in codes]


def language_pairs(english, italian):
    """The languages with a two-letter ISO 639-1 code (the widely spoken ones), ordered by their code."""
    codes = sorted(c for c in set(english.languages) & set(italian.languages) if len(c) == 2 and c.isalpha())
    return [(english.languages[code], italian.languages[code]) for code in codes]


def currency_pairs(english, italian):
    """Each currency in use, in the singular and the plural ("US dollar", "US dollars"), ordered by its code; not
    where a language has no name for it but its code."""
    from babel.numbers import get_currency_name, get_territory_currencies

    codes = sorted(
        {
            code
            for territory in english.territories
            if len(territory) == 2 and territory not in NOT_PLACES
            for code in get_territory_currencies(territory, start_date=IN_USE_ON, tender=True)
        }
    )
    pairs = []
    for code in codes:
        for count in (1, 2):
            pair = get_currency_name(code, count, english), get_currency_name(code, count, italian)
            pairs += [pair] if code not in pair else []
    return pairs


def calendar_pairs(english, italian):
    """The months and the days of the week, as they stand alone ("August", "agosto")."""
    return [
        (english_names[key], italian_names[key])
        for english_names, italian_names in (
            (english.months["stand-alone"]["wide"], italian.months["stand-alone"]["wide"]),
            (english.days["stand-alone"]["wide"], italian.days["stand-alone"]["wide"]),
        )
        for key in sorted(english_names)
    ]


def checked_data(package_dir, version):
    """Refuse babel's CLDR files unless each has its pinned sha256."""
    for name, pinned in SHA256.items():
        digest = sha256(Path(package_dir, name).read_bytes())
        if digest != pinned:
            raise SourceChanged(
                f"babel {version}: {name} has sha256 {digest}, not the {pinned} pinned in the code; "
                f"install the pinned release: pip install babel=={BABEL}"
            )


def name_pairs():
    """-> {kind: its (English, Italian) pairs}: territories, languages, currencies, calendar."""
    import babel

    checked_data(Path(babel.__file__).parent, babel.__version__)
    english, italian = babel.Locale("en"), babel.Locale("it")
    kinds = (territory_pairs, language_pairs, currency_pairs, calendar_pairs)
    return {kind.__name__.removesuffix("_pairs"): kind(english, italian) for kind in kinds}
