"""`html_text.html_to_text` in worker processes: Resiliparse (2.x) holds the GIL while it extracts, so threads never
run two pages at once; processes do.

A worker is this interpreter running `serve()` (`python -c`, with this process's `ragloaders` package first on its
path; never multiprocessing's spawn or forkserver, which import the user's `__main__` again). It reads batches of
HTML from its stdin and writes their texts to its stdout, in frames (`write_frame`), until its stdin closes; it
ignores SIGINT (the parent stops it) and ends when the parent closes its stdin or dies.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import BinaryIO, TypeVar

from .html_text import html_to_text
from .readers.threads import PARSE_THREADS, map_ahead

COUNT = struct.Struct("<I")
LENGTH = struct.Struct("<q")
T = TypeVar("T")
MAX_FRAME_ITEMS = 1 << 20
"""A frame of more items than this is damaged (the parent sends at most a few hundred pages a frame)."""


class WorkerEnded(RuntimeError):
    """A worker process ended (or wrote a damaged frame) before answering."""


def write_frame(stream: BinaryIO, items: list[bytes | None]) -> None:
    """`items` (None kept apart from b"") as one frame: their count, each one's length (-1 for None), their bytes."""
    stream.write(COUNT.pack(len(items)))
    stream.write(b"".join(LENGTH.pack(-1 if item is None else len(item)) for item in items))
    for item in items:
        if item:
            stream.write(item)
    stream.flush()


READ_BYTES = 16 << 20


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """`size` bytes of `stream`, None if it ends first; read in pieces, so a damaged length allocates nothing
    beyond what arrives."""
    pieces, left = [], size
    while left:
        piece = stream.read(min(left, READ_BYTES))
        if not piece:
            return None
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def read_frame(stream: BinaryIO) -> list[bytes | None] | None:
    """The items of the next frame of `stream`; None at its end. WorkerEnded when a frame is cut short or damaged."""
    head = stream.read(COUNT.size)
    if not head:
        return None
    if len(head) != COUNT.size or (count := COUNT.unpack(head)[0]) > MAX_FRAME_ITEMS:
        raise WorkerEnded("a damaged frame")
    lengths = _read_exactly(stream, count * LENGTH.size) if count else b""
    if lengths is None:
        raise WorkerEnded("a frame cut short")
    items: list[bytes | None] = []
    for (length,) in LENGTH.iter_unpack(lengths):
        if length < -1:
            raise WorkerEnded("a damaged frame")
        item = None if length == -1 else _read_exactly(stream, length) if length else b""
        if length > 0 and item is None:
            raise WorkerEnded("a frame cut short")
        items.append(item)
    return items


def texts_of(htmls: list[bytes | None]) -> list[str | None]:
    """`html_to_text` of each UTF-8 HTML (None stays None), in this process."""
    return [None if html is None else html_to_text(html.decode("utf-8", "surrogatepass")) for html in htmls]


def serve(source: BinaryIO | None = None, sink: BinaryIO | None = None) -> None:
    """The worker's loop: a frame of HTML in, a frame of their texts out, until `source` (stdin) ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source = source or sys.stdin.buffer
    sink = sink or sys.stdout.buffer
    while (htmls := read_frame(source)) is not None:
        write_frame(sink, [None if text is None else text.encode("utf-8", "surrogatepass") for text in texts_of(htmls)])


PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The folder holding this `ragloaders` package: first on a worker's path, so it runs this very code."""
WORKER_CODE = (f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r}); "
               "from ragloaders.core.html_text_workers import serve; serve()")


class TextWorkers:
    """Worker processes for `texts`, one per calling thread, started on its first call; `close` (or leaving the
    `with` block) closes their stdin and waits for them (killing one that does not end within `timeout`)."""

    def __init__(self, timeout: float = 30.0):
        self.timeout = timeout
        self.local = threading.local()
        self.lock = threading.Lock()
        self.processes: list[subprocess.Popen] = []
        self.closed = False

    def _process(self) -> subprocess.Popen:
        process = getattr(self.local, "process", None)
        if process is None:
            with self.lock:
                if self.closed:
                    raise WorkerEnded("the HTML-to-text workers are closed")
                process = subprocess.Popen([sys.executable, "-c", WORKER_CODE], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE)
                self.processes.append(process)
            self.local.process = process
        return process

    def texts(self, htmls: list[bytes | None]) -> list[str | None]:
        """`html_to_text` of each UTF-8 HTML (None stays None), computed in this thread's worker process."""
        process = self._process()
        try:
            write_frame(process.stdin, htmls)
            texts = read_frame(process.stdout)
        except (OSError, WorkerEnded) as e:
            texts, error = None, e
        else:
            error = None
        if texts is None or len(texts) != len(htmls):
            raise WorkerEnded(f"the HTML-to-text worker process {process.pid} ended ({self._ended(process)}) while "
                              f"extracting {len(htmls)} page(s){f': {error}' if error else ''}")
        return [None if text is None else text.decode("utf-8", "surrogatepass") for text in texts]

    def _ended(self, process: subprocess.Popen) -> str:
        try:
            code = process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def close(self) -> None:
        with self.lock:
            self.closed = True
            processes, self.processes = self.processes, []
        for process in processes:
            try:
                process.stdin.close()
            except OSError:
                pass
        for process in processes:
            try:
                process.wait(self.timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()

    def __enter__(self) -> TextWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def texts_in_order(batches: Iterable[tuple[T, list[bytes | None]]], processes: int = PARSE_THREADS
                   ) -> Iterator[tuple[T, list[str | None]]]:
    """(item, `html_to_text` of each of its UTF-8 HTML (None stays None)) for each (item, HTML) batch, in order:
    computed in `processes` worker processes while the caller reads the next batches and uses earlier texts (at
    most `processes` + 1 batches in flight), or in this process when `processes` is 1. Every worker has ended when
    this generator is done or closed."""
    if processes <= 1 or not sys.executable:
        for item, htmls in batches:
            yield item, texts_of(htmls)
        return
    with TextWorkers() as workers:
        yield from map_ahead(lambda batch: (batch[0], workers.texts(batch[1])), batches, threads=processes)
