"""The swap of a finished build into place, and the signals held or turned into Ctrl-C around it.

- **One step.** `exchange` is one renameat2(RENAME_EXCHANGE): the target is the old complete folder until the
  call and the new complete folder after it. Where the platform or filesystem cannot exchange it returns False
  and has changed nothing (output_folder.py then renames the old folder aside and the new one into place).
- **Signals.** `sigterm_as_interrupt` turns SIGTERM into KeyboardInterrupt, so a build cleans up after it as after
  Ctrl-C; around the swap, `core.held_signals.deferred_signals` holds both until the swap, the record of where the
  old folder went and its marking are done (output_folder.py).
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2():
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _renameat2() if sys.platform.startswith("linux") else None


def exchange(a: str, b: str) -> bool:
    """Swap two paths in one atomic step; False when the platform or filesystem cannot (nothing changed then)."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"cannot swap {b} into place: {os.strerror(code)}", a)


# --- signals ------------------------------------------------------------------------------------------------------

def _interrupt(number, frame) -> None:
    raise KeyboardInterrupt


def _default_sigterm_in_child() -> None:
    # A process forked during a build (datasets' num_proc workers) must not inherit the build's handler: its pool
    # ends each worker with SIGTERM, which would raise KeyboardInterrupt wherever the worker is (a traceback per
    # worker; a worker caught holding its queue's lock leaves the pool's join waiting). The OS's default ends it.
    if signal.getsignal(signal.SIGTERM) is _interrupt:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork") and hasattr(signal, "SIGTERM"):
    os.register_at_fork(after_in_child=_default_sigterm_in_child)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block (as Ctrl-C does), so a build cleans up after it too."""
    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except (ValueError, AttributeError):  # not the main thread, or no SIGTERM
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
