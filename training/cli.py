"""What the command-line tools share: argument types that reject bad values, the command line as run (recorded
beside what it produced), and one clear line (not a traceback) for the errors a user can fix."""

import argparse
import shlex
import sys

from transformer.translator import ModelLoadError


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def command_line(module, argv=None):
    """The command that ran `python -m module` with `argv` (default: this process's arguments), quoted for a shell:
    what metrics.json and head_importance.json record, so a result can be reproduced."""
    return f"python -m {module} " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))


def run_cli(main):
    """Run `main()`; a data or model error becomes `error: ...` on stderr and exit status 1."""
    try:
        main()
    except (ModelLoadError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
