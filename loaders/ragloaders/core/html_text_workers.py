"""`html_text.html_to_text` in worker processes: Resiliparse (2.x) holds the GIL while it extracts, so threads never
run two pages at once; processes do. The workers are also what bounds a page's cost, which nothing can do in this
process while the extractor holds the GIL: every page's text is extracted in a worker wherever one can be started
(`worker_command`; in this process, unbounded, only where none can: a frozen application).

A worker is this interpreter running `serve()` (`python -c`, its module path set to this process's `sys.path`, so
it imports what this process imports and never a module of the current folder that this process would not; never
multiprocessing's spawn or forkserver, which import the user's `__main__` again). It reads batches of HTML from its
stdin, in frames (`write_frame`), and answers a frame for each page, in order, on a pipe of its own (the file
descriptor its command line names; what it prints, at its start, from a library or as it crashes, goes to an unnamed
log file that a failure quotes, never between two frames nor to the terminal), until its stdin closes; it ignores
SIGINT: on Ctrl-C, or any end before every text is in, the parent kills it (a page being extracted is not waited
for), and it ends when the parent dies too.

Each page has bounds, since the extractor's cost grows with the square of some shapes of HTML (bench/README.md, "HTML
shaped to be slow"): a page of 150,000 distinct attribute names on one element, 1.3 MB, takes 42 s; 600 unclosed
formatting elements with distinct attributes, each cloned for every later block, make a 63 KB page take 1.1 GB.
Time: a worker still on one page after `page_seconds` is killed (TooSlowPage). Memory (Linux: its address space, set
before each page): `page_memory`; a page that needs more is refused (PageRefused), as is a page the worker crashes
on (Resiliparse's Rust code aborts when an allocation fails). Either stops the build with a one-line error naming
the page.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeVar

from .errors import PageError, WorkerEnded

try:
    import fcntl
except ImportError:  # (Windows: a worker's log is then never emptied)
    fcntl = None
from .html_text import html_to_text
from .preview import one_line
from .readers.threads import PARSE_THREADS, map_ahead

COUNT = struct.Struct("<I")
LENGTH = struct.Struct("<q")
T = TypeVar("T")
MAX_FRAME_ITEMS = 1 << 20
"""A frame of more items than this is damaged (the parent sends at most a few hundred pages a frame)."""
BASE_SECONDS = 10.0
SECONDS_PER_MB = 10.0
"""A page's time bound in a worker: BASE_SECONDS plus this per MB of its HTML, 100-1,000 times what real pages take
(8-60 ms per MB) on a quiet machine."""


START_SECONDS = 60.0
"""How long a worker may take to start (its imports), before any page's bound runs."""


def page_seconds(size: int) -> float:
    """How long a worker may take over one page of `size` bytes of HTML before it is killed (TooSlowPage)."""
    return BASE_SECONDS + SECONDS_PER_MB * size / (1 << 20)


BASE_MEMORY = 256 << 20
MEMORY_PER_BYTE = 128
"""A page's memory bound in a worker: what the worker uses before it, BASE_MEMORY, and this many bytes per byte of
its HTML (real pages need 10-80)."""


def page_memory(size: int) -> int:
    """The address space a worker may grow by over one page of `size` bytes of HTML."""
    return BASE_MEMORY + MEMORY_PER_BYTE * size


SKIP_CORPUS = "build or load the other configs without `corpus` to skip text extraction"


class TooSlowPage(PageError):
    """A page whose text was not extracted within its bound (`page_seconds`); its worker was killed."""

    def __init__(self, index: int, size: int, seconds: float):
        self.size, self.seconds = size, seconds
        super().__init__(index, (
            f"the text of a page of {size:,} bytes of HTML was not extracted within {seconds:.0f} s, the bound for "
            f"its size ({BASE_SECONDS:.0f} s + {SECONDS_PER_MB:.0f} s per MB; real pages take 8-60 ms per MB): "
            "HTML shaped to be slow (e.g. many thousands of distinct attribute or tag names) makes the extractor's "
            f"time grow with the square of its size; {SKIP_CORPUS}"))


