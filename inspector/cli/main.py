"""The ``memlens`` command: parse, dispatch, and turn every failure into one line and an exit
status. The commands are declared in :mod:`.commands`, their flags in :mod:`.parser`, the
store-only handlers in :mod:`.store_commands` (no UI), the inspector's in :mod:`.tui` (which
imports the UI only when a command opens it)."""

from __future__ import annotations

import difflib
import os
import signal
import sys
from collections.abc import Callable

from .commands import BY_NAME, build_parser
from .commands import NAMES as COMMANDS
from .parser import DEFAULT_DEMO_PATH, Parser
from .refusal import CommandLineError

__all__ = ["DEFAULT_DEMO_PATH", "CommandLineError", "Parser", "Stopped", "build_parser", "main", "main_for"]


class Stopped(BaseException):
    """SIGTERM, raised where the process is so that every ``finally`` runs (an export removes
    its partial file, a write transaction rolls back). Not an Exception, so nothing swallows it."""


# The store's messages name its API's remedies; on the command line, the flag that does the same.
_REMEDIES = {
    "(--force or overwrite=True replaces it)": "(--force replaces it)",
    "pass into_existing=True (--into-existing)": "pass --into-existing",
    "(raise it with MemoryStore.open(..., max_content_bytes=N))": "(memlens import --max-content-bytes N raises it)",
}


def in_command_line_terms(message: str) -> str:
    for api, flag in _REMEDIES.items():
        message = message.replace(api, flag)
    return message


def _looks_like_a_command(word: str) -> bool:
    """A bare word (no folder, no suffix, no scheme) that names no file: a mistyped command, not a store."""
    return word.replace("-", "").replace("_", "").isalpha() and not os.path.exists(word)


def _sweep_stale_copies() -> None:
    """Copies of another library's memory that a memlens process left when it died (SIGKILL, a
    power cut) are deleted as any memlens command starts: a scan of the temporary folder's names."""
    from store.compat.private_copies import sweep_stale

    try:
        sweep_stale()
    except OSError:
        pass  # a temporary folder this process cannot read holds nothing of ours to sweep


def _finish_interrupted_erasures() -> None:
    """An in-place erasure of another library's file cut short before its scrub (a SIGKILL, a
    power cut) is finished as any memlens command starts: the file scrubbed, or a line saying
    what to run. Only a listing of memlens's state folder when there is none."""
    from store.compat.erasure_journal import interrupted

    if not interrupted():
        return
    from store.compat.loomflow_view import finish_interrupted_erasures

    from ..printable import printable

    for cut, scrubbed, reason in finish_interrupted_erasures():
        where = printable(f"{cut.scheme}:{cut.source}")
        if scrubbed:
            print(f"memlens: finished an in-place erasure that was cut short: {where} is scrubbed", file=sys.stderr)
        else:
            print(
                f"memlens: an in-place erasure of {where} was cut short and its file is not scrubbed yet ({reason}); "
                f"run `memlens scrub {where}`",
                file=sys.stderr,
            )


def _stop(signum: int, _frame) -> None:
    raise Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 done, 1 scrub must be retried or an unexpected error, 2 refused or failed
    (a message says why), 128 + n stopped by signal n."""
    argv = sys.argv[1:] if argv is None else argv
    _sweep_stale_copies()
    _finish_interrupted_erasures()
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        if _looks_like_a_command(argv[0]):
            close = difflib.get_close_matches(argv[0], COMMANDS, n=2)
            hint = f"; did you mean {' or '.join(close)}?" if close else f" (the commands: {', '.join(COMMANDS)})"
            print(f"memlens: {argv[0]!r} is neither a command nor a store that exists{hint}", file=sys.stderr)
            return 2
        argv = ["open", *argv]  # `memlens PATH` opens PATH
    parser = build_parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    handler = BY_NAME[args.command].handler  # looked up when called: a test may replace one command
    return main_for(lambda: handler(args))


def main_for(run: Callable[[], int]) -> int:
    """Run one command: every failure becomes one line on stderr and an exit status."""
    from store.errors import MemlensError

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        return run()
    except (MemlensError, CommandLineError) as error:
        print(f"memlens: {in_command_line_terms(str(error))}", file=sys.stderr)
        return 2
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        print(f"memlens: {error.strerror or error}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memlens: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Stopped:
        print("memlens: stopped by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM
    except Exception as error:
        if os.environ.get("MEMLENS_DEBUG"):
            raise
        print(f"memlens: unexpected error: {type(error).__name__}: {error} (MEMLENS_DEBUG=1 shows where)", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
