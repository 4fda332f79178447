"""`python -m assay` and the `assay` console script.

The command line is imported here, inside `main`, so that Ctrl-C while it loads (the first ~0.1 s of
every command) is `Interrupted.` and exit 130 like Ctrl-C anywhere else, not a traceback of whichever
import it landed in. Only this module and `assay/__init__.py` load before that."""

import sys


def main() -> None:
    try:
        from assay.cli.app import main as run_command_line
    except KeyboardInterrupt:
        interrupted()
    try:
        run_command_line()  # never returns: it leaves the process with the command's status
    except KeyboardInterrupt:  # in the moment before it takes over
        interrupted()


def interrupted() -> None:
    try:
        print("Interrupted.", file=sys.stderr, flush=True)
    except OSError:  # stderr may be a closed pipe
        pass
    raise SystemExit(130)


if __name__ == "__main__":
    main()
