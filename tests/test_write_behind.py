"""`build --out` writes a config's Parquet on a thread of its own while the next config is prepared
(publish/write_behind.py): the next preparation really runs beside the write, a config that reads the one being
written waits for it, and an error on either side is the build's one error with nothing left running or behind."""

from __future__ import annotations

import errno
import shutil
import threading
from pathlib import Path

import pytest
from conftest import declared_samples
from ragloaders.core.errors import SourceError
from ragloaders.core.output_target import OutputFolderError
from ragloaders.publish import build as publish_build
from ragloaders.publish.build import build_folder
from ragloaders.publish.write_behind import WriteBehind, WriteStopped

CRAG = "crag/task_1_and_2"


def write_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("ragloaders-write-")]


class Recorder:
    """Wraps write_config and the builders' preparation to record (event, config, thread name) in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.events: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        real_write = publish_build.write_config

        def write_config(dataset_builder, plans, staging, stop=None):
            config = dataset_builder.config.name
            self.record("write begins", config)
            self.before_write(config, stop)
            try:
                return real_write(dataset_builder, plans, staging, stop)
            finally:
                self.record("write ends", config)

        monkeypatch.setattr(publish_build, "write_config", write_config)
        real_builder = publish_build.builder

        def builder(*args, **kwargs):
            made = real_builder(*args, **kwargs)
            prepare = made.download_and_prepare

            def download_and_prepare(*a, **k):
                self.record("prepare begins", made.config.name)
                self.before_prepare(made.config.name)
                return prepare(*a, **k)

            made.download_and_prepare = download_and_prepare
            return made

        monkeypatch.setattr(publish_build, "builder", builder)

    def record(self, event: str, config: str) -> None:
        with self.lock:
            self.events.append((event, config, threading.current_thread().name))

    def before_write(self, config: str, stop: threading.Event | None) -> None:
        pass

    def before_prepare(self, config: str) -> None:
        pass

    def index(self, event: str, config: str) -> int:
        return next(at for at, (name, of, _) in enumerate(self.events) if (name, of) == (event, config))


@pytest.mark.slow  # (seconds; CI runs it)
def test_the_configs_after_records_are_prepared_and_written_beside_its_write(tmp_path, monkeypatch):
    """records' write (on the thread) holds until corpus's write has begun: the derived configs, written ahead in
    records' pass (crag.DerivedInPass), neither wait for it to be prepared nor to be written; without the overlap
    it would wait for ever, so it gives up after a minute and the test fails."""
    out = tmp_path / "out"
    build_folder(CRAG, str(out), data_dir=str(declared_samples()[CRAG]), cache_dir=str(tmp_path / "cache"))
    from_cache = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.parquet")}
    shutil.rmtree(out)
    recorder = Recorder(monkeypatch)
    corpus_write_began = threading.Event()

    def before_write(config, stop):
        if config == "corpus":
            corpus_write_began.set()
        if config == "records":
            assert corpus_write_began.wait(60), "corpus was not written beside records"

    recorder.before_write = before_write
    build_folder(CRAG, str(out), data_dir=str(declared_samples()[CRAG]))

    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*.parquet")} == from_cache
    writes = [(config, thread) for event, config, thread in recorder.events if event == "write begins"]
    assert writes[:3] == [("records", "ragloaders-write-records"), ("queries", "MainThread"), ("corpus", "MainThread")]
    assert [config for config, _ in writes] == ["records", "queries", "corpus", "search_results", "top_ranked"]
    for config in ["queries", "corpus"]:
        assert recorder.index("prepare begins", config) < recorder.index("write ends", "records")
    assert write_threads() == []


def test_a_config_that_reads_the_one_being_written_waits_for_it(tmp_path, monkeypatch):
    """With a cache dir the derived configs read records' Arrow cache, not rows written ahead: each is prepared only
    once records is written and handed over; the next config is still prepared while one is written."""
    recorder = Recorder(monkeypatch)
    search_results_began = threading.Event()
    recorder.before_prepare = lambda config: search_results_began.set() if config == "search_results" else None

    def before_write(config, stop):
        if config == "corpus":
            assert search_results_began.wait(60), "search_results was not prepared while corpus was written"

    recorder.before_write = before_write
    build_folder(CRAG, str(tmp_path / "out"), data_dir=str(declared_samples()[CRAG]), cache_dir=str(tmp_path / "c"))
    for config in ["queries", "corpus", "search_results", "top_ranked"]:
        assert recorder.index("write ends", "records") < recorder.index("prepare begins", config)
    writes = [config for event, config, _ in recorder.events if event == "write begins"]
    assert writes == ["records", "queries", "corpus", "search_results", "top_ranked"]
    assert write_threads() == []


def test_a_failed_background_write_is_the_build_error_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    real_write_parquet = publish_build.write_parquet

    def write_parquet(plan, folder, split, stop=None):
        if Path(folder).name == "corpus":
            raise OSError(errno.ENOSPC, "No space left on device", str(Path(folder) / "x.parquet"))
        return real_write_parquet(plan, folder, split, stop)

    monkeypatch.setattr(publish_build, "write_parquet", write_parquet)
    out = tmp_path / "out"
    with pytest.raises(OutputFolderError) as caught:
        build_folder(CRAG, str(out), data_dir=str(declared_samples()[CRAG]))
    assert "no space left" in str(caught.value).lower() and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # no work folder, no output, no lock
    assert write_threads() == []


def test_a_failed_preparation_stops_the_write_under_way(tmp_path, monkeypatch):
    """corpus's preparation fails while records is being written (held until then): the build raises the
    preparation's error, the write stops at its next row group, and nothing is left behind or running."""
    recorder = Recorder(monkeypatch)
    corpus_failed = threading.Event()
    stopped = []

    def before_prepare(config):
        if config == "corpus":
            corpus_failed.set()
            raise SourceError("corpus.jsonl", "a bad record (planted)")

    def before_write(config, stop):
        if config == "records":
            assert corpus_failed.wait(60)
            assert stop.wait(60), "the write was not told to stop"
            stopped.append(config)

    recorder.before_prepare, recorder.before_write = before_prepare, before_write
    out = tmp_path / "out"
    with pytest.raises(SourceError, match="planted"):
        build_folder(CRAG, str(out), data_dir=str(declared_samples()[CRAG]))
    assert stopped == ["records"]
    assert ("write ends", "records") in [(event, config) for event, config, _ in recorder.events]
    assert list(tmp_path.iterdir()) == []
    assert write_threads() == []


def test_write_behind_hands_over_results_and_errors_and_stops_a_write():
    behind: WriteBehind[int] = WriteBehind()
    assert behind.finish() is None
    behind.start("a", lambda stop: 41 + 1)
    with pytest.raises(RuntimeError, match="not finished"):
        behind.start("b", lambda stop: 0)
    assert behind.finish() == ("a", 42)
    behind.start("c", lambda stop: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        behind.finish()
    seen = []

    def until_stopped(stop: threading.Event) -> int:
        while not stop.wait(0.01):
            pass
        seen.append("stopped")
        raise WriteStopped("stopped")

    behind.start("d", until_stopped)
    assert behind.config == "d"
    behind.abandon()
    assert seen == ["stopped"] and behind.config is None and behind.finish() is None
    assert write_threads() == []
