"""Adversarial tests of `build --out` into batch spools making CRAG's derived configs in `records`' own pass
(crag.DerivedInPass on a FeedThread) and writing each config's Parquet behind (write_behind.py): whatever ends the
build early leaves no thread, no worker process and no file beside `--out`."""

from __future__ import annotations

import errno
import json
import threading
import time
from pathlib import Path

import pytest
from conftest import run_cli
from ragloaders.benchmarks.crag import builder as crag
from ragloaders.core import datasets_compat
from ragloaders.publish import build as publish_build
from ragloaders.publish.build import build_folder
from test_build_spool import crag_v5_both_splits
from test_html_text_workers import slow_page, worker_command_with, worker_pids


def our_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate()
            if thread.name == "ragloaders-feed" or thread.name.startswith("ragloaders-write-")]


def settled_threads(timeout: float = 5.0) -> list[str]:
    """Our threads still alive after `timeout` (a thread that is about to end is given the time)."""
    deadline = time.monotonic() + timeout
    while (names := our_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return names


def assert_nothing_left(tmp_path: Path, keep: tuple[str, ...] = ("v5",)) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    assert settled_threads() == []
    assert worker_pids() == set()


@pytest.fixture
def v5(tmp_path) -> Path:
    return crag_v5_both_splits(tmp_path / "v5")


@pytest.fixture(autouse=True)
def no_leaked_threads_between_tests():
    yield
    # a test that leaked a feed thread would otherwise make the next test fail for the wrong reason: release it
    for thread in threading.enumerate():
        if thread.name == "ragloaders-feed":
            for owner in list(_feeds):
                owner.stop()
    _feeds.clear()


_feeds: list = []


# --- A Ctrl-C that lands just after DerivedInPass started its thread -------------------------------------------------

def test_ctrl_c_right_after_the_feed_thread_started_leaves_no_feed_thread(v5, tmp_path, monkeypatch):
    # Before: in _tables_from_source, `derived = DerivedInPass(...)` (which starts the `ragloaders-feed` thread) came
    # before the `try:` whose `finally` discards it: a Ctrl-C (or any error) in the statements between - here the
    # TableBatcher made on the next line - left the thread waiting forever on its queue, and its spools open.
    original_init, original_batcher = crag.DerivedInPass.__init__, crag.TableBatcher
    armed = []

    def init(self, builders):
        original_init(self, builders)
        _feeds.append(self.feed)
        armed.append(True)

    def batcher(*args, **kwargs):
        if armed and threading.current_thread() is threading.main_thread():
            armed.clear()
            raise KeyboardInterrupt  # the Ctrl-C, delivered between DerivedInPass(...) and `try:`
        return original_batcher(*args, **kwargs)

    monkeypatch.setattr(crag.DerivedInPass, "__init__", init)
    monkeypatch.setattr(crag, "TableBatcher", batcher)
    with pytest.raises(KeyboardInterrupt):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


# --- Faults on the feed thread, at commit, and in the write behind --------------------------------------------------

def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("config", ["queries", "search_results", "top_ranked", "corpus"])
def test_a_full_disk_in_a_derived_spool_during_the_records_pass_leaves_nothing(config, v5, tmp_path, monkeypatch):
    original = datasets_compat.SpoolAhead.write
    writes = []

    def write(self, table):
        if self.builder.config.name == config and table is not None:
            writes.append(1)
            if len(writes) == 2 or config == "corpus":
                full_disk()
        return original(self, table)

    monkeypatch.setattr(datasets_compat.SpoolAhead, "write", write)
    monkeypatch.setattr(crag, "BATCH_ROWS", 2)
    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 20_000)
    with pytest.raises(Exception, match="(?i)no space left"):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("nth", [1, 2, 5, 8])
def test_a_full_disk_when_the_derived_spools_are_committed_leaves_nothing(nth, v5, tmp_path, monkeypatch):
    original = datasets_compat.SpoolAhead.commit
    commits = []

    def commit(self):
        commits.append(1)
        if len(commits) == nth:
            full_disk()
        return original(self)

    monkeypatch.setattr(datasets_compat.SpoolAhead, "commit", commit)
    with pytest.raises(Exception, match="(?i)no space left"):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("config", ["records", "queries", "corpus", "top_ranked"])
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_an_error_in_a_config_write_behind_or_beside_leaves_nothing(config, v5, tmp_path, monkeypatch):
    original = publish_build.write_parquet
    started = threading.Event()

    def write_parquet(plan, folder, split, stop=None):
        if Path(folder).name == config:
            full_disk()
        if Path(folder).name == "records":  # slow the first write so that later configs are written beside it
            started.set()
            time.sleep(0.3)
        return original(plan, folder, split, stop)

    monkeypatch.setattr(publish_build, "write_parquet", write_parquet)
    with pytest.raises(Exception, match="(?i)no space left"):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("at", ["put", "finish", "beside"])
