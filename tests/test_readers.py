"""core/readers: chunks of whole lines, their line counts, and the threads that read and parse them.

Chunk sizes are shrunk (BLOCK_BYTES, MAX_LINE_BYTES) so that a few KB of input cross many chunk borders."""

import io
import itertools
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
from collections import deque

import pyarrow as pa
import pytest
import ragloaders
from conftest import LOADERS, assert_source_error
from hypothesis import given, settings
from hypothesis import strategies as st
from ragloaders.core.errors import SourceError
from ragloaders.core.readers import jsonl, lines, threads
from ragloaders.core.readers.json_array import array_elements_before, iter_json_array
from ragloaders.core.source_files import SourceFiles


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(lines, "BLOCK_BYTES", 64)
    monkeypatch.setattr(lines, "CHUNK_BLOCKS", 2)
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1000)


def random_lines(rng: random.Random) -> bytes:
    """Lines of 0-600 bytes: JSON-ish, blank, starting with whitespace, CRLF, `}{`; maybe no final newline."""
    kinds = [
        lambda: b'{"_id": "%d", "text": "%s"}' % (rng.randrange(10**6), b"w" * rng.randrange(550)),
        lambda: b"",
        lambda: b" \t \r",
        lambda: b'  {"_id": "x"}',
        lambda: b'{"a": 1}{"a": 2}',
        lambda: b'{"text": "%s"}\r' % (b"\xc3\xa9" * rng.randrange(200)),
    ]
    lines = [rng.choice(kinds)() for _ in range(rng.randrange(1, 40))]
    data = b"\n".join(lines)
    return data + b"\n" if rng.random() < 0.7 else data


def test_chunks_of_lines_hold_the_input_exactly_and_end_at_line_ends(small_chunks):
    rng = random.Random(0)
    for _ in range(300):
        data = random_lines(rng)
        chunks = list(lines.iter_chunks_of_lines(io.BytesIO(data)))
        assert b"".join(chunks) == data
        assert all(chunks) and all(chunk[-1:] == b"\n" for chunk in chunks[:-1])
        longest = max(map(len, data.split(b"\n")))
        assert all(len(chunk) <= 2 * longest + 128 for chunk in chunks)  # bounded: a chunk grows only for a long line


def test_chunk_line_numbers_are_those_of_the_file(small_chunks):
    rng = random.Random(1)
    for _ in range(100):
        data = random_lines(rng)
        offset = 0
        for first, chunk in lines.iter_line_chunks(io.BytesIO(data), "f.jsonl", first=5):
            assert first == 5 + data[:offset].count(b"\n")
            offset += len(chunk)
        assert offset == len(data)


def test_a_bom_is_skipped_at_the_start_only(small_chunks):
    bom = b"\xef\xbb\xbf"
    data = b'{"a": 1}\n' * 50
    assert b"".join(lines.iter_chunks_of_lines(io.BytesIO(bom + data), skip_bom=True)) == data
    assert b"".join(lines.iter_chunks_of_lines(io.BytesIO(bom + data))) == bom + data
    assert b"".join(lines.iter_chunks_of_lines(io.BytesIO(b"\xef\xbb"), skip_bom=True)) == b"\xef\xbb"


@pytest.mark.parametrize("before, after", [(0, 3), (7, 3), (7, 0)])
def test_a_line_over_the_limit_is_refused_with_its_number_wherever_it_is(small_chunks, before, after):
    short = b'{"a": 1}\n'
    data = short * before + b"z" * 1001 + (b"\n" + short * after if after else b"")
    with pytest.raises(SourceError) as caught:
        list(lines.iter_line_chunks(io.BytesIO(data), "f.jsonl"))
    assert_source_error(caught.value, "f.jsonl", "1,000 bytes", "MAX_LINE_BYTES", line=before + 1)
    exactly = short * before + b"z" * 1000 + b"\n" + short * after
    assert b"".join(chunk for _, chunk in lines.iter_line_chunks(io.BytesIO(exactly), "f.jsonl")) == exactly


