"""HTML to text in worker processes (core/html_text_workers.py): the texts `html_to_text` gives in this process, in
order, from real pages; frames that survive every value; a worker that dies or cannot start is a clear error; no
worker outlives its use, Ctrl-C included; a worker imports what its parent imports (never the current folder's
modules), prints nothing between its frames, and never runs the user's `__main__` again."""

from __future__ import annotations

import bz2
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from conftest import DATA, assert_names
from ragloaders.core import html_text_workers
from ragloaders.core.errors import WorkerEnded
from ragloaders.core.html_text import html_to_text
from ragloaders.core.html_text_workers import (
    OUT_OF_MEMORY,
    PageRefused,
    TextWorkers,
    TooSlowPage,
    read_frame,
    texts_in_order,
    worker_command,
    write_frame,
)


def real_pages() -> list[str | None]:
    with bz2.open(DATA / "crag" / "dev_data.jsonl.bz2") as f:
        return [page["page_result"] for line in f for page in json.loads(line)["search_results"]]


def encoded(html: str | None) -> bytes | None:
    return None if html is None else html.encode("utf-8", "surrogatepass")


def worker_pids() -> set[int]:
    """The worker processes running under this one. A zombie (ended, not yet waited for: e.g. what a Spark session of
    another test leaves in this pytest worker) has no command line to read, and is no running worker."""
    return {child.pid for child in workers_of(psutil.Process(), recursive=True)}


