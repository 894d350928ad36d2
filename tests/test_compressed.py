"""Readers for compressed sources, on the real CRAG example file and on generated archives."""

from __future__ import annotations

import bz2
import io
import json
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import indexed_bzip2
import pytest
from conftest import assert_source_error
from ragloaders.core.compressed import iter_tar_members, open_bz2, open_joined, order_parts
from ragloaders.core.errors import SourceError
from ragloaders.core.readers.lines import iter_lines

SAMPLE = Path(__file__).parent / "data" / "crag" / "dev_data.jsonl.bz2"


@pytest.fixture(scope="module")
def expected() -> bytes:
    """The sample decompressed by Python's bz2: the reference output."""
    return bz2.decompress(SAMPLE.read_bytes())


def read_lines(source, name: str, threads: int | None = None) -> list[bytes]:
    with open_bz2(source, name=name, threads=threads) as stream:
        return [line for _, line in iter_lines(stream, name)]


def write_parts(data: bytes, stem: Path, numbers: range) -> list[str]:
    size = -(-len(data) // len(numbers))
    paths = []
    for index, number in enumerate(numbers):
        path = Path(f"{stem}.part{number}")
        path.write_bytes(data[index * size : (index + 1) * size])
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.slow  # (seconds; CI runs it)
def test_real_sample_gives_ten_json_lines_identical_to_python_bz2(threads, expected):
    lines = read_lines(str(SAMPLE), str(SAMPLE), threads)
    assert len(lines) == 10
    assert b"".join(line + b"\n" for line in lines) == expected
    for line in lines:
        assert len(json.loads(line)["search_results"]) == 5
    with SAMPLE.open("rb") as source, open_bz2(source, name="x", threads=threads) as stream:
        assert [number for number, _ in iter_lines(stream, "x")] == list(range(1, 11))
        assert not source.closed


class _Unseekable(io.RawIOBase):
    def __init__(self, data: bytes):
        self.data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.data.readinto(buffer)


def test_non_seekable_source_falls_back_to_python_bz2(expected):
    lines = read_lines(io.BufferedReader(_Unseekable(SAMPLE.read_bytes())), "sample")
    assert b"".join(line + b"\n" for line in lines) == expected


@pytest.mark.parametrize("numbers", [range(1, 4), range(0, 3)])
def test_parts_joined_in_numeric_order_equal_the_original(tmp_path, numbers, expected):
    data = SAMPLE.read_bytes()
    paths = write_parts(data, tmp_path / "x.jsonl.bz2", numbers)
    ordered = order_parts(list(reversed(paths)))
    assert ordered == paths
    with open_joined(ordered) as joined:
        assert joined.read() == data
        joined.seek(len(data) - 5)
        assert joined.read() == data[-5:]
    with open_joined(ordered) as joined:
        assert b"".join(line + b"\n" for line in read_lines(joined, "x")) == expected


def test_order_parts_is_numeric_not_lexical():
    paths = [f"/d/f.tar.bz2.part{n}" for n in (10, 9, 2, 1, 3, 4, 5, 6, 7, 8)]
    assert [int(p.rsplit("part", 1)[1]) for p in order_parts(paths)] == list(range(1, 11))


@pytest.mark.parametrize(
    ("numbers", "missing"),
    [((1, 2, 4), "f.tar.bz2.part3"), ((0, 1, 3), "f.tar.bz2.part2"), ((2, 3), "f.tar.bz2.part1")],
)
def test_missing_part_is_named(numbers, missing):
    with pytest.raises(ValueError, match=missing.replace(".", r"\.")):
        order_parts([f"f.tar.bz2.part{n}" for n in numbers])


def test_missing_last_part_is_caught_as_truncation(tmp_path):
    paths = write_parts(SAMPLE.read_bytes(), tmp_path / "x.jsonl.bz2", range(1, 4))
    with pytest.raises(SourceError) as caught, open_joined(paths[:2]) as joined:
        read_lines(joined, "x.jsonl.bz2")
    assert_source_error(caught.value, "x.jsonl.bz2", "truncated")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cut", [100, 1, 700_000])
def test_truncated_bz2_raises_naming_the_file(tmp_path, threads, cut):
    path = tmp_path / "cut.jsonl.bz2"
    path.write_bytes(SAMPLE.read_bytes()[:-cut])
    with pytest.raises(SourceError, match="cut.jsonl.bz2") as caught:
        read_lines(str(path), str(path), threads)
    assert caught.value.path == str(path)
    assert_source_error(caught.value, "cut.jsonl.bz2", "truncated")
    assert "not a bzip2 stream" not in str(caught.value)


@pytest.mark.parametrize("threads", [1, 2])
def test_truncated_at_a_block_boundary_raises(tmp_path, threads):
    """indexed_bzip2 alone returns a shorter output, without error, for a cut at a block start."""
    data = SAMPLE.read_bytes()
    with indexed_bzip2.open(str(SAMPLE)) as reader:
        byte_aligned = [bit // 8 for bit in reader.block_offsets() if bit % 8 == 0 and bit > 32]
    assert byte_aligned, "the sample has a block starting on a byte boundary"
    path = tmp_path / "block.jsonl.bz2"
    path.write_bytes(data[: byte_aligned[0]])
    with pytest.raises(SourceError, match="block.jsonl.bz2"):
        read_lines(str(path), "block.jsonl.bz2", threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_corrupt_bz2_raises(tmp_path, threads):
    data = bytearray(SAMPLE.read_bytes())
    data[len(data) // 2] ^= 0x10
    path = tmp_path / "corrupt.jsonl.bz2"
    path.write_bytes(bytes(data))
    with pytest.raises(SourceError, match="corrupt.jsonl.bz2"):
        read_lines(str(path), "corrupt.jsonl.bz2", threads)


@pytest.mark.parametrize("content", [b"", b"BZh9", b'{"not": "bz2"}\n' * 100])
def test_not_bz2_raises(tmp_path, content):
    path = tmp_path / "plain.bz2"
    path.write_bytes(content)
    with pytest.raises(SourceError, match="plain.bz2"):
        read_lines(str(path), "plain.bz2")


def test_truncated_non_seekable_bz2_raises():
    stream = io.BufferedReader(io.BytesIO(SAMPLE.read_bytes()[:-100]))  # type: ignore[arg-type]
    stream.seekable = lambda: False  # type: ignore[method-assign]
    with pytest.raises(SourceError, match="stream.bz2"):
        read_lines(stream, "stream.bz2")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a\nb\n", [b"a", b"b"]),
        (b"a\nb", [b"a", b"b"]),
        (b"a\r\nb\r\n", [b"a", b"b"]),
        (b"a\n\nb\n", [b"a", b"", b"b"]),
        (b"", []),
        (b"\n", [b""]),
    ],
)
def test_jsonl_line_ends(data, expected):
    assert [line for _, line in iter_lines(io.BytesIO(data), "x")] == expected


def test_jsonl_lines_longer_than_the_read_size_and_crlf_across_reads():
    long = b'{"x": "' + b"y" * (3 << 20) + b'"}'
    data = long + b"\r\n" + b"short\r\n" + long
    stream = io.BytesIO(data)
    got = list(iter_lines(stream, "x"))
    assert got == [(1, long), (2, b"short"), (3, long)]
    # \r at the very end of one 1 MiB read and \n at the start of the next
    data = b"a" * ((1 << 20) - 1) + b"\r\n" + b"b"
    assert [line for _, line in iter_lines(io.BytesIO(data), "x")] == [b"a" * ((1 << 20) - 1), b"b"]


def make_tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                archive.addfile(info, io.BytesIO(member[1]))
    return buffer.getvalue()


def shard(index: int, rows: int) -> bytes:
    rows_json = (json.dumps({"shard": index, "row": row, "html": "<p>" * 50}) for row in range(rows))
    return "".join(row + "\n" for row in rows_json).encode()


def test_bz2_tar_in_parts_streams_every_member(tmp_path):
    directory = tarfile.TarInfo("data")
    directory.type = tarfile.DIRTYPE
    members = [directory] + [(f"data/shard_{i}.jsonl", shard(i, 200 + i)) for i in range(4)]
    compressed = bz2.compress(make_tar(members))
    paths = write_parts(compressed, tmp_path / "task_3.tar.bz2", range(0, 4))
    seen = []
    with open_joined(order_parts(paths)) as joined, open_bz2(joined, name="task_3.tar.bz2") as stream:
        for member_name, content in iter_tar_members(stream, name="task_3.tar.bz2"):
            rows = [json.loads(line) for _, line in iter_lines(content, member_name)]
            seen.append((member_name, len(rows), {row["shard"] for row in rows}))
    assert seen == [(f"data/shard_{i}.jsonl", 200 + i, {i}) for i in range(4)]
    assert not list(tmp_path.glob("**/*.jsonl")), "nothing is extracted to disk"


def test_unread_members_are_skipped():
    data = make_tar([(f"s{i}.jsonl", shard(i, 50)) for i in range(3)])
    names = [name for name, _ in iter_tar_members(io.BytesIO(data), name="t.tar")]
    assert names == ["s0.jsonl", "s1.jsonl", "s2.jsonl"]


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


@pytest.mark.parametrize(
    ("hostile", "named", "reason"),
    [
        (("../evil.jsonl", b"{}\n"), "../evil.jsonl", "outside the archive"),
        (("data/../../evil.jsonl", b"{}\n"), "data/../../evil.jsonl", "outside the archive"),
        (("/abs.jsonl", b"{}\n"), "/abs.jsonl", "outside the archive"),
        (special("link.jsonl", tarfile.SYMTYPE, "/etc/passwd"), "link.jsonl", "link"),
        (special("hard.jsonl", tarfile.LNKTYPE, "ok.jsonl"), "hard.jsonl", "link"),
        (special("dev", tarfile.CHRTYPE), "dev", "not a regular file"),
        (special("fifo", tarfile.FIFOTYPE), "fifo", "not a regular file"),
        (("big.jsonl", b"x" * 2000), "big.jsonl", "over the limit"),
    ],
)
def test_hostile_tar_members_raise(hostile, named, reason):
    data = make_tar([("ok.jsonl", b"{}\n"), hostile])
    names = []
    with pytest.raises(SourceError, match="evil.tar") as caught:
        for member_name, content in iter_tar_members(io.BytesIO(data), name="evil.tar", max_member_bytes=1000):
            names.append(member_name)
            content.read()
    assert names == ["ok.jsonl"]
    assert repr(named) in str(caught.value) and reason in str(caught.value)


@pytest.mark.parametrize("keep", ["mid-member", "at-member-boundary", "mid-header"])
def test_truncated_tar_raises(keep):
    data = make_tar([(f"s{i}.jsonl", shard(i, 100)) for i in range(3)])
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        last = archive.getmembers()[-1]
    cut = {"mid-member": last.offset_data + 100, "at-member-boundary": last.offset, "mid-header": last.offset + 200}
    lines = 0
    with pytest.raises(SourceError, match="cut.tar"):
        for member_name, content in iter_tar_members(io.BytesIO(data[: cut[keep]]), name="cut.tar"):
            lines += sum(1 for _ in iter_lines(content, member_name))
    assert lines <= 300


@pytest.mark.parametrize("after", ["a second tar", "junk", "zeros", "zeros past any record"])
def test_what_follows_a_tars_end_marker_is_zeros_or_refused(after):
    """Two tars joined (`cat a.tar b.tar`), or bytes after the end marker: the second tar's members (half of a CRAG
    task 3 file) were dropped without a word. A tar's own zero padding is fine; more zeros than its largest record
    holds are refused unread (a few bytes of bzip2 are gigabytes of them)."""
    from ragloaders.core.compressed import MAX_TAR_PADDING

    first = make_tar([(f"s{i}.jsonl", shard(i, 100)) for i in range(2)])
    tail = {"a second tar": make_tar([("t.jsonl", shard(9, 100))]), "junk": b"\0" * 700 + b"x" + b"\0" * 300,
            "zeros": b"\0" * 100_000, "zeros past any record": b"\0" * (MAX_TAR_PADDING + 1)}[after]
    names = []

    def read() -> None:
        for member_name, content in iter_tar_members(io.BytesIO(first + tail), name="joined.tar"):
            names.append(member_name)
            content.read()

    if after == "zeros":
        read()
    else:
        with pytest.raises(SourceError, match=r"^joined\.tar: data after the tar's end-of-archive marker \(byte "):
            read()
    assert names == ["s0.jsonl", "s1.jsonl"]


@pytest.fixture(scope="module")
def two_streams(expected) -> tuple[bytes, bytes]:
    """The sample as two bzip2 streams (records 1-4, records 5-10)."""
    lines = expected.splitlines(keepends=True)
    return bz2.compress(b"".join(lines[:4]), 1), bz2.compress(b"".join(lines[4:]), 1)


@pytest.mark.parametrize("reader", ["threads=1", "threads=2", "not seekable"])
@pytest.mark.parametrize(
    "damage", ["garbage between", "damaged header", "zeros after", "text after"],
)
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_bytes_that_are_not_a_bzip2_stream_are_refused_with_their_offset(two_streams, reader, damage, tmp_path):
    first, second = two_streams
    data = {
        "garbage between": first + b"not bzip2" + second,
        "damaged header": first + b"BZh0" + second[4:],
        "zeros after": first + second + b"\0" * 16,
        "text after": first + second + b"tail",
    }[damage]
    if reader == "not seekable":
        source, threads = io.BufferedReader(_Unseekable(data)), None
    else:
        path = tmp_path / "x.jsonl.bz2"
        path.write_bytes(data)
        source, threads = str(path), int(reader[-1])
    offset = len(first) if damage in ("garbage between", "damaged header") else len(first) + len(second)
    with pytest.raises(SourceError) as caught:
        read_lines(source, "x.jsonl.bz2", threads)
    assert_source_error(caught.value, "x.jsonl.bz2", f"offset {offset:,}", "not a bzip2 stream")
    assert "truncated" not in str(caught.value)


@pytest.mark.parametrize("reader", ["threads=1", "threads=2", "not seekable"])
@pytest.mark.parametrize(("after", "shown"), [(b"\0" * 16, r"b'\x00\x00"), (b"a line of text\n" * 20, "b'a line o")])
def test_bytes_after_the_real_sample_are_named_by_offset_not_called_a_truncation(reader, after, shown, tmp_path):
    data = SAMPLE.read_bytes()
    if reader == "not seekable":
        source, threads = io.BufferedReader(_Unseekable(data + after)), None
    else:
        path = tmp_path / "dev_data.jsonl.bz2"
        path.write_bytes(data + after)
        source, threads = str(path), int(reader[-1])
    with pytest.raises(SourceError) as caught:
        read_lines(source, "dev_data.jsonl.bz2", threads)
    assert_source_error(caught.value, "dev_data.jsonl.bz2", f"offset {len(data):,}", "not a bzip2 stream", shown)
    assert "truncated" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize("threads", [1, 2])
def test_a_cut_second_stream_is_still_a_truncation_naming_where_the_stream_starts(two_streams, threads, tmp_path):
    first, second = two_streams
    path = tmp_path / "x.jsonl.bz2"
    path.write_bytes(first + second[:1000])
    with pytest.raises(SourceError) as caught:
        read_lines(str(path), "x.jsonl.bz2", threads)
    assert_source_error(caught.value, "x.jsonl.bz2", "truncated", f"offset {len(first):,}", "1,000 bytes")


@pytest.mark.parametrize("reader", ["threads=1", "threads=2", "not seekable"])
def test_several_clean_streams_give_every_line(expected, two_streams, reader, tmp_path):
    first, second = two_streams
    data = first + bz2.compress(b"") + second
    if reader == "not seekable":
        source, threads = io.BufferedReader(_Unseekable(data)), None
    else:
        (tmp_path / "x.bz2").write_bytes(data)
        source, threads = str(tmp_path / "x.bz2"), int(reader[-1])
    assert b"".join(line + b"\n" for line in read_lines(source, "x", threads)) == expected


LEFT_OPEN = """
import sys
from ragloaders.core.compressed import open_bz2
stream = open_bz2(sys.argv[1], name="x", threads=2)
print(len(stream.readline()))
"""


@pytest.mark.slow  # six interpreters decoding 150 bz2 blocks each; CI runs it
def test_a_bz2_reader_left_open_does_not_abort_the_interpreter_at_exit(tmp_path, two_streams):
    import subprocess
    import sys

    path = tmp_path / "big.bz2"
    path.write_bytes(b"".join(two_streams))  # about 150 blocks: the decoding threads are busy at exit
    def run(_):  # before the fix, 2 runs in 4 aborted (exit 134, "Detected Python finalization")
        return subprocess.run([sys.executable, "-c", LEFT_OPEN, str(path)], capture_output=True, text=True,
                              timeout=120)

    with ThreadPoolExecutor(2) as pool:
        for result in pool.map(run, range(6)):
            assert result.returncode == 0 and "finalization" not in result.stderr, result.stderr[-2000:]


def test_the_read_ahead_stays_within_its_bound_and_stops_at_close(monkeypatch):
    # With 2 decoder threads a reader thread keeps decoding ahead of the caller: no further than
    # READ_AHEAD_CHUNKS pieces (plus the one being handed over and the one being read), and not after close.
    import threading
    import time

    from ragloaders.core import compressed

    monkeypatch.setattr(compressed, "READ_AHEAD_CHUNKS", 2)
    with open_bz2(str(SAMPLE), name="x", threads=2) as stream:
        assert stream.read(1) == b"{"
        read_ahead = stream.raw
        produced, still = -1, 0
        while still < 5:  # until the reader thread has stopped for half a second: its queue is full
            time.sleep(0.1)
            now = read_ahead.raw.produced
            still = still + 1 if now == produced else 0
            produced = now
        assert 2 * compressed.CHUNK_BYTES <= produced <= 4 * compressed.CHUNK_BYTES
        assert read_ahead.thread.is_alive()
    assert not read_ahead.thread.is_alive()
    assert not any(thread.name == "ragloaders-bz2-read" for thread in threading.enumerate())


def test_a_decoding_error_found_ahead_comes_after_every_byte_before_it_and_again_at_every_read(tmp_path, expected):
    data = bytearray(SAMPLE.read_bytes())
    data[len(data) // 2] ^= 0x10  # a block in the middle is damaged: the blocks before it decode
    path = tmp_path / "damaged.jsonl.bz2"
    path.write_bytes(bytes(data))
    for threads in (1, 2):
        got = bytearray()
        with open_bz2(str(path), name="damaged.jsonl.bz2", threads=threads) as stream:
            with pytest.raises(SourceError) as error:
                while piece := stream.read(1 << 16):
                    got += piece
            assert_source_error(error.value, "damaged.jsonl.bz2", "corrupt or truncated bzip2 data")
            assert len(got) > 1 << 20 and expected.startswith(got)
            with pytest.raises(SourceError):  # never a quiet end of data after the error
                stream.read(1 << 16)


@pytest.mark.parametrize("threads", [1, 2])
def test_more_than_the_searched_tail_of_zeros_after_the_sample_is_not_called_only_a_truncation(threads, tmp_path):
    """The last end-of-stream marker is searched for in the file's last MiB only: past that, the message says what
    else it may be than a truncation."""
    path = tmp_path / "dev_data.jsonl.bz2"
    path.write_bytes(SAMPLE.read_bytes() + b"\0" * (2 << 20))
    with pytest.raises(SourceError) as caught:
        read_lines(str(path), "dev_data.jsonl.bz2", threads)
    assert_source_error(caught.value, "dev_data.jsonl.bz2", "does not end with the bzip2 end-of-stream marker (nor do "
                        "its last 1 MiB hold one; unless more than that of other bytes follow its last stream)")
