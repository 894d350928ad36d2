"""`html_text.html_to_text` in worker processes: Resiliparse (2.x) holds the GIL while it extracts, so threads never
run two pages at once; processes do.

A worker is this interpreter running `serve()` (`python -c`, its module path set to this process's `sys.path`, so
it imports what this process imports and never a module of the current folder that this process would not; never
multiprocessing's spawn or forkserver, which import the user's `__main__` again). It reads batches of HTML from its
stdin and writes their texts to its stdout, in frames (`write_frame`), until its stdin closes; it ignores SIGINT:
on Ctrl-C, or any end before every text is in, the parent kills it (a page being extracted is not waited for), and
it ends when the parent dies too (its stdin closes).

Each page has a time bound (`page_seconds`): the extractor's time grows with the square of some shapes of HTML (a
page of 150,000 distinct attribute names on one element, 1.3 MB, takes 42 s; bench/README.md, "HTML shaped to be
slow"), so a worker still on one page past its bound is killed and the page named in a TooSlowPage error. Only pages
of at most SAFE_PAGE_BYTES, whose worst case is within half that bound, are ever extracted in the calling process,
where nothing can stop the extractor (it holds the GIL): the bound holds wherever a worker can be started
(`worker_command`).
"""

from __future__ import annotations

import itertools
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeVar

from .errors import WorkerEnded
from .html_text import html_to_text
from .readers.threads import PARSE_THREADS, map_ahead

COUNT = struct.Struct("<I")
LENGTH = struct.Struct("<q")
T = TypeVar("T")
MAX_FRAME_ITEMS = 1 << 20
"""A frame of more items than this is damaged (the parent sends at most a few hundred pages a frame)."""
SAFE_PAGE_BYTES = 256 << 10
"""Pages of at most this many bytes of HTML may be extracted in the calling process: the slowest such page measured
(every byte spent on distinct 1-4 character attribute names of one element: 64 KB 0.46 s, 128 KB 1.7 s, 256 KB
6.0 s) stays within half the time a worker is allowed for it (`page_seconds`: 12.5 s)."""
BASE_SECONDS = 10.0
SECONDS_PER_MB = 10.0
"""A page's time bound in a worker: BASE_SECONDS plus this per MB of its HTML, 100-1,000 times what real pages take
(8-60 ms per MB) on a quiet machine."""


def page_seconds(size: int) -> float:
    """How long a worker may take over one page of `size` bytes of HTML before it is killed (TooSlowPage)."""
    return BASE_SECONDS + SECONDS_PER_MB * size / (1 << 20)


class TooSlowPage(WorkerEnded):
    """A page whose text was not extracted within its bound (`page_seconds`); its worker was killed."""

    def __init__(self, index: int, size: int, seconds: float):
        self.index, self.size, self.seconds = index, size, seconds
        super().__init__(
            f"the text of a page of {size:,} bytes of HTML was not extracted within {seconds:.0f} s, the bound for "
            f"its size ({BASE_SECONDS:.0f} s + {SECONDS_PER_MB:.0f} s per MB; real pages take 8-60 ms per MB): "
            "HTML shaped to be slow (e.g. many thousands of distinct attribute or tag names) makes the extractor's "
            "time grow with the square of its size. The build stopped; build the other configs without `corpus` "
            "(--configs) to skip text extraction")


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


