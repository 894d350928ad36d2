"""Hostile CRAG mock KG source files built from the bundled sample (tests/data/crag_mock_kg): an nba.sqlite whose
table sqlite computes on read (a VIRTUAL generated column: 98 KB took 0.39 s a row, ignoring SIGTERM, or 1 GB of
memory), whose rows lack most of their columns (billions of steps from kilobytes), or whose cell outgrows the memory
left; and a SqliteDict pickle sharing one large integer (a 61 KB pickle became 90 million characters of JSON)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import DATA, LOADERS, assert_source_error
from ragloaders.benchmarks.crag_mock_kg import catalogue, sqlite
from ragloaders.cli import main
from ragloaders.core.errors import SourceError

SAMPLE = DATA / "crag_mock_kg" / "cragkg"
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADERS), os.environ.get("PYTHONPATH", "")])}


def sample_copy(tmp_path: Path, domain: str) -> Path:
    """The bundled sample's `domain` folder, copied into a cragkg folder of `tmp_path` (which is returned)."""
    shutil.copytree(SAMPLE / domain, tmp_path / "cragkg" / domain)
    return tmp_path / "cragkg"


def recreate_officials(nba: Path, columns: str, rows: int, *, declared_after: str = "") -> None:
    """nba.sqlite's `officials` table made again with `columns`, holding `rows` rows; then `declared_after` added to
    its declaration as a hostile file's schema says it (sqlite would evaluate a generated column on insert)."""
    with sqlite3.connect(nba) as db:
        db.execute("DROP TABLE officials")
        db.execute(f"CREATE TABLE officials ({columns})")
        db.executemany("INSERT INTO officials (id, value) VALUES (?, ?)", [(f"o{i}", i / 2) for i in range(rows)])
        if declared_after:
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'officials'",
                       (f"CREATE TABLE officials ({columns}, {declared_after})",))
    db.close()


def build(kg: Path, config: str, tmp_path: Path) -> int:
    return main(["build", "crag/mock_kg", "--data-dir", str(kg), "--configs", config, "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache")])


def read_table(path: Path, name: str) -> tuple[list[dict], sqlite3.Connection]:
    """The rows of table `name` as the builder reads them (scan, then rows, here on one connection)."""
    connection = sqlite.open_sqlite(str(path))
    try:
        schema, json_columns = sqlite.sqlite_table_schema(connection, str(path), name)
        rows = [row for table in sqlite.iter_sqlite_table(str(path), name, schema, json_columns, connection)
                for row in table.to_pylist()]
    finally:
        connection.close()
    return rows, connection


# ---------------------------------------------------------------- nba.sqlite: nothing computed on read


SLOW = "length(replace(hex(zeroblob(20000000+length(id))),'0','00'))"


@pytest.mark.parametrize("column, facts", [
    (f"slow INTEGER GENERATED ALWAYS AS ({SLOW}) VIRTUAL", ["'slow'", "VIRTUAL generated"]),
    ("bomb TEXT GENERATED ALWAYS AS (hex(zeroblob(200000000)))", ["'bomb'", "VIRTUAL generated"]),
    ("note DEFAULT '" + "x" * 1000 + "'", ["'note'", "DEFAULT of 1,002 characters"]),
], ids=["seconds a row", "a gigabyte a row", "long default"])
def test_a_column_sqlite_computes_on_read_is_refused_naming_file_table_and_column(tmp_path, capsys, column, facts):
    """Before: the build evaluated the expression for each row, in the scan and again in the read (0.39 s a row for
    `slow`, SIGTERM not acted on for minutes; 1.14 GB then DatasetGenerationError for `bomb`), or wrote the default's
    text again for each row stored without the column (rows of the file's size, for a few bytes each)."""
    kg = sample_copy(tmp_path, "sports")
    recreate_officials(kg / "sports" / "nba.sqlite", "id TEXT, value REAL", 3, declared_after=column)
    assert build(kg, "sports_nba_officials", tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{kg / 'sports' / 'nba.sqlite'}: table 'officials', column" in err, err
    assert all(fact in err for fact in facts), err
    assert len(err.strip().splitlines()) == 1 and len(err) < 600, err
    assert not (tmp_path / "out").exists()


def test_stored_generated_columns_and_short_defaults_are_read_as_the_server_reads_them(tmp_path):
    """A STORED generated column is data in the file, and a short DEFAULT stands in for rows stored without the
    column: both are kept, as the server's `SELECT *` returns them."""
    nba = sample_copy(tmp_path, "sports") / "sports" / "nba.sqlite"
    recreate_officials(nba, "id TEXT, value REAL, twice REAL GENERATED ALWAYS AS (value * 2) STORED", 3)
    with sqlite3.connect(nba) as db:
        db.execute("ALTER TABLE officials ADD COLUMN crew TEXT DEFAULT 'none'")  # the rows have no `crew` stored
        expected = [dict(zip(("id", "value", "twice", "crew"), row)) for row in db.execute("SELECT * FROM officials")]
    db.close()
    rows, _ = read_table(nba, "officials")
    assert rows == expected == [{"id": f"o{i}", "value": i / 2, "twice": float(i), "crew": "none"} for i in range(3)]


def test_a_connection_holds_no_value_longer_than_the_file(tmp_path):
    """Before: no SQLITE_LIMIT_LENGTH (a billion bytes), so an expression could make a value of any size."""
    nba = sample_copy(tmp_path, "sports") / "sports" / "nba.sqlite"
    size = max(nba.stat().st_size, sqlite.LENGTH_FLOOR)
    connection = sqlite.open_sqlite(str(nba))
    try:
        assert connection.execute(f"SELECT length(zeroblob({size}))").fetchone() == (size,)
        with pytest.raises(sqlite3.DataError, match="too big"):
            connection.execute(f"SELECT zeroblob({size + 1})").fetchone()
    finally:
        connection.close()


# ---------------------------------------------------------------- nba.sqlite: steps bounded by the file's size


def hollow_table(nba: Path, rows: int, columns: int) -> None:
    """`officials` declared with `columns` columns, its `rows` rows each storing only the first (sqlite reads every
    other as NULL): a few bytes a row, `columns` values a row to scan."""
    with sqlite3.connect(nba) as db:
        db.execute("DROP TABLE officials")
        db.execute("CREATE TABLE officials (id TEXT)")
        db.executemany("INSERT INTO officials VALUES (?)", [(str(i),) for i in range(rows)])
        db.execute("PRAGMA writable_schema = ON")
        many = ", ".join(f"c{i}" for i in range(1, columns))
        db.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'officials'", (f"CREATE TABLE officials (id TEXT, "
                                                                                  f"{many})",))
    db.close()


