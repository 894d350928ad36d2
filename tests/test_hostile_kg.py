"""Hostile mock KG files that reuse what they hold: a pickle whose calls share one argument (each call copied or
scanned it again, beyond the file's budget), a frame with tens of thousands of columns (quadratic), JSON nested
tens of thousands deep (a gigabyte from 100 KB); and a JSON file that starts with a byte order mark."""

from __future__ import annotations

import bz2
import json
import os
import sqlite3
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import LOADERS, assert_names, assert_source_error
from mock_kg_generated import nba, sqlitedict_file
from ragloaders.benchmarks.crag_mock_kg import catalogue, files, frames, sqlite
from ragloaders.core.errors import SourceError
from ragloaders.core.readers.strict_json import loads_strict
from test_safe_pickle import decoded_in_child

# ---------------------------------------------------------------- a pickle assembler with a memo


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(value: str) -> bytes:
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def raw(data: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(data)) + data


def integer(value: int) -> bytes:
    return b"J" + struct.pack("<i", value)


def tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def call(function: bytes, *args: bytes) -> bytes:
    return function + tup(*args) + b"R"


def items(*values: bytes) -> bytes:
    return b"](" + b"".join(values) + b"e"


def mapping(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"}(" + b"".join(k + v for k, v in pairs) + b"u"


def put(number: int) -> bytes:
    """Memoize the top of the stack as `number` and pop it."""
    return b"r" + struct.pack("<I", number) + b"0"


def get(number: int) -> bytes:
    return b"j" + struct.pack("<I", number)


def pickle_of(body: bytes) -> bytes:
    return b"\x80\x04" + body + b"."


def dtype(name: str) -> bytes:
    return call(glob("numpy", "dtype"), text(name), b"\x89", b"\x88")


def frombuffer(data: bytes, dtype_: bytes, shape: tuple[int, ...]) -> bytes:
    return call(glob("numpy.core.numeric", "_frombuffer"), data, dtype_, tup(*map(integer, shape)), text("C"))


def new_index(cls: str, fields: bytes) -> bytes:
    return call(glob("pandas.core.indexes.base", "_new_Index"), glob("pandas", cls), fields)


def range_index(stop: int) -> bytes:
    return new_index("RangeIndex", mapping((text("start"), integer(0)), (text("stop"), integer(stop)),
                                           (text("step"), integer(1))))


def column_names(count: int) -> bytes:
    array = call(glob("numpy.core.multiarray", "_reconstruct"), glob("numpy", "ndarray"), tup(integer(0)), raw(b"b"))
    state = tup(integer(1), tup(integer(count)), dtype("O8"), b"\x89", items(*(text(f"c{i}") for i in range(count))))
    return new_index("Index", mapping((text("data"), array + state + b"b")))


def frame(columns: bytes, index: bytes, blocks: list[bytes]) -> bytes:
    manager = call(glob("pandas.core.internals.managers", "BlockManager"), tup(*blocks), items(columns, index))
    return glob("pandas", "DataFrame") + b")\x81" + mapping((text("_mgr"), manager)) + b"b"


def block(values: bytes, first: int, stop: int) -> bytes:
    placement = call(glob("builtins", "slice"), integer(first), integer(stop), integer(1))
    return call(glob("pandas._libs.internals", "_unpickle_block"), values, placement, integer(2))


# ---------------------------------------------------------------- shared arguments


SHARED_BYTES = 1 << 16
USES = 20_000
"""20,000 uses of one 64 KB argument: 1.3 GB if each use copies it, from a pickle of under 2 MB."""


def shared_argument_pickles() -> dict[str, tuple[str, bytes]]:
    """name -> (kind, pickle): each makes gigabytes if a call copies (or scans) an argument the memo shares."""
    floats = dtype("f8") + put(2)
    categorical = (call(glob("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"), glob("pandas", "Categorical"),
                        integer(0), b"N")
                   + tup(get(1), frombuffer(raw(b"\x00"), dtype("i1"), (1,))) + b"b")
    return {
        "numpy arrays over one bytearray": ("dict", pickle_of(
            b"\x96" + struct.pack("<Q", SHARED_BYTES) + bytes(SHARED_BYTES) + put(1) + floats
            + mapping((text("k"), items(*[frombuffer(get(1), get(2), (SHARED_BYTES // 8,))] * USES))))),
        "bytearray() of one bytes": ("dict", pickle_of(
            raw(bytes(SHARED_BYTES)) + put(1)
            + mapping((text("k"), items(*[call(glob("builtins", "bytearray"), get(1))] * USES))))),
        "latin-1 encode of one str": ("dict", pickle_of(
            text("a" * SHARED_BYTES) + put(1)
            + mapping((text("k"), items(*[call(glob("_codecs", "encode"), get(1), text("latin1"))] * USES))))),
        "categoricals over one RangeIndex": ("dict", pickle_of(  # 1.6 MB of categories made per categorical
            raw(bytes(8 << 10)) + b"0" + mapping((text("categories"), range_index(200_000))) + put(1)
            + mapping((text("k"), items(*[categorical] * 400))))),
        "frame columns over one array": ("frame", pickle_of(  # each column a block of the same 160 KB array
            frombuffer(raw(bytes(160_000)), dtype("f8"), (20_000,)) + put(1)
            + frame(column_names(4000), range_index(20_000), [block(get(1), i, i + 1) for i in range(4000)]))),
    }


KEY_ITEMS, KEY_USES = 50_000, 5_000


def shared_key_pickles() -> dict[str, tuple[str, bytes]]:
    """name -> (kind, pickle): one tuple of 50,000 items (memoized) used 5,000 times as a dict key or set item: each
    use hashed and checked the whole tuple again, 250 million visits from a 125 KB file."""
    big = b"(" + b"K\x01" * KEY_ITEMS + b"t" + put(1)
    uses = b"".join(get(1) for _ in range(KEY_USES))
    return {name: ("dict", data) for name, data in {
        "dict keys": pickle_of(big + b"}" + b"".join(get(1) + b"Ns" for _ in range(KEY_USES))),
        "frozenset items": pickle_of(big + mapping((text("k"), b"(" + uses + b"\x91"))),
        "set ADDITEMS": pickle_of(big + mapping((text("k"), b"\x8f(" + uses + b"\x90"))),
        "builtins.set() of a list": pickle_of(big + b"](" + uses + b"e" + put(2)
                                               + mapping((text("k"), call(glob("builtins", "set"), get(2))))),
    }.items()}


WIDE = 60_000


def wide_frame() -> tuple[str, bytes]:
    """One float block of 60,000 columns (a 1 MB pickle)."""
    return "frame", pickle_of(frame(column_names(WIDE), range_index(1),
                                    [block(frombuffer(raw(bytes(8 * WIDE)), dtype("f8"), (WIDE, 1)), 0, WIDE)]))


@pytest.fixture(scope="module")
def pickle_outcomes(tmp_path_factory) -> tuple[dict[str, dict], str]:
    """Every hostile pickle of this file decoded in one child (its warm-up takes seconds), 256 MB and 60 s in all."""
    folder = tmp_path_factory.mktemp("pickles")
    cases = {**shared_argument_pickles(), **shared_key_pickles(), "wide frame": wide_frame()}
    outcomes = decoded_in_child(list(cases.values()), folder, timeout=60)
    return dict(zip(cases, outcomes)), str(folder)


@pytest.mark.parametrize("name", list(shared_argument_pickles()))
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_an_argument_shared_between_calls_is_charged_for_each_use(pickle_outcomes, name):
    """Before, each of these reached a MemoryError under the child's 256 MB limit (a gigabyte or more otherwise):
    the budget counted a shared argument once, but every call copied it again."""
    assert len(shared_argument_pickles()[name][1]) < 2 << 20
    outcome, folder = pickle_outcomes[0][name], pickle_outcomes[1]
    assert outcome.get("error") == "SourceError", outcome
    assert outcome["message"].startswith(folder) and "expands to more than 64 units per byte" in outcome["message"]


@pytest.mark.parametrize("name", list(shared_key_pickles()))
def test_one_large_tuple_used_as_a_key_again_and_again_is_refused_in_bounded_time(pickle_outcomes, name):
    """Each use hashed the whole tuple again (minutes each); only strings are keys and set items now."""
    outcome, folder = pickle_outcomes[0][name], pickle_outcomes[1]
    assert outcome.get("error") == "SourceError", outcome
    assert outcome["message"].startswith(folder) and "a dict key or set item of type tuple" in outcome["message"]


def test_a_frame_of_sixty_thousand_columns_reads_in_linear_time(pickle_outcomes):
    """Finding each column's block and the repeated-name check searched a list per column: over two minutes for
    this frame alone; now it fits the child's 60 s with every other case here."""
    assert pickle_outcomes[0]["wide frame"].get("rows") == 1, pickle_outcomes[0]["wide frame"]


def test_a_two_dimensional_numpy_str_block_reads_as_its_strings(tmp_path):
    """A DType's itemsize is in bytes, numpy's `U` counts characters (4 bytes each): viewing the block's bytes as
    numpy gave a bare `ValueError: buffer size must be a multiple of element size`."""
    strings = ["a", "bc", "d", "ef", "g", "h"]  # block row 0 is column c0, row 1 column c1
    data = b"".join(s.ljust(2, "\0").encode("utf-32-le") for s in strings)
    values = frombuffer(raw(data), dtype("U8"), (2, 3))
    path = tmp_path / "grammy_df.pickle"
    path.write_bytes(pickle_of(frame(column_names(2), range_index(3), [block(values, 0, 2)])))
    assert frames.frame_table(str(path)).to_pylist() == [{"c0": "a", "c1": "ef"}, {"c0": "bc", "c1": "g"},
                                                         {"c0": "d", "c1": "h"}]
    fortran = call(glob("numpy.core.numeric", "_frombuffer"), raw(data), dtype("U8"), tup(integer(2), integer(3)),
                   text("F"))  # column-major: block row 0 is strings 0, 2, 4
    path.write_bytes(pickle_of(frame(column_names(2), range_index(3), [block(fortran, 0, 2)])))
    assert frames.frame_table(str(path)).to_pylist() == [{"c0": "a", "c1": "bc"}, {"c0": "d", "c1": "ef"},
                                                         {"c0": "g", "c1": "h"}]


# ---------------------------------------------------------------- JSON


MOVIES = catalogue.BY_CONFIG["movie_movies"]
DEEP_JSON_CHILD = textwrap.dedent("""
    import resource, sys
    from ragloaders.benchmarks.crag_mock_kg import catalogue, files
    from ragloaders.core.errors import SourceError
    with open("/proc/self/statm") as f:
        bound = int(f.read().split()[0]) * resource.getpagesize() + (512 << 20)  # 512 MB beyond what is imported
    resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
    try:
        rows = sum(1 for _ in files.iter_json_object(sys.argv[1], catalogue.BY_CONFIG["movie_movies"]))
        print("rows", rows)
    except SourceError as e:
        print("SourceError", e)
    except BaseException as e:
        print(type(e).__name__, e)
""")


def nested(depth: int, lone_surrogate: bool = False) -> bytes:
    title = b'"title": "\\ud800", ' if lone_surrogate else b""
    return b'{"a": {' + title + b'"length": ' + b"[" * depth + b"]" * depth + b"}}"


@pytest.mark.slow
def test_json_nested_fifty_thousand_deep_is_refused_without_a_gigabyte(tmp_path):
    """100 KB of brackets made yajl's builder take 6 GB (a path string per level): a MemoryError under 512 MB."""
    path = tmp_path / "movie_db.json"
    path.write_bytes(nested(50_000))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADERS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", DEEP_JSON_CHILD, str(path)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.stdout.startswith(f"SourceError {path}: ") and f"nested deeper than {files.MAX_JSON_DEPTH} levels" \
        in done.stdout, (done.stdout, done.stderr[-500:])


def test_deep_json_read_by_the_exact_parser_is_a_source_error_not_a_recursion_error(tmp_path):
    """A lone surrogate sends the file to the exact parser, whose value json.dumps recursed through."""
    path = tmp_path / "movie_db.json"
    path.write_bytes(nested(100_000, lone_surrogate=True))
    with pytest.raises(SourceError) as caught:
        list(files.iter_json_object(str(path), MOVIES))
    assert caught.value.path == str(path)
    assert_source_error(caught.value, "movie_db.json", f"{files.MAX_JSON_DEPTH} levels")


@pytest.mark.parametrize("title", [b"x", b"\\\\ud800"], ids=["fast parser", "exact parser"])
def test_json_nested_as_deep_as_the_converter_reads_is_still_read(tmp_path, title):
    """`\\ud800` (an escaped backslash, then text) looks like a lone surrogate: the file goes to the exact parser."""
    depth = files.MAX_JSON_DEPTH - 3  # the top-level object, the member and `length` around the brackets
    path = tmp_path / "movie_db.json"
    path.write_bytes(b'{"a": {"title": "' + title + b'", "length": ' + b"[" * depth + b"]" * depth + b"}}")
    [(row, _)] = files.iter_json_object(str(path), MOVIES)
    assert row["title"] == json.loads(b'"' + title + b'"')
    assert row["other"] == json.dumps({"length": json.loads(b"[" * depth + b"]" * depth)}, separators=(",", ":"))


def test_a_byte_order_mark_at_the_start_of_a_json_object_file_is_skipped(tmp_path: Path):
    """ijson's first read asks for 0 bytes; the reader took that as the read that skips the mark, so a file saved
    with a BOM was refused as invalid JSON."""
    path = tmp_path / "movie_db.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": {"title": "A", "id": 1}}')
    [(row, _)] = files.iter_json_object(str(path), MOVIES)
    assert (row["key"], row["title"], row["id"]) == ("a", "A", 1)
    path.write_bytes(b'{"a": {"title": "A"},\xef\xbb\xbf "b": {}}')  # anywhere else it is not whitespace
    with pytest.raises(SourceError) as caught:
        list(files.iter_json_object(str(path), MOVIES))
    assert_source_error(caught.value, "movie_db.json", "JSON", "member")


# ---------------------------------------------------------------- SqliteDict values and damaged sqlite files


@pytest.mark.parametrize("config, value, facts", [
    ("finance_marketcap", 10**400, ["1,329 bits", "float64"]),
    ("finance_price", {"2024-01-02": {"Volume": 10**5000}}, ["16,610 bits", "int64"]),
], ids=["float field", "int field"])
def test_an_integer_too_large_for_its_column_names_file_and_key(tmp_path, config, value, facts):
    """Before: OverflowError (int to float), and ValueError (Python will not write an int of over 4,300 digits in
    the message), instead of a SourceError."""
    path = tmp_path / "values.sqlite"
    sqlitedict_file(path, [("META", value)])
    with pytest.raises(SourceError) as caught:
        list(sqlite.iter_sqlitedict(str(path), catalogue.BY_CONFIG[config]))
    assert caught.value.path == str(path) and "key 'META'" in str(caught.value)
    assert_source_error(caught.value, "values.sqlite", *facts)


SQLITE_FLIPS_CHILD = textwrap.dedent("""
    import collections, json, random, sys
    from ragloaders.benchmarks.crag_mock_kg import catalogue, sqlite
    from ragloaders.core.errors import SourceError

    def table_rows(path, name):
        connection = sqlite.open_sqlite(path)
        try:
            schema, json_columns = sqlite.sqlite_table_schema(connection, path, name)
        finally:
            connection.close()
        return sum(t.num_rows for t in sqlite.iter_sqlite_table(path, name, schema, json_columns))

    def dict_rows(path):
        return sum(1 for _ in sqlite.iter_sqlitedict(path, catalogue.BY_CONFIG["finance_info"]))

    rng, outcomes, mutant = random.Random(20), collections.Counter(), sys.argv[3]
    for base, readers in ((sys.argv[1], [lambda p: table_rows(p, "game"), lambda p: table_rows(p, "play_by_play")]),
                          (sys.argv[2], [dict_rows])):
        data = open(base, "rb").read()
        for number in range(int(sys.argv[4])):
            damaged = bytearray(data)
            for _ in range(rng.choice((1, 4, 16))):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            if number % 7 == 0:
                damaged = damaged[:rng.randrange(len(damaged))]
            open(mutant, "wb").write(damaged)
            for read in readers:
                try:
                    read(mutant)
                    outcomes["rows"] += 1
                except SourceError as e:
                    outcomes["SourceError" if str(e).startswith(mutant) else "SourceError naming another file"] += 1
                except Exception as e:
                    outcomes[type(e).__name__] += 1
    print(json.dumps(outcomes))
""")


def test_a_table_name_of_a_hundred_thousand_characters_is_previewed_in_the_error(tmp_path):
    path = str(tmp_path / "long.sqlite")
    name = "t" * 100_000
    with sqlite3.connect(path) as connection:
        connection.execute(f'CREATE VIRTUAL TABLE "{name}" USING fts5(a)')
    connection = sqlite.open_sqlite(path)
    try:
        with pytest.raises(SourceError) as caught:
            sqlite.sqlite_table_schema(connection, path, name)
    finally:
        connection.close()
    assert_source_error(caught.value, "long.sqlite", "virtual", "t" * 40)
    assert len(str(caught.value)) < len(path) + 200  # a preview of the name, not the name


@pytest.mark.slow  # a fuzzer: 240 mutants read in a child (seconds)
def test_damaged_sqlite_files_give_rows_or_a_source_error_naming_the_file(tmp_path):
    """Random byte changes and cuts of an nba.sqlite and a SqliteDict file, read in a child (a crash fails the test).
    Before, a damaged schema gave sqlite3.OperationalError ('Could not decode to UTF-8 column sql') or
    UnicodeDecodeError (sqlite3 decoding the error message) out of the readers."""
    nba(tmp_path / "nba.sqlite", 30, 20)
    sqlitedict_file(tmp_path / "dict.sqlite", [(f"T{i}", {"Open": {"2024-01-02": 1.5}}) for i in range(200)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADERS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SQLITE_FLIPS_CHILD, str(tmp_path / "nba.sqlite"),
                           str(tmp_path / "dict.sqlite"), str(tmp_path / "mutant.sqlite"), "80"],
                          capture_output=True, text=True, env=env, timeout=120)
    outcomes = json.loads(done.stdout or "{}")
    assert set(outcomes) == {"rows", "SourceError"} and sum(outcomes.values()) == 240, (outcomes, done.stderr[-500:])


# ---------------------------------------------------------------- JSON lines


@pytest.mark.parametrize("line", [
    b'["x", {"summary_structured": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]",
    b'["x", {"summary_structured": [NaN, ' + b"[" * 5000 + b"]" * 5000 + b"]}]",
], ids=["deep", "deep after NaN"])
def test_a_deeply_nested_open_kg_line_is_a_source_error_naming_file_and_line(tmp_path, line):
    """orjson refuses it; the fallback to Python's json (which reads the NaN these files hold) raised
    RecursionError out of the reader."""
    path = tmp_path / "kg.0.jsonl.bz2"
    path.write_bytes(bz2.compress(b'["a", {"summary_text": "t"}]\n' + line + b"\n"))
    with pytest.raises(SourceError) as caught:
        list(files.iter_jsonl_pairs([str(path)], catalogue.BY_CONFIG["open_entities"]))
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert_source_error(caught.value, "kg.0.jsonl.bz2", "JSON", "nested", line=2)


@pytest.mark.parametrize("depth", [990, 1020])
def test_loads_strict_refuses_what_orjson_reads_and_python_cannot_with_a_value_error(depth):
    """Between Python's recursion limit and orjson's 1,024 levels, a line that also needs the second parse (a
    key-like `": ` inside a string) raised RecursionError, which no caller of the shared rule catches."""
    line = b'{"k": "\\": ", "v": ' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(ValueError) as caught:
        loads_strict(line)
    assert_names(caught.value, "JSON", "nested")


def test_a_stored_generated_column_is_kept_as_select_star_returns_it_and_a_virtual_one_refused(tmp_path):
    """PRAGMA table_info leaves generated columns out: `c` was dropped without a word, though the server's `SELECT *`
    returns it. A STORED one is data in the file; a VIRTUAL one is an expression sqlite evaluates on read (code from
    the file, at any cost: tests/test_mock_kg_hostile_sources.py), refused naming it."""
    path = tmp_path / "nba.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE game (a INTEGER, c TEXT GENERATED ALWAYS AS (hex(a)) STORED)")
        db.execute("CREATE TABLE play (a INTEGER, b AS (a * 2))")
        db.executemany("INSERT INTO game (a) VALUES (?)", [(1,), (255,)])
        expected = [dict(zip(("a", "c"), row)) for row in db.execute("SELECT * FROM game")]
    db.close()
    connection = sqlite.open_sqlite(str(path))
    schema, json_columns = sqlite.sqlite_table_schema(connection, str(path), "game")
    with pytest.raises(SourceError) as caught:
        sqlite.sqlite_table_schema(connection, str(path), "play")
    assert_source_error(caught.value, "nba.sqlite", "table 'play', column 'b': a VIRTUAL generated column")
    connection.close()
    rows = [row for table in sqlite.iter_sqlite_table(str(path), "game", schema, json_columns)
            for row in table.to_pylist()]
    assert rows == expected == [{"a": 1, "c": "31"}, {"a": 255, "c": "323535"}]
