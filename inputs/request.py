"""One translation request, the sentence and how to decode it, parsed once where it comes in (`parse_request`: the
page's events, the HTTP API and the command-line tools alike) and trusted from there on: a `Request` holds only
values the model can run with. A bad value is a ValueError naming it, its range and what was sent (`checks.echo`)."""

import math
import numbers
import re
from dataclasses import dataclass

from transformer.decoding import Sampling

from .checks import MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE, SERVER_MAX_BEAM, check_whole_number, echo

DECODINGS = ("greedy", "beam", "sampling")
LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


@dataclass(frozen=True)
class Request:
    """A sentence to translate and how: `text` with its lines read as one (`one_line`; `joined_lines`: how many it
    had), `beam` (1: greedy or sampled) and `sampling` (a `Sampling`, or None)."""

    text: str
    beam: int = 1
    sampling: Sampling | None = None
    joined_lines: int = 1

    @property
    def decoding(self):
        return "sampling" if self.sampling else "beam" if self.beam > 1 else "greedy"


def parse_request(
    text, decoding="greedy", beam=4, temperature=1.0, top_k=0, seed=0, max_beam=SERVER_MAX_BEAM, vocab_size=None
):
    """The `Request` of a sentence and its decoding settings as a page, a JSON body or a command line sends them;
    only the settings the decoding uses are read (a beam width under greedy decoding changes nothing, as on the
    page). `beam` in 1..`max_beam`, `top_k` in 0..`vocab_size` (more would keep them all too; None: no bound)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__} {echo(text)}")
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {', '.join(map(repr, DECODINGS))}, got {echo(decoding)}")
    text, lines = one_line(text)
    if decoding == "sampling":
        sampling = Sampling(
            real("temperature", temperature, MIN_TEMPERATURE, MAX_TEMPERATURE),
            whole("top_k", top_k, 0, vocab_size),
            whole("seed", seed, 0, MAX_SEED),
        )
        return Request(text, 1, sampling, lines)
    return Request(text, whole("beam", beam, 1, max_beam) if decoding == "beam" else 1, None, lines)


def whole(name, value, low, high=None):
    """`value` as an int (a float with no fraction counts: 4.0 is 4, as JSON writes it); a ValueError naming `name`
    and its range otherwise (NaN, infinity, a fraction, a bool, a string, out of range)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    check_whole_number(name, value, low, high)
    return value


def real(name, value, low, high):
    """`value` as a float; a ValueError naming `name` and low..high unless it is a finite number in that range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not low <= value <= high:
        raise ValueError(f"{name} must be a number in {low:g}..{high:g}, got {echo(value)}")
    return float(value)


def one_line(text):
    """(`text` with its line breaks read as spaces, how many non-empty lines it had).

    Shift+Enter puts a line break into the English box. The model learnt from single sentences and its tokenizer has
    no token for a line break, so one reached it as the byte token `<0x0A>`: "Hello there.⏎How are you?" came out as
    "Ciao lì. Inoltre è?", under a warning that blamed emoji. Of the two honest answers, translating each line as its
    own sentence (and a way to pick which line the views show) or reading the lines as one text, this takes the
    second: it is what the model can do (read one stretch of text, as it does a long sentence), every view keeps
    showing the one translation above it, and the status line says the lines were joined (`translation_status`)."""
    if not LINE_BREAK.search(text):
        return text, 1
    lines = [line.strip() for line in LINE_BREAK.split(text) if line.strip()]
    return " ".join(lines), len(lines)