def workers_of(process: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
    """The HTML-to-text worker processes running under `process` (see worker_pids)."""
    workers = []
    for child in process.children(recursive=recursive):
        try:
            if "html_text_workers" in " ".join(child.cmdline()):
                workers.append(child)
        except psutil.NoSuchProcess:  # (ZombieProcess is one)
            pass
    return workers


ODD = [None, "", " \n\t ", "<p>a\u2028b\x00c</p>", "<p>\ud800 lone</p>", "<b>" * 5000 + "deep",
       "<script>x</script><p>é 😀</p>"]


@pytest.mark.parametrize("items", [[], [None], [b""], [None, b"", b"x", b"\x00\xff" * 3, bytes(range(256))]])
def test_a_frame_gives_back_what_was_written(items):
    stream = io.BytesIO()
    write_frame(stream, items)
    write_frame(stream, items[::-1])
    stream.seek(0)
    assert read_frame(stream) == items
    assert read_frame(stream) == items[::-1]
    assert read_frame(stream) is None


@pytest.mark.parametrize("cut", [1, 4, 5, 12, 13, 20])
def test_a_frame_cut_short_is_worker_ended(cut):
    stream = io.BytesIO()
    write_frame(stream, [b"abcdefgh", None, b"xyz"])
    with pytest.raises(WorkerEnded):
        read_frame(io.BytesIO(stream.getvalue()[:cut]))


@pytest.mark.parametrize("frame", [
    b"\xff\xff\xff\xff",  # a count past MAX_FRAME_ITEMS: refused before anything is read or allocated for it
    b"\x01\x00\x00\x00" + (-2).to_bytes(8, "little", signed=True),
    b"\x01\x00\x00\x00" + (1 << 62).to_bytes(8, "little"),  # a length far past what follows
])
def test_a_damaged_frame_is_worker_ended(frame):
    with pytest.raises(WorkerEnded):
        read_frame(io.BytesIO(frame))


def worker_command_with(monkeypatch, code: str) -> None:
    """Workers that run `code` (with `w`, the workers' module) before they serve."""
    command = worker_command()
    changed = command[-1].replace("; serve(", f"; import ragloaders.core.html_text_workers as w\n{code}\nserve(")
    assert changed != command[-1]  # (the worker's command changed shape: the test would prove nothing)
    monkeypatch.setattr(html_text_workers, "worker_command", lambda: [*command[:-1], changed])


def slow_page(names: int) -> bytes:
    """One element with `names` distinct attribute names: the extractor's time grows with their square (40,000 names,
    269 KB: ~2.6 s on a quiet machine; 150,000, 1.3 MB: ~42 s)."""
    return b"<html><body><div " + b" ".join(b"a%d" % i for i in range(names)) + b">x</div></body></html>"


@pytest.fixture
def short_bounds(monkeypatch):
    """Time bounds a page of slow_page(40_000) cannot meet (the real ones, 10 s + 10 s per MB, are tested through a
    whole build in test_derived_in_pass_adversarial.py)."""
    monkeypatch.setattr(html_text_workers, "BASE_SECONDS", 1.0)
    monkeypatch.setattr(html_text_workers, "SECONDS_PER_MB", 0.0)


def test_a_page_past_its_time_bound_is_stopped_and_named(short_bounds):
    slow = slow_page(40_000)
    batches = [("first", [b"<p>fine</p>"]), ("second", [b"<p>ok</p>", slow, b"<p>never</p>"]), ("third", [b"x"])]
    given = []
    with pytest.raises(TooSlowPage) as caught:
        for item, _ in texts_in_order(batches, processes=2, describe=lambda item, index: f"<{item} #{index}>"):
            given.append(item)
    assert given == ["first"]
    assert (caught.value.index, caught.value.size) == (1, len(slow))
    assert f"a page of {len(slow):,} bytes of HTML was not extracted within 1 s" in str(caught.value)
    assert str(caught.value).endswith("; the page: <second #1>")
    assert worker_pids() == set()  # the worker on it was killed, the other one closed


def memory_bomb(formatting: int = 600, size: int = 63_000) -> bytes:
    """`formatting` unclosed <b> with distinct attributes (so the parser's list of them is never trimmed), then
    blocks of text up to `size` bytes: the parser clones every <b> for each block (600 in 63 KB: about 1.1 GB)."""
    head = b"<div>" + b"".join(b"<b c=%d>" % index for index in range(formatting)) + b"</div>"
    return head + b"<div>x</div>" * ((size - len(head)) // 12)


def test_a_page_past_its_memory_bound_is_refused_and_named():
    bomb = memory_bomb()
    batches = [("first", [b"<p>fine</p>"]), ("second", [b"<p>ok</p>", None, bomb, b"<p>never</p>"])]
    with pytest.raises(PageRefused) as caught:
        list(texts_in_order(batches, processes=1, describe=lambda item, index: f"<{item} #{index}>"))
    assert (caught.value.index, caught.value.size, caught.value.reason) == (2, len(bomb), OUT_OF_MEMORY)
    assert f"a page of {len(bomb):,} bytes of HTML needed more memory than its bound" in str(caught.value)
    assert str(caught.value).endswith("; the page: <second #2>")
    assert worker_pids() == set()


def test_every_page_is_extracted_in_a_worker_even_with_one_process(monkeypatch):
    # Nothing can stop the extractor in this process (it holds the GIL), nor bound its memory: with a worker to be
    # had, no page is extracted here, however small.
    here = []
    monkeypatch.setattr(html_text_workers, "texts_of", lambda htmls: here.append(htmls))
    got = list(texts_in_order([(0, [b"<p>a</p>", None]), (1, [b"<p>b</p>"])], processes=1))
    assert got == [(0, ["a", None]), (1, ["b"])] and here == []


def test_where_no_worker_can_start_the_texts_are_extracted_here(monkeypatch):
    monkeypatch.setattr(html_text_workers, "worker_command", lambda: None)  # (a frozen application)
    assert list(texts_in_order([(0, [b"<p>a</p>", None])], processes=2)) == [(0, ["a", None])]
    assert worker_pids() == set()


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_worker_that_stops_reading_is_stopped_at_its_bound(short_bounds, monkeypatch):
    with TextWorkers(worker_command(), timeout=5) as workers:
        assert workers.texts([b"<p>one</p>"]) == ["one"]
        monkeypatch.setattr(html_text_workers, "BASE_SECONDS", 0.3)  # (the worker has started)
        (worker,) = workers.workers
        os.kill(worker.process.pid, signal.SIGSTOP)  # (the frame below is larger than the pipe's buffer)
        try:
            with pytest.raises(WorkerEnded) as error:
                workers.texts([b"<p>" + b"x" * (1 << 20) + b"</p>"])
        finally:
            with contextlib.suppress(ProcessLookupError):  # (stopped: killed and waited for)
                os.kill(worker.process.pid, signal.SIGCONT)
        assert_names(error.value, "was stopped", "did not read its pages within their time bound")
    assert worker_pids() == set()


def test_the_workers_give_html_to_text_of_real_and_odd_pages_in_order():
    pages = real_pages() + ODD
    batches = [(start, [encoded(html) for html in pages[start:start + 7]]) for start in range(0, len(pages), 7)]
    got = list(texts_in_order(batches, processes=2))
    assert [start for start, _ in got] == [start for start, _ in batches]
    texts = [text for _, batch in got for text in batch]
    assert texts == [None if html is None else html_to_text(html) for html in pages]
    assert len(texts) > 50 and any(text for text in texts)
    assert worker_pids() == set()


@pytest.mark.slow
def test_one_process_computes_the_same_texts_here():
    pages = real_pages()[:10] + ODD
    batch = [encoded(html) for html in pages]
    assert list(texts_in_order([("only", batch)], processes=1)) == list(texts_in_order([("only", batch)], processes=2))


def test_a_worker_that_dies_is_a_clear_error_and_the_rest_are_stopped():
    workers = TextWorkers(worker_command(), timeout=5)
    try:
        assert workers.texts([b"<p>one</p>"]) == ["one"]
        (worker,) = workers.workers
        process = worker.process
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(WorkerEnded) as error:
            workers.texts([b"<p>two</p>", None])
        assert_names(error.value, f"process {process.pid}", "killed by signal 9", "2 page(s)")
    finally:
        workers.close()
    assert worker_pids() == set()


def test_closing_the_texts_early_ends_every_worker():
    pages = [encoded(html) for html in real_pages()]
    texts = texts_in_order(((index, [html]) for index, html in enumerate(pages)), processes=2)
    next(texts)
    assert worker_pids()
    texts.close()
    assert worker_pids() == set()


def test_a_worker_ignores_ctrl_c_and_ends_when_its_input_closes():
    with TextWorkers(worker_command(), timeout=5) as workers:
        workers.texts([b"<p>a</p>"])
        (worker,) = workers.workers
        process = worker.process
        os.kill(process.pid, signal.SIGINT)  # as Ctrl-C sends it to the whole process group
        assert workers.texts([b"<p>b</p>"]) == ["b"]
    assert process.returncode == 0


def run_user_script(tmp_path, code: str, *, interpreter: str = sys.executable, cwd=None, env=None):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([interpreter, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=cwd or tmp_path, env=env or os.environ)


def test_workers_run_this_package_and_never_the_users_main(tmp_path):
    # multiprocessing's spawn and forkserver import the user's __main__ again in each worker: a script with no
    # `if __name__ == "__main__"` guard would then run its own work once more in every worker.
    marker = tmp_path / "runs"
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(f"""
        from ragloaders.core import html_text_workers
        from ragloaders.core.html_text_workers import texts_in_order
        with open({str(marker)!r}, "a") as f:
            f.write("ran\\n")
        print(list(texts_in_order([(0, [b"<p>x</p>"]), (1, [b"<p>y</p>"]), (2, [None])], processes=2)))
    """))
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": loaders})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(0, ['x']), (1, ['y']), (2, [None])]"
    assert marker.read_text() == "ran\n"


def test_a_worker_imports_what_its_parent_imports_not_the_modules_of_the_current_folder(tmp_path):
    # `python -c` puts the current folder first on the module path: a worker started in a folder holding `html.py`
    # ran that file (the user's script, run from elsewhere, never does)
    shadows = tmp_path / "work"
    shadows.mkdir()
    for name in ("html", "struct", "signal", "resiliparse"):
        (shadows / f"{name}.py").write_text('raise SystemExit("imported from the current folder")\n')
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    done = run_user_script(tmp_path, f"""
        import sys
        sys.path.insert(0, {loaders!r})
        from ragloaders.core import html_text_workers
        from ragloaders.core.html_text_workers import texts_in_order
        print(list(texts_in_order([(0, [b"<p>x</p>"]), (1, [b"<p>y</p>"])], processes=2)))
    """, cwd=shadows, env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[(0, ['x']), (1, ['y'])]"


def test_a_worker_finds_what_its_parent_put_on_its_module_path_at_run_time(tmp_path):
    # a notebook or an application that adds folders to sys.path before importing ragloaders: its workers must
    # import from them too (the base interpreter below has no Resiliparse of its own)
    base = os.path.join(sys.base_prefix, "bin", "python3")
    if not os.path.exists(base) or subprocess.run([base, "-c", "import resiliparse"],
                                                  capture_output=True).returncode == 0:
        pytest.skip("needs a base interpreter without Resiliparse (a virtual environment's base)")
    import resiliparse

    site = os.path.dirname(os.path.dirname(resiliparse.__file__))
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    done = run_user_script(tmp_path, f"""
        import sys
        sys.path[:0] = [{loaders!r}, {site!r}]
        from ragloaders.core import html_text_workers
        from ragloaders.core.html_text_workers import texts_in_order
        print(list(texts_in_order([(0, [b"<p>x</p>"]), (1, [None])], processes=2)))
    """, interpreter=base, env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[(0, ['x']), (1, [None])]"


SLOW_PAGE_CHILD = textwrap.dedent("""
    import sys, time
    from ragloaders.core import html_text_workers
    from ragloaders.core.html_text_workers import texts_in_order
    slow = b"<div " + b" ".join(b"a%d=1" % i for i in range(100_000)) + b">x</div>"  # a minute of Resiliparse
    print("started", flush=True)
    try:
        list(texts_in_order([(0, [slow]), (1, [b"<p>y</p>"])][:int(sys.argv[1])], processes=2))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


def ctrl_c_while_a_worker_extracts(command: list[str], timeout: float = 60) -> tuple[str, int, list[psutil.Process]]:
    """Run `command` (it prints "started", then extracts a slow page in a worker) in a process group of its own,
    send the group SIGINT once a worker has spent a second on the page, and give (its stdout, its exit code, the
    workers it had)."""
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": loaders},
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == "started"
        process, deadline = psutil.Process(child.pid), time.monotonic() + timeout
        while not (workers := workers_of(process)) or \
                max(worker.cpu_times().user for worker in workers) < 1:  # the slow page is being extracted
            assert time.monotonic() < deadline, "no worker took up the slow page"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group; the workers ignore it
        out, _ = child.communicate(timeout=20)  # the slow page alone would take about a minute
    finally:
        child.kill()
    return out, child.returncode, workers


@pytest.mark.slow
@pytest.mark.parametrize("batches", [2, 1])  # 1: the batch waited for was the last one in flight, and was not killed
def test_ctrl_c_kills_a_worker_still_extracting_instead_of_waiting_for_it(batches, tmp_path):
    out, code, workers = ctrl_c_while_a_worker_extracts([sys.executable, "-c", SLOW_PAGE_CHILD, str(batches)])
    assert out.strip() == "interrupted" and code == 0
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)


def test_a_worker_that_ends_is_named_with_its_pages_through_a_crag_corpus_load(tmp_path, monkeypatch):
    import ragloaders
    from ragloaders.core import html_text_workers as workers_module

    monkeypatch.setattr(workers_module, "worker_command",
                        lambda: [sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    with pytest.raises(WorkerEnded) as error:
        ragloaders.load("crag/task_1_and_2", "corpus", data_dir=str(DATA / "crag"), cache_dir=str(tmp_path))
    assert_names(error.value, "killed by signal 9", "corpus page(s) of the records")
    assert worker_pids() == set()


def test_a_worker_that_cannot_start_is_a_clear_error(tmp_path):
    with TextWorkers([str(tmp_path / "no-such-interpreter")]) as workers, pytest.raises(WorkerEnded) as error:
        workers.texts([b"<p>x</p>"])
    assert_names(error.value, "could not be started", "no-such-interpreter")


def test_a_module_path_entry_that_is_not_a_string_does_not_stop_the_workers(monkeypatch):
    import pathlib

    monkeypatch.setattr(sys, "path", [pathlib.Path("/nowhere"), b"/nowhere", *sys.path])
    assert list(texts_in_order([(0, [b"<p>x</p>"])], processes=2)) == [(0, ["x"])]


def test_what_a_worker_prints_goes_to_its_log_not_between_its_frames(tmp_path, monkeypatch):
    # The frames go to a pipe of their own: output at the interpreter's start (a sitecustomize, a .pth file) or from
    # a library during a page lands in the worker's log.
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text("print('noise at start')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(noisy), os.environ.get("PYTHONPATH", "")]))
    worker_command_with(monkeypatch, "extract = w.html_to_text\n"
                                     "w.html_to_text = lambda html: (print('noise from a library'), extract(html))[1]")
    started = time.monotonic()
    assert list(texts_in_order([(0, [b"<p>a</p>", None, b"<b>b</b>"])], processes=1)) == [(0, ["a", None, "b"])]
    assert time.monotonic() - started < 20  # (not the 30 s wait for a worker whose frames were damaged)
    assert worker_pids() == set()


@pytest.mark.slow  # (a worker given a minute's page, its parent killed a second in; CI runs it)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_ends_with_its_parent_killed_mid_page():
    """A parent killed with SIGKILL closes the workers' stdin, which a worker reads only between pages: one busy with
    a slow page went on, orphaned, until the page was done (minutes here)."""
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    slower = SLOW_PAGE_CHILD.replace("range(100_000)", "range(300_000)")  # (minutes: quadratic in the attributes)
    child = subprocess.Popen([sys.executable, "-c", slower, "1"], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": loaders})
    workers: list[psutil.Process] = []
    try:
        assert child.stdout.readline().strip() == "started"
        process, deadline = psutil.Process(child.pid), time.monotonic() + 60
        while not (workers := workers_of(process)) or max(worker.cpu_times().user for worker in workers) < 1:
            assert time.monotonic() < deadline, "no worker took up the slow page"
            time.sleep(0.05)
        child.kill()
        child.wait()
        ended = time.monotonic() + 30  # (a safety net for the wait: the page alone takes minutes)
        while any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers):
            assert time.monotonic() < ended, "a worker outlived its killed parent"
            time.sleep(0.05)
    finally:
        child.kill()
        for worker in workers:  # (a worker that outlived it, when this fails)
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.kill()


def test_a_worker_that_ends_on_a_page_names_that_page(monkeypatch):
    # (a crash of the extractor on a page, say: the page is the first suspect)
    worker_command_with(monkeypatch, "import os\nextract = w.html_to_text\n"
                                     "w.html_to_text = lambda html: os._exit(5) if 'boom' in html else extract(html)")
    with pytest.raises(WorkerEnded) as error:
        list(texts_in_order([("b", [b"<p>x</p>", None, b"<p>boom</p>", b"y"])], processes=1,
                            describe=lambda item, index: f"<{item} {index}>"))
    assert str(error.value).endswith("(exit code 5) while extracting 4 page(s), at the page 3; the batch: <b None>, "
                                     "that page: <b 2>")
    assert worker_pids() == set()


@pytest.mark.parametrize("last_words, reason", [
    ("memory allocation of 2359296 bytes failed", "needed more memory than its bound"),
    ("thread panicked", "its worker crashed on it, killed by signal 6: thread panicked"),
])
def test_a_worker_that_crashes_on_a_page_refuses_that_page_in_one_line(monkeypatch, capfd, last_words, reason):
    # Resiliparse's Rust code aborts the process when an allocation fails (its parse within the bound, the text
    # past it): what the worker printed stays in its log, quoted in the error, never on the user's terminal.
    worker_command_with(monkeypatch, "import os, sys\nextract = w.html_to_text\n"
                                     f"def crash(html):\n    if 'boom' in html:\n        print({last_words!r}, "
                                     "file=sys.stderr, flush=True)\n        os.abort()\n    return extract(html)\n"
                                     "w.html_to_text = crash")
    with pytest.raises(PageRefused) as error:
        list(texts_in_order([("b", [b"<p>x</p>", b"<p>boom</p>"])], processes=1,
                            describe=lambda item, index: f"<{item} {index}>"))
    assert reason in str(error.value) and str(error.value).endswith("; the page: <b 1>")
    assert last_words not in capfd.readouterr().err
    assert worker_pids() == set()


def test_a_worker_killed_between_batches_names_no_page_of_the_next():
    with TextWorkers(worker_command(), timeout=5) as workers:
        assert workers.texts([b"<p>one</p>"]) == ["one"]
        (worker,) = workers.workers
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        with pytest.raises(WorkerEnded) as error:
            workers.texts([b"<p>two</p>", b"<p>three</p>"])
    assert error.value.index is None and "at the page" not in str(error.value)


def test_the_address_space_bound_keeps_the_users_own_limit():
    # (in a child: this process's limits stay as they are)
    code = textwrap.dedent("""
        import resource
        from ragloaders.core.html_text_workers import AddressSpace
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))  # the user's `ulimit -S -v`
        space = AddressSpace()
        space.limit(64 << 30)
        assert resource.getrlimit(resource.RLIMIT_AS)[0] == 8 << 30, "past the user's limit"
        space.limit(1 << 20)
        assert resource.getrlimit(resource.RLIMIT_AS)[0] < 8 << 30
        space.lift()
        assert resource.getrlimit(resource.RLIMIT_AS)[0] == 8 << 30
        print("ok")
    """)
    loaders = os.path.dirname(os.path.dirname(os.path.dirname(html_text_workers.__file__)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": loaders})
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
