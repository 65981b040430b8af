"""What the command-line tools share: argument types that reject bad values, the command line as run (recorded
beside what it produced), a check that a directory can be written before the work whose results it will hold, and
one clear line (not a traceback) for the errors a user can fix (`inputs.command_line.run_cli`, below the model
directory's own command)."""

import argparse
import math
import os
import shlex
import sys
from pathlib import Path

from inputs.checks import as_whole_number
from inputs.command_line import run_cli  # noqa: F401 (the commands of training/ import it from here)


def _whole_number(text):
    value = as_whole_number(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return value


def _finite_number(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _at_least(parse, low, words, strict=False):
    """An argparse type: `parse(text)`, refused unless at least `low` (more than `low` when `strict`)."""

    def check(text):
        value = parse(text)
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {words}, got {text}")
        return value

    return check


positive_int = _at_least(_whole_number, 1, "1 or more")
non_negative_int = _at_least(_whole_number, 0, "0 or more")  # for flags where 0 means "none" or "the default"
non_negative_float = _at_least(_finite_number, 0, "0 or more")
positive_float = _at_least(_finite_number, 0, "more than 0", strict=True)


def check_writable(directory, flag):
    """A ValueError naming `flag` unless `directory` can be written, or created where it does not exist yet: said
    before the work whose results it will hold, not after it (minutes or hours of it)."""
    directory = Path(directory)
    existing = next(p for p in [directory, *directory.parents] if p.exists())
    if not existing.is_dir():
        raise ValueError(f"{flag}: cannot write {directory}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{flag}: cannot write {directory}: {existing} is read-only")


def checked_out_file(out, reads, flag="--out"):
    """`out` as a Path, once it is known to be none of the files `reads` that the command reads (writing it would
    destroy its own input) and to lie in a folder that can be written."""
    out = Path(out)
    if out.resolve() in {Path(path).resolve() for path in reads if path}:
        raise ValueError(f"{flag}: must not be one of the files it reads")
    check_writable(out.parent, flag)
    return out


def command_line(module, argv=None):
    """The command that ran `python -m module` with `argv` (default: this process's arguments), quoted for a shell:
    what metrics.json and head_importance.json record, so a result can be reproduced."""
    return f"python -m {module} " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
