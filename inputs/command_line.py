"""One clear line, not a traceback, for the errors a person running a command can fix."""

import sys


def run_cli(main):
    """Run `main()`; a data, model or file-system error becomes `error: ...` on stderr and exit status 1."""
    try:
        main()
    except ValueError as e:  # modeldir.loading.ModelLoadError too
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except OSError as e:  # a file that cannot be read or written: its name and why, e.g. "Read-only file system"
        print(f"error: {e.filename}: {e.strerror}" if e.filename and e.strerror else f"error: {e}", file=sys.stderr)
        sys.exit(1)
