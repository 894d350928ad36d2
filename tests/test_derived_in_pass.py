"""`build --out` into batch spools makes CRAG's derived configs during `records`' own pass (crag.DerivedInPass, on a
core.readers.threads.FeedThread): byte for byte the files of the build from the Arrow cache, with no derived config
reading `records` back; and whatever ends that pass early (a bad record, a text worker that dies, Ctrl-C) leaves no
thread, no worker process and no file."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time

import psutil
import pytest
from conftest import assert_names
from ragloaders.benchmarks.crag import builder as crag
from ragloaders.core import html_text_workers
from ragloaders.core.errors import SourceError, WorkerEnded
from ragloaders.core.output_target import OutputFolderError
from ragloaders.core.readers.threads import FeedStopped, FeedThread
from ragloaders.publish.build import build_folder
from test_build_spool import built_files, crag_v5_both_splits
from test_html_text_workers import ctrl_c_while_a_worker_extracts, worker_pids


def feed_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "ragloaders-feed"]


# --- FeedThread ------------------------------------------------------------------------------------------------------

def test_a_feed_thread_gives_the_items_in_order_and_ends_with_finish():
    got = []
    feed = FeedThread(lambda items, on_stop: got.extend(items), ahead=2)
    for item in range(1000):
        feed.put(item)
    feed.finish()
    assert got == list(range(1000)) and not feed.thread.is_alive()


def test_an_error_of_the_feed_reaches_the_caller_at_its_next_put_even_with_a_full_queue():
    def consume(items, on_stop):
        next(items)
        raise ValueError("page 1 is bad")

    feed = FeedThread(consume, ahead=1)
    with pytest.raises(ValueError, match="page 1 is bad"):
        for item in range(10_000):  # a put must not wait for a thread that no longer reads
            feed.put(item)
    assert not feed.thread.is_alive()
    feed.stop()  # (what a caller's clean-up does next) returns, and raises nothing more


def test_an_error_of_the_feed_after_the_last_item_is_raised_by_finish():
    def consume(items, on_stop):
        list(items)
        raise WorkerEnded("the worker ended")

    feed = FeedThread(consume)
    feed.put(1)
    with pytest.raises(WorkerEnded, match="the worker ended"):
        feed.finish()
    assert not feed.thread.is_alive()


def test_a_feed_whose_consume_returned_early_refuses_more_items_instead_of_dropping_them():
    feed = FeedThread(lambda items, on_stop: next(items), ahead=1)
    with pytest.raises(RuntimeError, match="ended before its items did"):
        for item in range(100):
            feed.put(item)
    assert not feed.thread.is_alive()


def test_stop_ends_a_feed_waiting_for_items_and_one_waiting_for_its_own_work():
    ended: list[type] = []

    def waiting_for_items(items, on_stop):
        try:
            list(items)
        except FeedStopped:
            ended.append(FeedStopped)
            raise

    feed = FeedThread(waiting_for_items)
    feed.put(1)
    feed.stop()
    assert ended == [FeedStopped] and not feed.thread.is_alive()

    released = threading.Event()

    def waiting_for_a_worker(items, on_stop):
        on_stop(released.set)  # e.g. a worker process killed: the wait below returns
        next(items)
        if not released.wait(60):
            raise AssertionError("stop did not call the stopper")

    feed = FeedThread(waiting_for_a_worker)
    feed.put(1)
    started = time.monotonic()
    feed.stop()
    assert released.is_set() and not feed.thread.is_alive() and time.monotonic() - started < 30


# --- CRAG's derived configs in the records pass ----------------------------------------------------------------------

def no_read_back(monkeypatch) -> None:
    for name in ("page_batches_from", "record_rows_from", "rows_in_file_order"):
        monkeypatch.setattr(crag, name, lambda *a, name=name, **k: pytest.fail(f"`records` read back ({name})"))


def test_every_derived_config_is_made_in_the_records_pass_and_is_the_cache_build(crag_build, tmp_path, monkeypatch):
    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 1 << 20)  # (several batches of pages in the workers)
    no_read_back(monkeypatch)
    passes, lines = [], crag.CragSource.lines
    monkeypatch.setattr(crag.CragSource, "lines", lambda self: passes.append(1) or lines(self))
    out = tmp_path / "out"
    build_folder(crag_build.path, str(out), data_dir=crag_build.data_dir)

    assert len(passes) == 1
    built, from_cache = built_files(out), built_files(crag_build.out)
    parquet = sorted(name for name in from_cache if name.endswith(".parquet"))
    assert {name.split("/")[0] for name in parquet} == {"records", "queries", "corpus", "search_results",
                                                         "top_ranked"}
    assert sorted(built) == sorted(from_cache)
    for name in parquet:
        assert built[name] == from_cache[name], name
    assert feed_threads() == [] and worker_pids() == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.slow
def test_both_splits_are_made_in_the_records_pass_as_the_cache_build_makes_them(tmp_path, monkeypatch):
    folder = crag_v5_both_splits(tmp_path / "v5")
    out = tmp_path / "out"
    build_folder("crag/task_1_and_2", str(out), data_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    from_cache = built_files(out)
    os.rename(out, tmp_path / "from-cache")
    no_read_back(monkeypatch)
    build_folder("crag/task_1_and_2", str(out), data_dir=str(folder))

    built = built_files(out)
    assert {"queries/validation-00000-of-00001.parquet", "search_results/test-00000-of-00001.parquet"} <= set(built)
    assert built == from_cache


def test_a_text_worker_that_dies_in_the_records_pass_is_named_and_leaves_nothing(crag_build, tmp_path, monkeypatch):
    monkeypatch.setattr(html_text_workers, "worker_command",
                        lambda: [sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    with pytest.raises(WorkerEnded) as error:
        build_folder(crag_build.path, str(tmp_path / "out"), data_dir=crag_build.data_dir)
    assert_names(error.value, "killed by signal 9", "corpus page(s) of the records")
    assert list(tmp_path.iterdir()) == []  # no output, no work folder, no spool
    assert feed_threads() == [] and worker_pids() == set()


def test_a_bad_record_after_the_derived_rows_began_leaves_no_thread_no_worker_and_no_file(tmp_path, monkeypatch):
    from test_crag import release_lines

    lines = release_lines("v5")
    lines[7] = b'{"interaction_id": "x", "query": "q", "split": 1, "oops": 1}'
    folder = crag_v5_both_splits(tmp_path / "v5", lines)
    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 1 << 20)  # the workers are busy when the bad record comes
    with pytest.raises(SourceError) as error:
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(folder))
    assert error.value.record == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v5"]
    assert feed_threads() == [] and worker_pids() == set()


CTRL_C_CHILD = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)  # pytest run as a background job passes it ignored
    from ragloaders.core import html_text_workers
    from ragloaders.publish.build import build_folder
    print("started", flush=True)
    try:
        build_folder("crag/task_1_and_2", sys.argv[2], data_dir=sys.argv[1])
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


@pytest.mark.slow
def test_ctrl_c_while_a_worker_extracts_a_slow_page_of_the_records_pass_ends_at_once(tmp_path):
    from test_crag import release_lines

    record = json.loads(release_lines("v5")[0])
    slow = "<div " + " ".join(f"a{i}=1" for i in range(100_000)) + ">x</div>"  # a minute of Resiliparse
    record["search_results"][0]["page_result"] = slow
    folder = crag_v5_both_splits(tmp_path / "v5", [json.dumps(record).encode(), *release_lines("v5")[1:]])
    out, code, workers = ctrl_c_while_a_worker_extracts(
        [sys.executable, "-c", CTRL_C_CHILD, str(folder), str(tmp_path / "out")], timeout=120)
    assert out.strip() == "interrupted" and code == 0
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v5"]


def test_a_corpus_spool_that_fails_while_the_workers_run_leaves_no_worker_behind(crag_build, tmp_path, monkeypatch):
    """Before: the error, raised in the thread's loop around corpus_tables, kept that generator (and its workers,
    killed but never waited for: zombies) alive in its traceback for as long as the caller held the error."""
    from ragloaders.core import datasets_compat

    monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 1 << 20)
    monkeypatch.setattr(crag, "BATCH_ROWS", 2)  # a corpus table is written while the workers still extract
    write = datasets_compat.SpoolAhead.write

    def full_disk(self, table):
        if self.split == "corpus" and table is not None:
            raise OSError(28, "No space left on device")
        write(self, table)

    monkeypatch.setattr(datasets_compat.SpoolAhead, "write", full_disk)
    with pytest.raises(OutputFolderError, match="no space left") as caught:
        build_folder(crag_build.path, str(tmp_path / "out"), data_dir=crag_build.data_dir)
    assert caught.value.__cause__.__traceback__ is not None  # (the error, and its traceback, still held here)
    assert worker_pids() == set() and feed_threads() == []
    assert list(tmp_path.iterdir()) == []
