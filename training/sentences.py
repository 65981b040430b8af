"""How two sentences are compared (`normalise`) and how a sentence is written as one TSV field (`clean`)."""

import re
import unicodedata

# Characters that would end a TSV field or line for some reader (str.splitlines splits on all of them).
LINE_BREAKS = re.compile(r"[\t\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")


def normalise(text):
    """The form two sentences are compared in: NFC, lower-cased, runs of whitespace collapsed, stripped."""
    return " ".join(unicodedata.normalize("NFC", text.lower()).split())


def clean(text):
    """`text` as one TSV field: tabs and line breaks become a space."""
    return LINE_BREAKS.sub(" ", text).strip()