class PageRefused(PageError):
    """A page whose text the worker could not extract: more memory than `page_memory` (`reason` "memory"), or an
    error of the extractor (`reason` its words)."""

    def __init__(self, index: int, size: int, reason: str):
        self.size, self.reason = size, reason
        if reason == OUT_OF_MEMORY:
            words = (f"the text of a page of {size:,} bytes of HTML needed more memory than its bound "
                     f"({BASE_MEMORY >> 20} MB + {MEMORY_PER_BYTE} bytes per byte of HTML; real pages need 10-80): "
                     "HTML shaped to make the extractor's memory grow with the square of its size (e.g. thousands of "
                     f"unclosed formatting elements with distinct attributes); {SKIP_CORPUS}")
        else:
            words = f"the HTML parser refused a page of {size:,} bytes of HTML ({reason}); {SKIP_CORPUS}"
        super().__init__(index, words)


OUT_OF_MEMORY = "memory"
"""The reason a worker gives for a page that needed more memory than its bound."""


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
    """Reads of a pipe (its file descriptor: no buffer of a file object in between) that raise TimeoutError once
    `deadline` (time.monotonic()) passes before the bytes asked for have come (where `select.poll` exists: Linux,
    macOS; elsewhere reads wait); `read(size)` gives `size` bytes, fewer only at the end of the stream."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()
        self.deadline: float | None = None
        self.poll = _poll(fd, "POLLIN")

    def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            _wait(self.poll, self.deadline)
            piece = os.read(self.fd, max(size - len(self.buffer), 1 << 16))
            if not piece:
                break
            self.buffer += piece
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


class TimedWriter:
    """Writes to a pipe (its file descriptor, made non-blocking) that raise TimeoutError once `deadline` passes
    before every byte is written (where `select.poll` exists; elsewhere writes wait): a worker that stops reading
    (stopped, say) cannot hold the build."""

    def __init__(self, fd: int):
        self.fd = fd
        self.deadline: float | None = None
        self.poll = _poll(fd, "POLLOUT")
        if self.poll is not None:
            os.set_blocking(fd, False)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            _wait(self.poll, self.deadline)
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                continue

    def flush(self) -> None:
        pass


def _poll(fd: int, event: str) -> select.poll | None:
    if not hasattr(select, "poll"):  # (select.select fails past fd 1023)
        return None
    poll = select.poll()
    poll.register(fd, getattr(select, event))
    return poll


def _wait(poll: select.poll | None, deadline: float | None) -> None:
    """Until the polled pipe is ready; TimeoutError if `deadline` passes first."""
    if poll is None or deadline is None:
        return
    left = deadline - time.monotonic()
    if left <= 0 or not poll.poll(left * 1000):
        raise TimeoutError


def texts_of(htmls: list[bytes | None]) -> list[str | None]:
    """`html_to_text` of each UTF-8 HTML (None stays None), in this process."""
    return [None if html is None else html_to_text(html.decode("utf-8", "surrogatepass")) for html in htmls]


def serve(replies: int | BinaryIO, source: BinaryIO | None = None, parent: int | None = None) -> None:
    """The worker's loop: an empty frame once it is ready; then a frame of HTML in, and for each of its pages in
    order, as soon as it is done, a frame of its text ([text], [None] for a null page) or of why there is none
    ([None, reason]: OUT_OF_MEMORY past `page_memory`, else the extractor's error), written to `replies` (a file
    descriptor, or a binary stream), until `source` (stdin) ends. `parent`: the process that started it, whose end
    ends it (`end_with`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        end_with(parent)
    source = source or sys.stdin.buffer
    sink = os.fdopen(replies, "wb") if isinstance(replies, int) else replies
    space = AddressSpace()
    write_frame(sink, [])  # ready: the time bounds of its pages start from here
    while True:
        space.lift()  # (the next frame is read under what this process was given, not the last page's bound)
        if (htmls := read_frame(source)) is None:
            return
        for html in htmls:
            write_frame(sink, [None] if html is None else _text_or_reason(html, space))


def _text_or_reason(html: bytes, space: AddressSpace) -> list[bytes | None]:
    space.limit(page_memory(len(html)))
    try:
        return [html_to_text(html.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")]
    except MemoryError:
        return [None, OUT_OF_MEMORY.encode()]
    except Exception as e:
        if "allocat" in str(e).lower():  # (Resiliparse's CSS selector engine: "Failed to allocate selector memory")
            return [None, OUT_OF_MEMORY.encode()]
        return [None, f"{type(e).__name__}: {one_line(e, 300)}".encode("utf-8", "replace")]
    finally:
        space.lift()


class AddressSpace:
    """This process's address space limit (Linux: RLIMIT_AS; elsewhere nothing is limited): `limit(more)` lets it
    grow by `more` bytes from what it uses now, and never past the soft limit it had when this was made (a `ulimit
    -v` of the user's); `lift()` gives that limit back. Past it, an allocation fails: Python's and the HTML parser's
    as a MemoryError (`html_text`), the text extractor's (Rust) by ending the process (SIGABRT)."""

    def __init__(self):
        try:
            import resource

            self.resource = resource
            self.soft, self.hard = resource.getrlimit(resource.RLIMIT_AS)
        except (ImportError, OSError, ValueError):
            self.resource = None

    def limit(self, more: int) -> None:
        if self.resource is None:
            return
        try:
            with open("/proc/self/statm", "rb") as statm:
                soft = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + more
            if self.soft != self.resource.RLIM_INFINITY:
                soft = min(soft, self.soft)
            self.resource.setrlimit(self.resource.RLIMIT_AS, (soft, self.hard))
        except (OSError, ValueError):
            pass

    def lift(self) -> None:
        if self.resource is not None:
            try:
                self.resource.setrlimit(self.resource.RLIMIT_AS, (self.soft, self.hard))
            except (OSError, ValueError):
                pass


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
    """The command that starts a worker (the file descriptor of its replies' pipe is added as its last argument):
    this interpreter, its module path set to this process's `sys.path` (and this package's folder) before anything
    is imported; None where this interpreter cannot be run so (a frozen application, whose executable is the
    application itself)."""
    if not sys.executable or getattr(sys, "frozen", False):
        return None
    path = [entry for entry in sys.path if isinstance(entry, str)]  # (a Path or bytes entry is no literal here)
    path += [] if PACKAGE_ROOT in path else [PACKAGE_ROOT]
    return [sys.executable, "-c", f"import sys; sys.path[:] = {path!r}; "
            f"from ragloaders.core.html_text_workers import serve; serve(int(sys.argv[-1]), parent={os.getpid()})"]


LOG_BYTES = 1 << 20
"""A worker's log (what it prints: nothing, unless a library warns or the extractor dies) is emptied once over this."""
CRASHES = {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE}
"""Signals that end a worker from within (its Rust extractor aborts when an allocation fails): a worker so ended on a
page refused that page."""


class Worker:
    """One worker process: its stdin as a TimedWriter, its replies' pipe as a TimedReader, and what it prints (stdout
    and stderr) in an unnamed file, `log`, whose end a failure quotes."""

    def __init__(self, command: list[str]):
        self.log = tempfile.TemporaryFile()
        self.appends = fcntl is not None
        if self.appends:
            fcntl.fcntl(self.log.fileno(), fcntl.F_SETFL, fcntl.fcntl(self.log.fileno(), fcntl.F_GETFL) | os.O_APPEND)
        read_end, write_end = os.pipe()
        try:
            self.process = subprocess.Popen([*command, str(write_end)], stdin=subprocess.PIPE, stdout=self.log,
                                            stderr=self.log, pass_fds=(write_end,),
                                            env={**os.environ, "RUST_BACKTRACE": "0"})
        except BaseException:
            os.close(read_end)
            self.log.close()
            raise
        finally:
            os.close(write_end)
        self.requests = TimedWriter(self.process.stdin.fileno())
        self.replies = TimedReader(read_end)
        self.ready = False

    def last_words(self) -> str:
        """The end of what it printed, on one line ("" if nothing)."""
        size = os.fstat(self.log.fileno()).st_size
        self.log.seek(max(0, size - 2000))
        tail = self.log.read(2000).decode("utf-8", "replace")
        return one_line(tail, 300)

    def keep_log_small(self) -> None:
        if self.appends and os.fstat(self.log.fileno()).st_size > LOG_BYTES:
            os.ftruncate(self.log.fileno(), 0)  # (it appends: its next words start the file again)

    def wait_ready(self) -> None:
        """Until the worker has started (its first, empty frame), within START_SECONDS; WorkerEnded if it does not."""
        if self.ready:
            return
        self.replies.deadline = time.monotonic() + START_SECONDS
        try:
            frame = read_frame(self.replies)
        except TimeoutError:
            self.process.kill()
            raise WorkerEnded(f"the HTML-to-text worker process {self.process.pid} did not start within "
                              f"{START_SECONDS:.0f} s") from None
        if frame != []:
            raise WorkerEnded(f"the HTML-to-text worker process {self.process.pid} "
                              f"{TextWorkers.ended(self.process)} as it started")
        self.ready = True

    def close(self) -> None:
        """Close its stdin (a worker between two frames then ends)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def release(self) -> None:
        """Close the replies' pipe and the log (once the process has ended)."""
        try:
            os.close(self.replies.fd)
        except OSError:
            pass
        self.log.close()


class TextWorkers:
    """Worker processes for `texts`, one per calling thread, started on its first call; `close` (or leaving the
    `with` block) closes their stdin and waits for them (killing one that does not end within `timeout`)."""

    def __init__(self, command: list[str], timeout: float = 30.0):
        self.command, self.timeout = command, timeout
        self.local = threading.local()
        self.lock = threading.Lock()
        self.workers: list[Worker] = []
        self.closed = False

    def _worker(self) -> Worker:
        worker = getattr(self.local, "worker", None)
        if worker is None:
            with self.lock:
                if self.closed:
                    raise WorkerEnded("the HTML-to-text workers are closed")
                try:
                    worker = Worker(self.command)
                except OSError as e:
                    raise WorkerEnded(f"an HTML-to-text worker process could not be started ({e})") from None
                self.workers.append(worker)
            self.local.worker = worker
        return worker

    def texts(self, htmls: list[bytes | None]) -> list[str | None]:
        """`html_to_text` of each UTF-8 HTML (None stays None), computed in this thread's worker process; a
        PageError (the worker stopped) for a page not done within `page_seconds` (TooSlowPage), or that the worker
        refused or crashed on (PageRefused); WorkerEnded for a worker that ended otherwise (its `index`: the page it
        was on, if any)."""
        worker = self._worker()
        worker.wait_ready()
        texts: list[bytes | None] = []
        error, on_page = "", None
        try:
            worker.requests.deadline = time.monotonic() + page_seconds(sum(len(html or b"") for html in htmls))
            try:
                write_frame(worker.requests, htmls)
            except TimeoutError:
                error = "it did not read its pages within their time bound"
            for index, html in enumerate(htmls if not error else ()):
                on_page, size = index, len(html or b"")
                worker.replies.deadline = time.monotonic() + page_seconds(size)
                try:
                    frame = read_frame(worker.replies)
                except TimeoutError:
                    worker.process.kill()
                    raise TooSlowPage(index, size, page_seconds(size)) from None
                if frame is not None and len(frame) == 2 and frame[0] is None:
                    worker.process.kill()
                    raise PageRefused(index, size, one_line((frame[1] or b"").decode("utf-8", "replace"), 300))
                if frame is None or len(frame) != 1:
                    error = "a damaged reply" if frame is not None else ""
                    break
                texts += frame
        except (OSError, WorkerEnded) as e:
            if isinstance(e, PageError):
                raise
            error = str(e)
        if len(texts) == len(htmls):
            worker.keep_log_small()
            return [None if text is None else text.decode("utf-8", "surrogatepass") for text in texts]
        how = self.ended(worker.process)
        words = worker.last_words()
        if on_page is not None and -(worker.process.returncode or 0) in CRASHES:
            size = len(htmls[on_page] or b"")
            raise PageRefused(on_page, size, OUT_OF_MEMORY if "memory allocation" in words else
                              f"its worker crashed on it, killed by signal {-worker.process.returncode}"
                              f"{f': {words}' if words else ''}")
        at = f", at the page {on_page + 1}" if on_page is not None and len(htmls) > 1 else ""
        ended = WorkerEnded(f"the HTML-to-text worker process {worker.process.pid} {how} while extracting "
                            f"{len(htmls)} page(s){at}{f': {error}' if error else ''}"
                            f"{f'; its last words: {words}' if words else ''}")
        ended.index = on_page  # (the page it was on: a page can be what ended it)
        raise ended

    @staticmethod
    def ended(process: subprocess.Popen) -> str:
        """How a worker that failed to answer ended: it is given a second to end by itself, else stopped."""
        try:
            code = process.wait(1.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return "was stopped"
        return f"ended (killed by signal {-code})" if code < 0 else f"ended (exit code {code})"

    def kill(self) -> None:
        """End every worker now (a page being extracted is not waited for): a call of `texts` under way raises
        WorkerEnded."""
        with self.lock:
            self.closed = True
            for worker in self.workers:
                worker.process.kill()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            workers, self.workers = self.workers, []
        for worker in workers:
            worker.close()
        for worker in workers:
            try:
                worker.process.wait(self.timeout)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            worker.release()

    def __enter__(self) -> TextWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def texts_in_order(batches: Iterable[tuple[T, list[bytes | None]]], processes: int = PARSE_THREADS,
                   describe: Callable[[T, int | None], str] | None = None,
                   started: Callable[[Callable[[], None]], None] | None = None
                   ) -> Iterator[tuple[T, list[str | None]]]:
    """(item, `html_to_text` of each of its UTF-8 HTML (None stays None)) for each (item, HTML) batch, in order,
    computed in `processes` worker processes (at least one) while the caller reads the next batches and uses earlier
    texts (at most `processes` + 1 batches in flight); in this process, without bounds, only where no worker can be
    started (`worker_command`: a frozen application). A worker that ends before it answers is a WorkerEnded naming
    the batch (`describe(item, None)`); a page past its bounds, a PageError naming the page (`describe(item, its
    index in the batch)`). Every worker has ended when this generator is done or closed, and one that was still
    extracting is killed. `started`, if given, is called with a function that kills the workers, once they are
    started: for a caller on another thread (a FeedThread's `consume`, its `on_stop`)."""
    command = worker_command()
    if command is None:
        for item, htmls in batches:
            yield item, texts_of(htmls)
        return

    def texts(batch: tuple[T, list[bytes | None]]) -> tuple[T, list[str | None]]:
        item, htmls = batch
        try:
            return item, workers.texts(htmls)
        except PageError as e:
            if describe is None:
                raise
            e.args = (f"{e}; the page: {describe(item, e.index)}",)
            raise
        except WorkerEnded as e:
            if describe is None:
                raise
            page = getattr(e, "index", None)
            raise WorkerEnded(f"{e}; the batch: {describe(item, None)}" + (
                "" if page is None else f", that page: {describe(item, page)}")) from None

    with TextWorkers(command) as workers:
        if started is not None:
            started(workers.kill)
        yield from map_ahead(texts, batches, threads=max(1, processes), stop=workers.kill)
