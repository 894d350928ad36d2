"""Errors that name the source file and the place in it."""

from __future__ import annotations

import errno

NO_SPACE = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)
"""The errnos of a full disk: no space, the user's quota, a file over the filesystem's largest."""


def is_no_space(error: BaseException) -> bool:
    """Whether `error` is a full disk (NO_SPACE)."""
    return isinstance(error, OSError) and error.errno in NO_SPACE


class UsageError(ValueError):
    """A command or call that cannot be done as asked (an unknown option value, a conflicting choice): says what to
    give instead. A ValueError, so callers catching ValueError see it as before."""


class ContentError(ValueError):
    """What is wrong with one line, record or value of a source, said without where it is: the reader that knows
    the file and the line raises a SourceError from it. One that reaches the user is a bug (the place is missing)."""


class SourceError(ValueError):
    """Bad or incomplete source data: names the file, the line or record, and what was expected."""

    def __init__(self, path: str, message: str, *, line: int | None = None, record: int | None = None):
        self.path = str(path)
        self.message = message
        self.line = line
        self.record = record
        if line is not None:
            where = f"{self.path}, line {line}"
        elif record is not None:
            where = f"{self.path}, record {record}"
        else:
            where = self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (_rebuild_source_error, (self.path, self.message, self.line, self.record))


def _rebuild_source_error(path: str, message: str, line: int | None, record: int | None) -> SourceError:
    return SourceError(path, message, line=line, record=record)


class DownloadError(SourceError):
    """A download that failed (no network, DNS, refused, HTTP error): names the URL, the cause and what to do."""

    def __init__(self, url: str, cause: str, *, mirror_env: str | None = None):
        self.url, self.cause, self.mirror_env = url, cause, mirror_env
        mirror = f"set {mirror_env} to a mirror" if mirror_env else "use a mirror"
        super().__init__(
            url, f"download failed ({cause}); nothing partial is kept. Check the network, or {mirror}, or download "
            "the files yourself and pass their folder with --data-dir (data_dir= in Python)"
        )

    def __reduce__(self):
        return (DownloadError, (self.url, self.cause), {"mirror_env": self.mirror_env})

    def __setstate__(self, state: dict) -> None:
        self.__init__(self.url, self.cause, **state)


class WorkerEnded(RuntimeError):
    """A worker process of ragloaders ended (or answered with a damaged reply) before it answered: says which,
    how it ended and what it was given."""


class PageError(WorkerEnded):
    """A page whose text a worker could not extract within the page's bounds (core/html_text_workers.py): bad input,
    said in one line; `index` is the page's place in its batch, and the message ends naming the page once the
    caller has added it."""

    def __init__(self, index: int, message: str):
        self.index = index
        super().__init__(message)


class MissingSourceError(FileNotFoundError):
    """A dataset's files are not there and cannot be downloaded; says where to get them."""


THREAD_NOT_STARTED = "can't start new thread"
"""Python's words (a RuntimeError) for a thread the system would not start."""


def precise_cause(error: BaseException) -> BaseException | None:
    """The SourceError (or missing file, full disk, ended worker process) that a datasets wrapper was raised from,
    if any; a thread that could not be started, as the OSError that says why it may be."""
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (SourceError, FileNotFoundError, WorkerEnded)) or is_no_space(current):
            return current
        if isinstance(current, RuntimeError) and str(current) == THREAD_NOT_STARTED:
            return OSError(errno.EAGAIN, "a thread could not be started: too little memory for this process (a "
                           "`ulimit -v`?) or too many threads")
        current = current.__cause__ or current.__context__
    return None