def test_ctrl_c_in_the_main_thread_at_each_step_leaves_nothing(at, v5, tmp_path, monkeypatch):
    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 20_000)  # workers busy while the records are still being read
    if at in ("put", "finish"):
        target = {"put": crag.FeedThread.put, "finish": crag.FeedThread.finish}[at]
        calls = []

        def interrupted(self, *args):
            calls.append(1)
            if at == "finish" or len(calls) == 6:
                raise KeyboardInterrupt
            return target(self, *args)

        monkeypatch.setattr(crag.FeedThread, at, interrupted)
    else:
        original = publish_build.write_config

        def write_config(dataset_builder, plans, staging, stop=None):
            if stop is None:  # on the main thread, beside the write behind
                raise KeyboardInterrupt
            stop.wait(60)  # the write behind runs until the build stops it: the next config is written beside it
            return original(dataset_builder, plans, staging, stop)

        monkeypatch.setattr(publish_build, "write_config", write_config)
    with pytest.raises(KeyboardInterrupt):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("position", [0, 1, 5, -1])
def test_a_bad_record_anywhere_leaves_nothing(position, tmp_path, monkeypatch):
    from ragloaders.core.errors import SourceError
    from test_crag import release_lines

    lines = release_lines("v5")
    lines[position] = b'{"interaction_id": "x", "query": "q", "split": 1, "oops": 1}'
    folder = crag_v5_both_splits(tmp_path / "v5", lines)
    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 1 << 20)
    with pytest.raises(SourceError):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(folder))
    assert_nothing_left(tmp_path)


def test_a_page_whose_text_fails_in_its_worker_is_named_and_leaves_nothing(v5, tmp_path, monkeypatch):
    from ragloaders.core.errors import PageError

    worker_command_with(monkeypatch, "extract, calls = w.html_to_text, [0]\n"
                                     "def failing(html):\n"
                                     "    calls[0] += 1\n"
                                     "    if calls[0] == 5: raise ValueError('resiliparse failed on this page')\n"
                                     "    return extract(html)\n"
                                     "w.html_to_text = failing")
    with pytest.raises(PageError) as caught:
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert "the HTML parser refused a page of" in str(caught.value)
    assert "(ValueError: resiliparse failed on this page)" in str(caught.value)
    assert "; the page: corpus page " in str(caught.value)
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("frames", [1, 3])
def test_a_text_worker_that_dies_after_some_batches_leaves_nothing(frames, v5, tmp_path, monkeypatch):
    from ragloaders.core.errors import WorkerEnded

    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 20_000)
    worker_command_with(monkeypatch, "import os; read, count = w.read_frame, [0]\n"
                                     "def counted(source):\n"
                                     f"    count[0] += 1\n    if count[0] > {frames}: os._exit(3)\n"
                                     "    return read(source)\n"
                                     "w.read_frame = counted")
    with pytest.raises(WorkerEnded, match="exit code 3"):
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(v5))
    assert_nothing_left(tmp_path)


@pytest.mark.slow  # (the real bound of a 2.3 MB page, ~33 s; CI runs it)
def test_a_page_shaped_to_be_slow_stops_the_build_at_its_time_bound_and_is_named(tmp_path):
    # 250,000 distinct attribute names on one element: the extractor alone would take minutes (its time grows with
    # their square); the page's bound (10 s + 10 s per MB) stops it, and the one-line error names the page.
    from test_crag import release_lines

    lines = release_lines("v5")
    record = json.loads(lines[3])
    page = record["search_results"][1]
    page["page_result"], page["page_url"] = slow_page(250_000).decode(), "https://example.com/slow\x1b[2J"
    lines[3] = json.dumps(record).encode()
    folder = crag_v5_both_splits(tmp_path / "v5", lines)
    code, out, err = run_cli("build", "crag/task_1_and_2", "--data-dir", str(folder), "--out", str(tmp_path / "out"))
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    seconds = 10 + 10 * len(page["page_result"]) / (1 << 20)
    assert f"was not extracted within {seconds:.0f} s, the bound for its size" in err
    assert f"corpus page {crag.page_id(page['page_url'], page['page_result'])} " in err
    assert "page_url 'https://example.com/slow\\x1b[2J'" in err  # (a preview: no terminal escape printed)
    assert_nothing_left(tmp_path)
