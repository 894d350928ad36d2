"""One way to warn: a record of the `ragloaders` logger. The command line shows each on stderr as one line
(`ragloaders: warning: ...`); a program using the library sees them as it configures `logging`."""

from __future__ import annotations

import logging
import sys

LOGGER = logging.getLogger("ragloaders")


def warn(message: str) -> None:
    """Warn the user of something that does not stop what ragloaders is doing."""
    LOGGER.warning(message)


class OneLineWarnings(logging.Handler):
    """Warnings (and errors) of the `ragloaders` loggers on the current stderr, one line each."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(self.format(record).splitlines())
        print(f"ragloaders: warning: {message}", file=sys.stderr)


def show_warnings_on_stderr() -> None:
    """Have the `ragloaders` loggers' warnings printed on stderr, one line each (what the command line does)."""
    if not any(isinstance(handler, OneLineWarnings) for handler in LOGGER.handlers):
        LOGGER.addHandler(OneLineWarnings())
