"""The line drawn while a large source file is read (core.progress): on only when switched on (the command line on
a terminal without --quiet), only for sources over the threshold, counting the file's own bytes."""

from __future__ import annotations

import bz2
import hashlib
import os
import sys

import pytest
from conftest import DATA
from ragloaders.benchmarks.crag.builder import CragSource
from ragloaders.benchmarks.crag.catalogue import RELEASES
from ragloaders.cli import main, progress_bars
from ragloaders.core import progress
from ragloaders.core.compressed import open_bz2, open_joined
from ragloaders.core.source_files import SourceFiles

CRAG_FILE = str(DATA / "crag" / "dev_data.jsonl.bz2")
EXAMPLE = next(release for release in RELEASES if release.files == ("dev_data.jsonl.bz2",))


@pytest.fixture
def lines(monkeypatch):
    """Every line drawn, as (description, bytes counted, total) when it closed; any source gets one when shown."""
    closed: list[tuple[str, int, int]] = []

    class Recorded(progress.tqdm):
        def close(self) -> None:
            if not self.disable:
                closed.append((self.desc, self.n, self.total))
            super().close()

    monkeypatch.setattr(progress, "tqdm", Recorded)
    monkeypatch.setattr(progress, "THRESHOLD_BYTES", 0)
    before = progress.is_shown()  # as a library user finds it: off
    yield closed
    progress.show(before)


@pytest.fixture(scope="module")
def crag_digest() -> bytes:
    """The decompressed example file's digest, by Python's bz2 (no line)."""
    return hashlib.sha256(bz2.decompress(open(CRAG_FILE, "rb").read())).digest()


def read_all(stream) -> bytes:
    digest = hashlib.sha256()
    while block := stream.read(1 << 20):
        digest.update(block)
    return digest.digest()


def test_reading_crag_draws_one_line_counting_the_compressed_file(lines, capsys):
    progress.show(True)
    assert sum(1 for _ in CragSource(EXAMPLE, (CRAG_FILE,)).records()) > 0
    err = capsys.readouterr().err
    assert "Reading dev_data.jsonl.bz2" in err and "B/s" in err
    assert lines == [("Reading dev_data.jsonl.bz2", os.path.getsize(CRAG_FILE), os.path.getsize(CRAG_FILE))]


def test_switched_off_nothing_is_drawn(lines, capsys):
    with open_bz2(CRAG_FILE, name=CRAG_FILE) as stream:
        stream.read(1 << 20)
    with SourceFiles(str(DATA / "mmrag")).open("processed_documents.json") as stream:
        stream.read()
    assert capsys.readouterr().err == "" and lines == []


def test_a_source_under_the_threshold_gets_no_line(lines, capsys, monkeypatch):
    progress.show(True)
    monkeypatch.setattr(progress, "THRESHOLD_BYTES", os.path.getsize(CRAG_FILE) + 1)
    with open_bz2(CRAG_FILE, name=CRAG_FILE) as stream:
        stream.read(100)
    assert capsys.readouterr().err == "" and lines == []


def test_the_line_closes_with_the_stream_read_in_part(lines, capsys):
    progress.show(True)
    with open_bz2(CRAG_FILE, name=CRAG_FILE) as stream:
        stream.read(100)
        assert lines == []
    assert len(lines) == 1 and lines[0][2] == os.path.getsize(CRAG_FILE)


def test_joined_parts_count_the_parts_bytes_and_stay_open_for_their_owner(lines, tmp_path, crag_digest):
    data = open(CRAG_FILE, "rb").read()
    parts = []
    for number, cut in enumerate(range(0, len(data), 700_000)):
        parts.append(tmp_path / f"dev_data.jsonl.bz2.part{number}")
        parts[-1].write_bytes(data[cut:cut + 700_000])
    progress.show(True)
    with open_joined([str(part) for part in parts]) as joined:
        with open_bz2(joined, name="dev_data.jsonl.bz2.part*") as stream:
            assert read_all(stream) == crag_digest  # the bytes are the same with the line
        assert not joined.closed
    assert lines == [("Reading dev_data.jsonl.bz2.part*", len(data), len(data))]


