"""Limits of the arguments a person can hand in, and the checks that say clearly what is wrong with one.

Every bad argument, wrong type included, is a ValueError naming the argument and what it may be: callers catch one
class, and the app and the API turn it into one line for the person who sent it."""

import numbers

from transformer.decoding import Sampling

MAX_BEAM = 16  # every hypothesis is a row of each decoding step: beam 16 does the work of 16 sentences per sentence
# The widest beam a server shared by many offers (the page, the API): each beam adds to every decoding step of all.
SERVER_MAX_BEAM = MAX_BEAM // 2
# A temperature below MIN_TEMPERATURE is greedy decoding in all but name (a logit ahead by 0.1 already has e^10 times
# the odds of the next one); above MAX_TEMPERATURE the draw is all but uniform over the tokens kept. Within both,
# logits / temperature stays finite in float32 (1e-46 rounds to 0 and 1e39 to inf there: NaN probabilities).
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0
MAX_SEED = 2**63 - 1  # the largest seed a signed 64-bit integer holds (numpy's int64, most JSON readers)
ECHO_CHARACTERS = 40


def echo(value, limit=ECHO_CHARACTERS):
    """`value` as an error message quotes it (its repr), cut to `limit` characters: a refusal of a 1 MB argument is
    one short line, in the answer and in the log."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python writes out (sys.get_int_max_str_digits: 4,300)
        text = f"<{type(value).__name__} too long to write out>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_whole_number(name, value, low=None, high=None):
    """A ValueError naming `name` (and low..high, where given) unless `value` is an integer (not a bool) within the
    bounds given (None: no bound)."""
    if (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and (low is None or low <= value)
        and (high is None or value <= high)
    ):
        return
    allowed = (f" in {low}..{high}" if high is not None else f" >= {low}") if low is not None else ""
    raise ValueError(f"{name} must be a whole number{allowed}, got {echo(value)}")


def as_whole_number(value):
    """`value` as a page or a command line sends it (a number, a numeric string) as an int; None when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def check_text(text, name="text"):
    """A ValueError naming `name` unless `text` is a string."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a string, got {type(text).__name__}")


def check_sampling(sampling):
    """A ValueError unless `sampling` is a `Sampling` whose temperature is a number in
    MIN_TEMPERATURE..MAX_TEMPERATURE, top_k a whole number >= 0 (more than the vocabulary: all) and seed one in
    0..MAX_SEED."""
    if not isinstance(sampling, Sampling):
        raise ValueError(f"sampling must be a Sampling or None, got {type(sampling).__name__}")
    t = sampling.temperature
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE:
        raise ValueError(f"temperature must be a number in {MIN_TEMPERATURE:g}..{MAX_TEMPERATURE:g}, got {echo(t)}")
    check_whole_number("top_k", sampling.top_k, 0)
    check_whole_number("seed", sampling.seed, 0, MAX_SEED)


def check_decoding(beam, sampling=None):
    """A ValueError unless `beam` is a whole number in 1..MAX_BEAM and `sampling` None or a valid `Sampling` with
    beam 1 (sampling draws a single hypothesis)."""
    check_whole_number("beam", beam, 1, MAX_BEAM)
    if sampling is None:
        return
    check_sampling(sampling)
    if beam > 1:
        raise ValueError(f"sampling draws one hypothesis per sentence: use it with beam 1, got beam {beam}")