def test_rows_lacking_most_of_their_columns_stop_at_the_steps_the_file_allows(tmp_path):
    """20,000 rows of 1,999 missing columns: 180 KB scanned as 40 million values. Before: no bound on the steps
    (minutes for a few MB); now the scan stops at STEPS_PER_BYTE a byte of the file, a SourceError naming it."""
    nba = sample_copy(tmp_path, "sports") / "sports" / "nba.sqlite"
    hollow_table(nba, 20_000, 2_000)
    connection = sqlite.open_sqlite(str(nba))
    try:
        with pytest.raises(SourceError) as caught:
            sqlite.sqlite_table_schema(connection, str(nba), "officials")
    finally:
        connection.close()
    allowed = sqlite.STEPS_FLOOR + sqlite.STEPS_PER_BYTE * nba.stat().st_size
    assert_source_error(caught.value, "sports/nba.sqlite", "table 'officials'", f"{allowed:,} sqlite steps")
    assert allowed < connection.steps <= allowed + sqlite.PROGRESS_EVERY  # stopped at the bound, not at the end


def test_a_table_of_nulls_takes_a_few_steps_a_byte(tmp_path):
    """The budget's margin: stored NULLs (the cheapest values to store, the most steps a byte) take ~3 steps a byte
    to scan and read, against the STEPS_PER_BYTE allowed; the rows are all read."""
    path = tmp_path / "nulls.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE nulls ({', '.join(f'c{i}' for i in range(100))})")
        db.executemany(f"INSERT INTO nulls VALUES ({', '.join('?' * 100)})", [(None,) * 100] * 5_000)
    db.close()
    rows, connection = read_table(path, "nulls")
    assert len(rows) == 5_000 and rows[0] == dict.fromkeys(f"c{i}" for i in range(100))
    assert connection.steps <= 4 * path.stat().st_size <= sqlite.STEPS_PER_BYTE * path.stat().st_size / 16


SIGNAL_CHILD = textwrap.dedent("""
    import json, signal, os, sys
    from ragloaders.benchmarks.crag_mock_kg import sqlite
    from ragloaders.publish.swap import sigterm_as_interrupt

    sqlite.STEPS_PER_BYTE = 10**9  # (the budget out of the way: the query would run to its end)
    progress, calls = sqlite.BoundedConnection._progress, []

    def progress_then_sigterm(connection):
        calls.append(connection.steps)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return progress(connection)

    sqlite.BoundedConnection._progress = progress_then_sigterm
    connection = sqlite.open_sqlite(sys.argv[1])
    with sigterm_as_interrupt():
        try:
            sqlite.sqlite_table_schema(connection, sys.argv[1], "officials")
            outcome = "read to the end"
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        except Exception as e:
            outcome = type(e).__name__ + ": " + str(e)
    print(json.dumps({"outcome": outcome, "progress calls": len(calls),
                      "SIGTERM handler restored": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL}))
""")