class TimedReader:
    """Reads of a worker's stdout (its file descriptor, bypassing the pipe object's own buffer) that raise
    TimeoutError once `deadline` (time.monotonic()) passes before the bytes asked for have come (where `select.poll`
    exists: Linux, macOS; elsewhere reads wait); `read(size)` gives `size` bytes, fewer only at the end of the
    stream."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()
        self.deadline: float | None = None
        self.poll = select.poll() if hasattr(select, "poll") else None  # (select.select fails past fd 1023)
        if self.poll is not None:
            self.poll.register(fd, select.POLLIN)

    def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if self.deadline is not None and self.poll is not None:
                left = self.deadline - time.monotonic()
                if left <= 0 or not self.poll.poll(left * 1000):
                    raise TimeoutError
            piece = os.read(self.fd, max(size - len(self.buffer), 1 << 16))
            if not piece:
                break
            self.buffer += piece
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


def texts_of(htmls: list[bytes | None]) -> list[str | None]:
    """`html_to_text` of each UTF-8 HTML (None stays None), in this process."""
    return [None if html is None else html_to_text(html.decode("utf-8", "surrogatepass")) for html in htmls]


def serve(source: BinaryIO | None = None, sink: BinaryIO | None = None, parent: int | None = None) -> None:
    """The worker's loop: a frame of HTML in, a frame of one text out for each of its pages in order, until `source`
    (stdin) ends. The frames go to stdout's pipe, and whatever else would be printed to stdout goes to stderr, so no
    stray output lands between two frames. `parent`: the process that started it, whose end ends it (`end_with`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        end_with(parent)
    source = source or sys.stdin.buffer
    if sink is None:
        sys.stdout.flush()
        sink = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    while (htmls := read_frame(source)) is not None:
        for html in htmls:  # a frame for each page, as soon as it is done: its time is bounded by itself
            text = None if html is None else html_to_text(html.decode("utf-8", "surrogatepass"))
            write_frame(sink, [None if text is None else text.encode("utf-8", "surrogatepass")])


PR_SET_PDEATHSIG = 1


def end_with(parent: int) -> None:
    """Make this worker end when the process `parent` that started it ends, however it ends (SIGKILL included): on
    Linux the kernel sends it SIGKILL then (PR_SET_PDEATHSIG; else a worker busy with a page went on until the page
    was done, and a stdin it reads only between frames told it nothing before); a parent already gone ends it now.
    Elsewhere the closed stdin ends it between two frames."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # (no prctl: the closed stdin still ends it)
            pass
    if os.getppid() != parent:
        os._exit(0)


PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The folder holding this `ragloaders` package: on a worker's path after this process's own entries."""


def worker_command() -> list[str] | None:
    """The command that starts a worker: this interpreter, its module path set to this process's `sys.path` (and
    this package's folder) before anything is imported; None where this interpreter cannot be run so (a frozen
    application, whose executable is the application itself)."""
    if not sys.executable or getattr(sys, "frozen", False):
        return None
    path = [entry for entry in sys.path if isinstance(entry, str)]  # (a Path or bytes entry is no literal here)
    path += [] if PACKAGE_ROOT in path else [PACKAGE_ROOT]
    return [sys.executable, "-c", f"import sys; sys.path[:] = {path!r}; "
            f"from ragloaders.core.html_text_workers import serve; serve(parent={os.getpid()})"]


class TextWorkers:
    """Worker processes for `texts`, one per calling thread, started on its first call; `close` (or leaving the
    `with` block) closes their stdin and waits for them (killing one that does not end within `timeout`)."""

    def __init__(self, command: list[str], timeout: float = 30.0):
        self.command, self.timeout = command, timeout
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
                try:
                    process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                except OSError as e:
                    raise WorkerEnded(f"an HTML-to-text worker process could not be started ({e})") from None
                self.processes.append(process)
            self.local.process = process
            self.local.replies = TimedReader(process.stdout.fileno())
        return process

    def texts(self, htmls: list[bytes | None]) -> list[str | None]:
        """`html_to_text` of each UTF-8 HTML (None stays None), computed in this thread's worker process; TooSlowPage
        (the worker killed) for a page not done within its `page_seconds`."""
        process = self._process()
        replies = self.local.replies
        texts: list[bytes | None] = []
        error: BaseException | None = None
        try:
            write_frame(process.stdin, htmls)
            for index, html in enumerate(htmls):
                size = len(html or b"")
                replies.deadline = time.monotonic() + page_seconds(size)
                try:
                    frame = read_frame(replies)
                except TimeoutError:
                    process.kill()
                    raise TooSlowPage(index, size, page_seconds(size)) from None
                if frame is None or len(frame) != 1:
                    break
                texts += frame
        except (OSError, WorkerEnded) as e:
            if isinstance(e, TooSlowPage):
                raise
            error = e
        if len(texts) != len(htmls):
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

    def kill(self) -> None:
        """End every worker now (a page being extracted is not waited for): a call of `texts` under way raises
        WorkerEnded."""
        with self.lock:
            self.closed = True
            for process in self.processes:
                process.kill()

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


IN_PROCESS_BYTES = 16 << 20
"""HTML extracted in this process before the workers are started: for less, starting them costs about what they
save. Only pages of at most SAFE_PAGE_BYTES: a batch with a larger page starts the workers."""


def _in_process(htmls: list[bytes | None]) -> bool:
    return all(html is None or len(html) <= SAFE_PAGE_BYTES for html in htmls)


def texts_in_order(batches: Iterable[tuple[T, list[bytes | None]]], processes: int = PARSE_THREADS,
                   describe: Callable[[T, int | None], str] | None = None,
                   started: Callable[[Callable[[], None]], None] | None = None
                   ) -> Iterator[tuple[T, list[str | None]]]:
    """(item, `html_to_text` of each of its UTF-8 HTML (None stays None)) for each (item, HTML) batch, in order:
    the batches of the first IN_PROCESS_BYTES of HTML in this process while none has a page over SAFE_PAGE_BYTES,
    the rest in `processes` worker processes (one if `processes` is 1) while the caller reads the next batches and
    uses earlier texts (at most `processes` + 1 batches in flight); all in this process, without time bounds, only
    where no worker can be started (`worker_command`: a frozen application). A worker that ends before it answers
    is a WorkerEnded naming the batch (`describe(item, None)`); a page past its time bound, a TooSlowPage naming the
    page (`describe(item, its index in the batch)`). Every worker has ended when this generator is done or closed,
    and one that was still extracting is killed. `started`, if given, is called with a function that kills the
    workers, once they are started: for a caller on another thread (a FeedThread's `consume`, its `on_stop`)."""
    command = worker_command()
    batches, extracted = iter(batches), 0
    while (batch := next(batches, None)) is not None:
        if command is not None and (extracted >= IN_PROCESS_BYTES or not _in_process(batch[1])):
            break
        yield batch[0], texts_of(batch[1])
        extracted += sum(len(html) for html in batch[1] if html)
    if batch is None:
        return

    def texts(batch: tuple[T, list[bytes | None]]) -> tuple[T, list[str | None]]:
        item, htmls = batch
        try:
            return item, workers.texts(htmls)
        except TooSlowPage as e:
            if describe is None:
                raise
            e.args = (f"{e}; the page: {describe(item, e.index)}",)
            raise
        except WorkerEnded as e:
            if describe is None:
                raise
            raise WorkerEnded(f"{e}; the batch: {describe(item, None)}") from None

    with TextWorkers(command) as workers:
        if started is not None:
            started(workers.kill)
        yield from map_ahead(texts, itertools.chain([batch], batches), threads=max(1, processes), stop=workers.kill)