def test_a_long_line_in_a_later_shard_is_named_by_its_file_line(tmp_path, small_chunks):
    lines = [json.dumps({"_id": str(i), "text": "t" * 40}).encode() for i in range(200)]
    lines[150] = b'{"_id": "long", "text": "' + b"z" * 2000 + b'"}'
    (tmp_path / "corpus.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    files = SourceFiles(str(tmp_path))
    shards = jsonl.shards_of(files, "corpus.jsonl", shard_bytes=2048)
    assert len(shards) > 3
    schema = pa.schema([("_id", pa.string()), ("text", pa.string())])
    with pytest.raises(SourceError) as caught:
        for shard in shards:
            list(jsonl.read_jsonl(shard, schema))
    assert_source_error(caught.value, "corpus.jsonl", "1,000 bytes", "MAX_LINE_BYTES", line=151)


def object_lines_by_splitting(chunk: bytes) -> tuple[int, int | None]:
    """What `object_lines` must give for `chunk`, found by splitting it into lines: (its `\\n` count, its number of
    lines if every line, less one final CR, is `{`...`}`, else None)."""
    lines = chunk.split(b"\n")[:-1] if chunk.endswith(b"\n") else chunk.split(b"\n")
    stripped = [line.removesuffix(b"\r") for line in lines]
    objects = bool(chunk) and all(len(line) >= 2 and line[:1] == b"{" and line[-1:] == b"}" for line in stripped)
    return chunk.count(b"\n"), len(lines) if objects else None


def object_lines_of_a_slice(chunk: bytes) -> tuple[int, int | None]:
    """`object_lines` of `chunk` as the reader passes it: a memoryview slice of a larger buffer, between bytes that
    would complete a `}\\n{` or `}\\r\\n{` if the slice's ends were not respected."""
    buffer = bytearray(b"}\n{" + chunk + b"}\r\n{")
    return jsonl.object_lines(memoryview(buffer)[3:3 + len(chunk)])


def test_object_lines_equal_a_check_line_by_line():
    rng = random.Random(2)
    shapes = set()
    for _ in range(500):
        chunk = random_lines(rng)
        expected = object_lines_by_splitting(chunk)
        assert jsonl.object_lines(chunk) == jsonl.object_lines(bytearray(chunk)) == expected
        shapes.add(expected[1] is not None)
    assert shapes == {True, False}
    assert jsonl.object_lines(b"") == (0, None)


def test_object_lines_on_short_lines_of_braces_and_carriage_returns():
    """Chunks of up to 4 lines made of `{`, `}`, CR and `x` (each line up to 4 bytes), with and without a final
    newline: counting `}\\n{` must not be fooled by a line of one brace, a doubled CR, a CR before the brace or a
    chunk that starts or ends mid-pattern."""
    lines = [b""] + [bytes(p) for n in range(1, 5) for p in itertools.product(b"{}\rx", repeat=n)
                     if p[0] in b"{}\r" and p[-1] in b"{}\r"]
    rng = random.Random(3)
    verdicts = set()
    for _ in range(20_000):
        chosen = [rng.choice(lines[:40]) if rng.random() < 0.5 else b"{x}" for _ in range(rng.randrange(1, 5))]
        chunk = b"\n".join(chosen) + (b"\n" if rng.random() < 0.6 else b"")
        expected = object_lines_by_splitting(chunk)
        assert object_lines_of_a_slice(chunk) == expected, chunk
        verdicts.add(expected[1] is not None)
    assert verdicts == {True, False}


def test_object_lines_on_every_short_chunk_of_braces_line_ends_and_carriage_returns():
    """Every chunk of up to 6 bytes of `{`, `}`, CR, LF and `x`, including a last line ending in two CRs (only one is
    the optional CR): the tests above never hold one, and pass if object_lines strips the last line's CRs in a
    `while` instead of an `if`."""
    verdicts = set()
    for length in range(7):
        for chunk in map(bytes, itertools.product(b"{}\r\nx", repeat=length)):
            expected = object_lines_by_splitting(chunk)
            assert object_lines_of_a_slice(chunk) == expected, chunk
            verdicts.add(expected[1] is not None)
    assert verdicts == {True, False}


@pytest.mark.parametrize("lines", [
    [b'{"_id": "a", "title": "", "text": "x"}{', b'"_id": "b", "title": "", "text": "y"}'],
    [b'{"_id": "a", "title": "", "text":', b'"x"}'],
    [b'{"_id": "a", "title": "", "text": "x"} {"_id": "b", "title": "", "text": "y"}'],
])
def test_what_pyarrow_would_read_across_or_within_lines_is_refused_as_the_line_path_does(tmp_path, lines):
    """pyarrow, given a whole chunk, takes an object broken across lines, and two objects on one line; JSONL does
    not, and neither does the line path: the error names the first bad line."""
    folder = tmp_path / "scifact"
    folder.mkdir()
    good = [json.dumps({"_id": str(i), "title": "", "text": "t"}).encode() for i in range(5)]
    (folder / "corpus.jsonl").write_bytes(b"\n".join(good + lines + good[:1]) + b"\n")
    with pytest.raises(SourceError) as raised:
        ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(raised.value, "corpus.jsonl", line=6)
    assert "invalid JSON" in str(raised.value) or "one JSON object" in str(raised.value)


def test_map_ahead_keeps_the_order_and_raises_the_first_error():
    assert list(threads.map_ahead(lambda x: x * x, iter(range(200)), threads=3)) == [x * x for x in range(200)]

    def fail_on_7(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return x

    seen = []
    with pytest.raises(ValueError, match="seven"):
        for x in threads.map_ahead(fail_on_7, iter(range(100)), threads=2):
            seen.append(x)
    assert seen == list(range(7))
    assert not worker_threads()


def test_an_error_in_the_items_comes_after_the_results_of_the_items_before_it():
    def items():
        yield from range(5)
        raise ValueError("items ended badly")

    seen = []
    with pytest.raises(ValueError, match="items ended badly"):
        for x in threads.map_ahead(lambda x: x * 10, items(), threads=2):
            seen.append(x)
    assert seen == [0, 10, 20, 30, 40]
    assert not worker_threads()


def test_a_bad_line_is_reported_before_a_too_long_line_read_after_it(tmp_path, small_chunks):
    """The too-long line is found by the thread reading ahead, before the bad line's chunk is parsed."""
    good = b'{"_id": "a", "text": "x"}\n'
    schema = pa.schema([("_id", pa.string()), ("text", pa.string())])
    for gap in (0, 1, 3, 10):
        data = good * 4 + b'{"_id": "bad", "text": }\n' + good * gap + b'{"_id": "b", "text": "' + b"z" * 3000 + b'"}\n'
        (tmp_path / "corpus.jsonl").write_bytes(data)
        with pytest.raises(SourceError) as caught:
            list(jsonl.read_jsonl(jsonl.Shard(SourceFiles(str(tmp_path)), "corpus.jsonl"), schema))
        assert_source_error(caught.value, "corpus.jsonl", "JSON", line=5)


def worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ragloaders-")]


def test_closing_a_reader_early_stops_its_threads_and_its_work():
    calls = []

    def work(x: int) -> int:
        calls.append(x)
        return x

    stream = threads.map_ahead(work, threads.iter_ahead(iter(range(10_000))), threads=2)
    assert next(stream) == 0
    stream.close()
    assert not worker_threads()
    assert len(calls) <= 4  # the items in flight when it was closed, not the other 9,996


def test_a_corpus_read_stopped_after_one_table_leaves_no_thread(tmp_path, small_chunks):
    (tmp_path / "corpus.jsonl").write_bytes(b"".join(
        json.dumps({"_id": str(i), "title": "", "text": "t" * 30}).encode() + b"\n" for i in range(500)))
    schema = pa.schema([(name, pa.string()) for name in ("_id", "title", "text")])
    tables = jsonl.read_jsonl(jsonl.Shard(SourceFiles(str(tmp_path)), "corpus.jsonl"), schema)
    assert next(tables).column("_id")[0].as_py() == "0"
    assert worker_threads()
    tables.close()
    assert not worker_threads()


def test_rows_and_line_numbers_hold_across_many_small_chunks(tmp_path, small_chunks):
    rng = random.Random(3)
    docs = [{"_id": f"{i:05d}", "title": "", "text": "é" * rng.randrange(300)} for i in range(400)]
    lines = [json.dumps(doc, ensure_ascii=False).encode() for doc in docs]
    lines.insert(250, b"   ")
    folder = tmp_path / "scifact"
    folder.mkdir()
    (folder / "corpus.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    corpus = ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=str(folder),
                             cache_dir=str(tmp_path / "c"))
    assert corpus["_id"] == [doc["_id"] for doc in docs] and corpus["text"] == [doc["text"] for doc in docs]
    (folder / "corpus.jsonl").write_bytes(b"\n".join(lines[:380] + [b'{"_id": 5}'] + lines[380:]) + b"\n")
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=str(folder), cache_dir=str(tmp_path / "d"))
    assert_source_error(caught.value, "corpus.jsonl", "`_id`", "string", line=381)


def test_spare_buffers_are_read_into_again_and_chunks_still_hold_the_input(small_chunks):
    def read(data: bytes) -> tuple[bytes, int, int]:
        """(the chunks joined, how many, how many distinct buffers), each chunk's buffer given back when read."""
        spare: deque[bytearray] = deque()
        pieces, buffers = [], []
        for chunk in lines.iter_chunks_of_lines(io.BytesIO(data), spare=spare):
            pieces.append(chunk.tobytes())
            if not any(chunk.obj is buffer for buffer in buffers):
                buffers.append(chunk.obj)
            spare.append(chunk.obj)
        return b"".join(pieces), len(pieces), len(buffers)

    rng = random.Random(4)
    for _ in range(100):
        data = random_lines(rng)
        assert read(data)[0] == data
    short_lines = b"".join(b'{"_id": "%d"}\n' % i for i in range(200))
    joined, chunks, buffers = read(short_lines)
    assert joined == short_lines and chunks > 20 and buffers == 1


def test_tables_kept_from_a_corpus_are_not_changed_by_the_reuse_of_its_buffers(tmp_path, small_chunks):
    """read_jsonl reads every chunk into a buffer of a chunk it is done with: the tables it gave out must not share
    that memory (pyarrow copies what it parses)."""
    docs = [{"_id": f"{i:04d}", "title": f"t{i}", "text": "x" * (i % 50)} for i in range(600)]
    (tmp_path / "corpus.jsonl").write_bytes(b"".join(json.dumps(doc).encode() + b"\n" for doc in docs))
    schema = pa.schema([(name, pa.string()) for name in ("_id", "title", "text")])
    tables = list(jsonl.read_jsonl(jsonl.Shard(SourceFiles(str(tmp_path)), "corpus.jsonl"), schema))
    assert len(tables) > 20
    assert pa.concat_tables(tables).to_pylist() == docs


ENDLESS_LINE_CHILD = """
import resource, sys, zipfile
from ragloaders.core.errors import SourceError
from ragloaders.core.readers import lines
lines.MAX_LINE_BYTES = 32 << 20
with open("/proc/self/statm") as f:
    vm = int(f.read().split()[0]) * resource.getpagesize()
bound = vm + (64 << 20)  # two caps beyond what is imported: the line, its growth, no second copy
resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
with zipfile.ZipFile(sys.argv[1]) as archive, archive.open("corpus.jsonl") as stream:
    try:
        for _ in lines.iter_line_chunks(stream, "corpus.jsonl", skip_bom=True):
            pass
        print("read all")
    except SourceError as e:
        print(e)
    except MemoryError:
        print("MemoryError")
"""


def test_an_endless_line_is_refused_once_the_cap_is_buffered_not_after_doubling(tmp_path):
    """A small zip whose only member is one 200 MB line (a decompression bomb): refused once MAX_LINE_BYTES (32 MB
    here) is buffered, within an address-space limit of twice that, not after doubling the buffer past the cap."""
    import subprocess
    import sys
    import zipfile

    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("corpus.jsonl", "w") as member:
        member.write(b'{"a\n{"_id": "endless", "text": "')
        block = b"z" * (1 << 20)
        for _ in range(200):
            member.write(block)
    assert bomb.stat().st_size < 1 << 20
    result = subprocess.run(
        [sys.executable, "-c", ENDLESS_LINE_CHILD, str(bomb)], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "corpus.jsonl, line 2: line longer than 33,554,432 bytes (MAX_LINE_BYTES)", (
        result.stdout + result.stderr[-2000:]
    )


# --- JSON arrays: what could not be read is shown, bounded ----------------------------------------------------


@pytest.mark.parametrize(("record", "shown"), [
    (b'{"q": "\\udce9"}', ("surrogate", "\\udce9", """{"q": "')""")),
    (b'{"q": "' + "é".encode() * 1_000_000 + b'\\udce9 and more"}', ("surrogate", "\\udce9", "after 'éééé")),
    (b'{"q": "ok \xed\xa0\x80"}', ("surrogate", "\\ud800", "after 'ok '")),
])
def test_a_json_array_string_python_cannot_decode_shows_the_surrogate_and_the_text_before(record, shown):
    from ragloaders.core.readers.json_array import iter_json_array

    with pytest.raises(SourceError) as caught:
        list(iter_json_array(io.BytesIO(b'[{"a": 1}, ' + record + b"]"), "mmrag_dev.json"))
    assert_source_error(caught.value, "mmrag_dev.json", *shown, record=1)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(("text", "shown"), [
    (b'[{"a": 1}, {"q": "\xff\xfe"}]', ("invalid bytes in UTF8", "near b'", "\\xff\\xfe")),
    (b'[{"a": 1}, {"q": "x" "y"}]', ("invalid JSON in record 1", "near '", '"x" "y"')),
    (b'[{"a": 1}, {"q": ' + b"x" * 1_000_000 + b"}]", ("invalid JSON in record 1", "near '", "xxxx")),
])
def test_invalid_json_in_a_json_array_shows_the_text_near_the_error_bounded(text, shown):
    from ragloaders.core.readers.json_array import iter_json_array

    with pytest.raises(SourceError) as caught:
        list(iter_json_array(io.BytesIO(text), "mmrag_dev.json"))
    assert_source_error(caught.value, "mmrag_dev.json", *shown, record=1)
    assert len(str(caught.value)) < 300


# --- JSON arrays: an unpaired surrogate escape is refused, as orjson refuses it -------------------------------------

SURROGATE_FUZZ = textwrap.dedent("""
    import io, random, sys
    import orjson
    from ragloaders.core.errors import SourceError
    from ragloaders.core.readers.json_array import iter_json_array

    B = chr(92)  # a backslash
    PIECES = ["a", "é", B + B, B * 4, B + "u", B + "ud83d", B + "ude00", B + "ud83d" + B + "ude00",
              B + "uDBFF" + B + "uDFFF", B + "u00e9", B + "n", B + '"', "ud800", B * 3 + "ud800", B * 2 + "ud800"]
    rng = random.Random(int(sys.argv[1]))
    for _ in range(400):
        strings = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 4))]
        document = ("[" + ", ".join(f'"{text}"' for text in strings) + "]").encode()
        try:
            expected = orjson.loads(document)
        except orjson.JSONDecodeError:
            expected = None
        for buf_size in (1, 2, 3, 5, 7, 11, 13, 64):
            try:
                got = [value for _, value in iter_json_array(io.BytesIO(document), "f.json", buf_size=buf_size)]
            except SourceError:
                got = None
            assert got == expected, (document, buf_size, got, expected)
    print("ok")
""")


@pytest.mark.parametrize("seed", [1, 2])
def test_json_arrays_refuse_exactly_the_surrogate_escapes_orjson_refuses_at_any_block_size(seed):
    """yajl read a lone high escape as `?` and two high ones as a character of its own: a changed value, silently.
    Random strings of escapes (pairs, lone halves, runs of backslashes before a `u`), every block size small enough
    to cut an escape anywhere; in a child, so a crash fails the test."""
    done = subprocess.run([sys.executable, "-c", SURROGATE_FUZZ, str(seed)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("text", ["\\ud800 and more", "\\ud83d\\ud83d", "tail \\ud800"])
def test_mmrag_corpus_read_as_a_stream_refuses_an_unpaired_surrogate_with_its_record(text):
    from ragloaders.benchmarks.mmrag.builder import read_corpus_stream

    records = b", ".join(b'{"id": "c%d", "text": "%s"}' % (i, (text if i == 2 else "fine").encode()) for i in range(4))
    with pytest.raises(SourceError) as caught:
        list(read_corpus_stream(io.BytesIO(b"[" + records + b"]"), "processed_documents.json"))
    assert_source_error(caught.value, "processed_documents.json", "lone surrogate \\ud8", record=2)


class CountedReads(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        return super().read(size)


@pytest.mark.parametrize("text", [b"\\" * (8 << 20), b"a" * (8 << 20)], ids=["escaped backslashes", "letters"])
def test_a_string_of_many_reads_is_read_in_a_number_of_reads_logarithmic_in_its_length(text):
    """yajl lexes a token cut by a read again from its start at each read: a 24 MB string took ~35 s in 64 KB reads,
    the square of its length. Reads double while no element completes, so the token is lexed again a logarithmic
    number of times (what is counted here: no clock in a test), then go back to the block size."""
    document = b'[{"a": 1}, "' + text + b'", 2]'
    expected = [{"a": 1}, (text[::2] if text[:1] == b"\\" else text).decode(), 2]
    stream = CountedReads(document)
    assert [value for _, value in iter_json_array(stream, "f.json", buf_size=64 << 10)] == expected
    doublings = (len(document) // (64 << 10)).bit_length()
    assert stream.reads <= doublings + 3, stream.reads  # (it was one per 64 KB: 129)
    stream = CountedReads(document)
    assert array_elements_before(stream, "f.json", len(document) - 2, buf_size=64 << 10) == 2
    assert stream.reads <= doublings + 3, stream.reads


BACKSLASH_RUN_CHILD = textwrap.dedent("""
    import resource
    from ragloaders.core.readers.json_array import SurrogateEscapes
    block = b'["' + chr(92).encode() * ((16 << 20) + 1) + b'ud800 and more"]'  # a lone escape after 16 MB of them
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    bound = vm + (96 << 20)  # a few copies of the block, not the regex's frame per pair of backslashes
    resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
    try:
        ready, unpaired = SurrogateEscapes().push(block)
        print(len(ready), unpaired.split(" after ")[0])
    except MemoryError:
        print("MemoryError")
""")


def test_a_long_run_of_backslashes_is_scanned_for_surrogate_escapes_in_bounded_memory():
    """`(?<!\\\\)(?:\\\\\\\\)*` before an escape kept a frame for each pair of backslashes: 250 MB for a 16 MB run,
    in a block as large as a record once reads grow."""
    done = subprocess.run([sys.executable, "-c", BACKSLASH_RUN_CHILD], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0 and done.stdout.strip() == f"{(16 << 20) + 2} the lone surrogate \\ud800", (
        done.stdout + done.stderr[-3000:])


DEEP_ARRAY_CHILD = textwrap.dedent("""
    import io, resource, sys
    from ragloaders.core.errors import SourceError
    from ragloaders.core.readers.json_array import array_elements_before, iter_json_array
    document = eval(sys.argv[1])
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    bound = vm + (64 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
    try:
        if sys.argv[2] == "stream":
            list(iter_json_array(io.BytesIO(document), "f.json", buf_size=int(sys.argv[3])))
        else:
            array_elements_before(io.BytesIO(document), "f.json", len(document), buf_size=int(sys.argv[3]))
        print("read all")
    except SourceError as e:
        print(e)
    except MemoryError:
        print("MemoryError")
""")


@pytest.mark.parametrize("document", [
    'b"[" + b\'{"a": [\' * 4000',  # 28 KB: 8,000 levels
    'b"[" + b"[" * 100_000',  # 100 KB of `[` cut short (a corpus that is not `[` ... `]`: 20 KB took 1.1 GB)
    'b"[" + b"[" * 100_000 + b"\\xff"',  # the invalid byte that hid the depth from orjson
    'b"[1, " + (b\'{"\' + b"k" * 200 + b\'": [\') * 2000',  # a long key at every level: ijson's paths grew by it
])
@pytest.mark.parametrize("reader, buf_size", [("stream", 64 << 10), pytest.param("stream", 7, marks=pytest.mark.slow),
                                              pytest.param("count", 64 << 10, marks=pytest.mark.slow)])
def test_a_json_array_nested_deeper_than_orjson_reads_is_refused_in_bounded_memory(document, reader, buf_size):
    done = subprocess.run([sys.executable, "-c", DEEP_ARRAY_CHILD, document, reader, str(buf_size)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(LOADERS)})
    record = 1 if document.startswith('b"[1, "') else 0
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"f.json, record {record}: invalid JSON in record {record} (depth limit exceeded: "
                                  "nested deeper than 1,024 levels)"), done.stdout + done.stderr[-3000:]


@pytest.mark.parametrize("opening, closing", [(b"[", b"]"), (b'{"k": ', b"}"), (b'{"": [', b"]}")])
def test_the_stream_refuses_nesting_exactly_where_orjson_does_at_every_block_size(opening, closing):
    import orjson
    from ragloaders.core.readers.json_array import MAX_DEPTH

    def same(values: list, expected: list) -> bool:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(10_000)  # `==` on values nested 1,024 deep
        try:
            return values == expected
        finally:
            sys.setrecursionlimit(limit)

    for levels in (MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):  # below the top-level array
        nest = opening * (levels // 2 if opening == b'{"": [' else levels) + b"0"
        nest += closing * (levels // 2 if opening == b'{"": [' else levels)
        document = b'[{"x": 1}, ' + nest + b", 2]"
        try:
            expected = orjson.loads(document)
        except orjson.JSONDecodeError as e:
            assert str(e).startswith("depth limit exceeded")
            expected = None
        for buf_size in (1, 5, 64, 1 << 16):
            if expected is None:
                with pytest.raises(SourceError) as error:
                    list(iter_json_array(io.BytesIO(document), "f.json", buf_size=buf_size))
                assert error.value.record == 1 and "depth limit exceeded" in str(error.value)
            else:
                assert same([value for _, value in iter_json_array(io.BytesIO(document), "f.json", buf_size=buf_size)],
                            expected)


def test_array_elements_before_counts_the_elements_complete_within_a_limit_at_every_block_size():
    from ragloaders.core.readers.json_array import array_elements_before

    document = b'[{"a": "\\ud83d\\ude00"}, {"b": [1, 2]}, "\\ud800", {"c": "x"}]'
    ends = [document.index(b"}") + 1, document.index(b"]}") + 2, document.index(b'800"') + 4, len(document) - 1]
    for buf_size in (1, 3, 7, 64):
        for limit in range(1, len(document)):
            expected = sum(end <= limit for end in ends)
            assert array_elements_before(io.BytesIO(document), "f.json", limit, buf_size=buf_size) == expected, (
                limit, buf_size)


@pytest.mark.parametrize("before", [0, 5, (1 << 20) - 2, (1 << 20) - 1, 1 << 20, (3 << 20) + 7])
@pytest.mark.parametrize("bad", [b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf"])
def test_first_invalid_utf8_names_the_byte_and_line_of_the_file_whatever_the_reads(before, bad):
    from ragloaders.core.readers.lines import first_invalid_utf8

    good = ("é\n" * (before // 3 + 1)).encode()[:before]
    good = good.decode("utf-8", "ignore").encode()  # cut at a character boundary: every byte before `bad` is valid
    data = good + bad + b"rest\n"
    at, line, error = first_invalid_utf8(io.BytesIO(data))
    assert at == len(good) and line == good.count(b"\n") + 1
    assert error.object[error.start:error.start + 1] == bad[:1]
    assert first_invalid_utf8(io.BytesIO(good + "€\n".encode())) is None
    cut = first_invalid_utf8(io.BytesIO(good + b"\xe2\x82"))  # a character cut at the end of the stream
    assert cut is not None and cut[:2] == (len(good), good.count(b"\n") + 1)


JSON_VALUES = st.recursive(
    # (yajl refuses integers outside -(2**63 - 1) .. 2**63 - 1 as an overflow, a SourceError; not this test's subject)
    st.none() | st.booleans() | st.integers(-(2**63) + 1, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=25,
)


def kinds(value: object) -> object:
    if isinstance(value, dict):
        return {key: kinds(item) for key, item in value.items()}
    if isinstance(value, list):
        return [kinds(item) for item in value]
    return type(value).__name__


@settings(max_examples=60, deadline=None)
@given(elements=st.lists(JSON_VALUES, max_size=6), buf_size=st.sampled_from([1, 2, 3, 7, 64, 1 << 16]),
       indent=st.sampled_from([None, 2]))
def test_the_stream_gives_every_element_as_json_loads_and_ijsons_items_do(elements, buf_size, indent):
    import ijson
    from ragloaders.core.readers.json_array import JSON_ARRAY_BACKEND

    document = json.dumps(elements, indent=indent).encode()
    got = [value for _, value in iter_json_array(io.BytesIO(document), "f.json", buf_size=buf_size)]
    assert got == json.loads(document)
    assert kinds(got) == kinds(json.loads(document))  # 1 and 1.0 are equal, but not the same value
    items = ijson.sendable_list()
    parser = JSON_ARRAY_BACKEND.items_coro(items, "item", use_float=True)
    parser.send(document)
    parser.close()
    assert got == list(items)
    assert array_elements_before(io.BytesIO(document), "f.json", len(document), buf_size=buf_size) == len(elements)


@pytest.mark.parametrize("blank", [b"\n", b" \t\r\n", b"\r\n"])
def test_runs_of_blank_lines_are_skipped_and_counted(blank, tmp_path):
    """A flood of blank lines (a zip of 4 GiB of line ends is 4 MB) was read one line at a time in Python: 16 MB a
    second. They are skipped in one scan; the rows and the line numbers of an error after them stay exact."""
    schema = pa.schema([(name, pa.string()) for name in ("_id", "title", "text")])
    doc = b'{"_id": "%d", "title": "", "text": "x"}'
    flood = blank * 100_000
    (tmp_path / "corpus.jsonl").write_bytes(doc % 1 + b"\n" + flood + doc % 2 + b"\n" + flood + b"  " + doc % 3)
    tables = list(jsonl.read_jsonl(jsonl.Shard(SourceFiles(str(tmp_path)), "corpus.jsonl"), schema))
    assert [i for table in tables for i in table.column("_id").to_pylist()] == ["1", "2", "3"]
    (tmp_path / "corpus.jsonl").write_bytes(doc % 1 + b"\n" + flood + b'{"_id": 2}\n' + flood)
    with pytest.raises(SourceError) as caught:
        list(jsonl.read_jsonl(jsonl.Shard(SourceFiles(str(tmp_path)), "corpus.jsonl"), schema))
    assert_source_error(caught.value, "corpus.jsonl", line=100_002)


@pytest.mark.parametrize("number, said", [(b"100000000000000000000000000000", "an integer past 64 bits"),
                                          (b"-9223372036854775809", "an integer past 64 bits"),
                                          (b"1e400", "a number out of a double's range")])
def test_an_integer_past_64_bits_in_a_json_array_is_named_so_not_invalid_json(number, said):
    """yajl says 'integer overflow' (or 'floating point overflow') of a valid number: the message read 'invalid JSON
    in record 1'."""
    data = b'[{"a": 1}, {"relevant_chunks": {"c1": ' + number + b'}}]'
    with pytest.raises(SourceError) as caught:
        list(iter_json_array(io.BytesIO(data), "mmrag_test.json"))
    message = str(caught.value)
    assert message.startswith(f"mmrag_test.json, record 1: {said}") and "invalid JSON" not in message
    assert list(iter_json_array(io.BytesIO(data.replace(number, b"9223372036854775807")), "ok.json"))[1] == (
        1, {"relevant_chunks": {"c1": 2**63 - 1}})


@pytest.mark.parametrize("buffered", [True, False])
def test_iter_lines_skips_runs_of_blank_lines_and_keeps_their_numbers(buffered):
    """CRAG's records are read a line at a time: a flood of line ends (1 GiB of them is 785 bytes of bzip2) went at
    4 MB a second. A line's own leading spaces stay; a form feed is no JSON whitespace, so not blank."""
    data = b'{"a":1}\n' + b"\n" * 300_000 + b" \t\r\n" * 1000 + b'  {"b":2}\r\n\x0c\n\n'
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=4096) if buffered else io.BytesIO(data)
    found = list(lines.iter_lines(stream, "x.jsonl", skip_blank=True))
    assert found == [(1, b'{"a":1}'), (301_002, b'  {"b":2}'), (301_003, b"\x0c")]
    assert list(lines.iter_lines(io.BytesIO(data), "x.jsonl"))[301_001] == (301_002, b'  {"b":2}')  # as before