def test_sigterm_while_sqlite_runs_stops_the_query_and_reaches_the_builds_handler(tmp_path):
    """Before: sqlite3 discards what a signal handler raises inside the progress handler (the query stopped with
    'interrupted', a SourceError) and, with no progress handler, SIGTERM waited for the query's end (minutes)."""
    nba = sample_copy(tmp_path, "sports") / "sports" / "nba.sqlite"
    hollow_table(nba, 20_000, 2_000)
    done = subprocess.run([sys.executable, "-c", SIGNAL_CHILD, str(nba)], capture_output=True, text=True,
                          env=CHILD_ENV, timeout=120)
    assert json.loads(done.stdout or "{}") == {"outcome": "KeyboardInterrupt", "progress calls": 3,
                                               "SIGTERM handler restored": True}, done.stderr[-2000:]


MEMORY_CHILD = textwrap.dedent("""
    import os, resource, sys
    from ragloaders.benchmarks.crag_mock_kg import sqlite
    from ragloaders.core.errors import SourceError

    path = sys.argv[1]
    connection = sqlite.open_sqlite(path)
    schema, json_columns = sqlite.sqlite_table_schema(connection, path, "officials")
    pages = int(open("/proc/self/statm").read().split()[0])
    limit = pages * os.sysconf("SC_PAGE_SIZE") + 20_000_000  # the cell needs 40 MB more
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        print(sum(table.num_rows for table in sqlite.iter_sqlite_table(path, "officials", schema, json_columns,
                                                                         connection)), "rows")
    except SourceError as e:
        print("SourceError", e)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_cell_larger_than_the_memory_left_is_a_source_error_naming_the_file(tmp_path):
    """Before: MemoryError out of the reader (SIGABRT, `malloc ... failed`, where the allocation was not sqlite's)."""
    nba = sample_copy(tmp_path, "sports") / "sports" / "nba.sqlite"
    with sqlite3.connect(nba) as db:
        db.execute("INSERT INTO officials VALUES ('big', 1.0, ?)", ("x" * 40_000_000,))
    db.close()
    done = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(nba)], capture_output=True, text=True,
                          env=CHILD_ENV, timeout=120)
    assert done.stdout.strip() == (f"SourceError {nba}: table 'officials': reading the database needs more memory "
                                   "than is available"), (done.returncode, done.stdout, done.stderr[-2000:])


# ---------------------------------------------------------------- SqliteDict pickles: a shared integer


def shared_integer_pickle(number: int, uses: int) -> bytes:
    """{"x": [number] * uses} as a pickle writing `number` once (LONG4) and referring to it again (2-byte BINGET):
    the shape of bigint_pickle.py."""
    data = number.to_bytes((number.bit_length() + 8) // 8, "little", signed=True)
    body = b"\x80\x04}\x8c\x01x](" + b"\x8b" + struct.pack("<i", len(data)) + data + b"\x94" + b"h\x00" * (uses - 1)
    pickled = body + b"es."
    assert pickle.loads(pickled) == {"x": [number] * uses}
    return pickled


def with_info(tmp_path: Path, pickled: bytes) -> Path:
    """The sample's finance_info.sqlite, its first key's value replaced by `pickled`."""
    path = sample_copy(tmp_path, "finance") / "finance" / "finance_info.sqlite"
    with sqlite3.connect(path) as db:
        key = db.execute('SELECT key FROM "unnamed" ORDER BY rowid LIMIT 1').fetchone()[0]
        db.execute('UPDATE "unnamed" SET value = ? WHERE key = ?', (pickled, key))
    db.close()
    return path


def test_a_large_integer_shared_thousands_of_times_is_charged_its_digits_at_each_use(tmp_path):
    """A 3,000-digit integer used 3,000 times: a 7 KB pickle whose `info` is 9 million characters of JSON. Before,
    each use cost 8 units (23 times the budget at 30,000 uses: 90 million characters, 788 MB); now its digits."""
    pickled = shared_integer_pickle(int("9" * 3000), 3000)
    assert len(pickled) < 7_300
    path = with_info(tmp_path, pickled)
    with pytest.raises(SourceError) as caught:
        list(sqlite.iter_sqlitedict(str(path), catalogue.BY_CONFIG["finance_info"]))
    assert_source_error(caught.value, "finance/finance_info.sqlite", "64 units per byte", f"{len(pickled):,} bytes")


@pytest.mark.parametrize("number, uses", [(2**63 - 1, 3000), (-(10**3000), 1)], ids=["int64 shared", "big once"])
def test_shared_int64s_and_a_large_integer_written_once_are_still_read(tmp_path, number, uses):
    path = with_info(tmp_path, shared_integer_pickle(number, uses))
    rows = {row["ticker"]: row for row, _ in sqlite.iter_sqlitedict(str(path), catalogue.BY_CONFIG["finance_info"])}
    assert json.loads(next(iter(rows.values()))["info"]) == {"x": [number] * uses}