def test_a_plain_source_file_counts_its_size(lines):
    progress.show(True)
    files = SourceFiles(str(DATA / "mmrag"))
    with files.open("processed_documents.json") as stream:
        assert stream.read() == (DATA / "mmrag" / "processed_documents.json").read_bytes()
    size = os.path.getsize(DATA / "mmrag" / "processed_documents.json")
    assert lines == [("Reading processed_documents.json", size, size)]


def test_progress_bars_switch_the_lines_and_restore_them():
    before = progress.is_shown()
    with progress_bars(shown=True):
        assert progress.is_shown()
        with progress_bars(shown=False):
            assert not progress.is_shown()
        assert progress.is_shown()
    assert progress.is_shown() == before


@pytest.mark.parametrize("terminal, quiet, shown", [(False, False, False), (True, False, True), (True, True, False)])
def test_the_command_line_draws_source_lines_on_a_terminal_only(tmp_path, capsys, monkeypatch, lines, terminal,
                                                                 quiet, shown):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    args = ["build", "mmrag", "--configs", "routing,qrels", "--data-dir", str(DATA / "mmrag"), "--out",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"), *(["--quiet"] if quiet else [])]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert ("Reading mmrag_" in err) == shown
    assert bool(lines) == shown and not progress.is_shown()


def test_a_zip_member_counts_its_compressed_bytes(lines):
    import zipfile

    location = DATA / "beir" / "nfcorpus.zip"
    files = SourceFiles(str(location), root="nfcorpus")
    with zipfile.ZipFile(location) as archive:
        info = archive.getinfo("nfcorpus/corpus.jsonl")
        expected = archive.read(info)
    with files.open("corpus.jsonl") as stream:
        assert stream.read() == expected
    assert lines == []  # switched off
    progress.show(True)
    with files.open("corpus.jsonl") as stream:
        assert stream.read() == expected
    assert lines == [("Reading nfcorpus.zip:nfcorpus/corpus.jsonl", info.compress_size, info.compress_size)]


def test_the_readme_states_the_threshold():
    readme = (DATA.parent.parent / "README.md").read_text(encoding="utf-8")
    assert f"source file of {progress.THRESHOLD_BYTES >> 20} MiB or more is read" in readme


def test_a_source_of_the_threshold_gets_a_line_and_one_byte_less_none():
    before = progress.show(True)
    try:
        assert progress.wanted(progress.THRESHOLD_BYTES) and not progress.wanted(progress.THRESHOLD_BYTES - 1)
    finally:
        progress.show(before)
    assert not progress.wanted(progress.THRESHOLD_BYTES)


def test_a_library_load_draws_no_line(tmp_path, capsys, lines):
    import ragloaders

    routing = ragloaders.load("mmrag", "routing", split="dev", data_dir=str(DATA / "mmrag"),
                              cache_dir=str(tmp_path / "c"))
    assert len(routing) > 0
    assert "Reading" not in capsys.readouterr().err and lines == []


def test_the_line_advances_as_the_file_is_read_and_never_passes_its_size(lines, monkeypatch, crag_digest):
    updates: list[int] = []

    class Updates(progress.tqdm):
        def update(self, n: int = 1) -> bool | None:
            shown = super().update(n)
            updates.append(self.n)
            return shown

    monkeypatch.setattr(progress, "tqdm", Updates)
    monkeypatch.setattr(progress, "UPDATE_BYTES", 256 << 10)
    progress.show(True)
    with open_bz2(CRAG_FILE, name=CRAG_FILE, threads=1) as stream:
        assert read_all(stream) == crag_digest
    size = os.path.getsize(CRAG_FILE)
    assert len(updates) > 4 and updates == sorted(updates) and updates[-1] == size
    assert all(later - earlier >= 256 << 10 for earlier, later in zip(updates[:-2], updates[1:-1]))


def test_a_damaged_source_still_raises_its_error_and_closes_the_line(lines, tmp_path):
    from ragloaders.core.errors import SourceError

    cut = tmp_path / "dev_data.jsonl.bz2"
    data = bytearray(open(CRAG_FILE, "rb").read())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)  # a zeroed run in the middle: corrupt blocks
    cut.write_bytes(bytes(data))
    progress.show(True)
    with pytest.raises(SourceError, match="dev_data.jsonl.bz2"):
        with open_bz2(str(cut), name=str(cut)) as stream:
            read_all(stream)
    assert len(lines) == 1 and lines[0][0] == "Reading dev_data.jsonl.bz2"
