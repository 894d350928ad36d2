"""The mock API's on-disk cache (mock_api/cache_files.py): a converted table or an index that a crash, a full disk or
an edit left wrong is found by its size and checksum before it is mapped, converted again with one warning naming
it, and answers correctly; the fingerprint of the build sees a file replaced in place; two servers starting on one
cache at once both answer right."""

from __future__ import annotations

import json
import logging
import os
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import assert_source_error
from mock_kg_generated import write_cragkg
from ragloaders import CragMockAPI
from ragloaders.mock_api.cache_files import CHECK_SUFFIX, FOLDER_CHECK, file_problem, folder_files
from ragloaders.mock_api.tables import fingerprint
from ragloaders.publish.build import build_folder

ROOT = Path(__file__).resolve().parents[1]
APPLE = "Apple Inc. Common Stock"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mock_api_cache")
    write_cragkg(root / "cragkg")
    build_folder("crag/mock_kg", str(root / "kg"), data_dir=str(root / "cragkg"), cache_dir=str(root / "cache"))
    return root / "kg"


def cached(cache: Path, name: str) -> Path:
    found = list(cache.glob(f"mock_api/*/{name}"))
    assert len(found) == 1, found
    return found[0]


def first_start(built: Path, cache: Path) -> dict:
    """A server's first start on an empty cache: what it answers (the finance tables converted, their indexes
    built)."""
    api = CragMockAPI(str(built), cache_dir=str(cache))
    return {"ticker": api.finance_get_ticker_by_name(APPLE), "cap": api.finance_get_market_capitalization("AAPL")}


def answers_again(built: Path, cache: Path) -> dict:
    api = CragMockAPI(str(built), cache_dir=str(cache))
    return {"ticker": api.finance_get_ticker_by_name(APPLE), "cap": api.finance_get_market_capitalization("AAPL")}


def rebuilt_warnings(caplog, path: Path) -> list[str]:
    records = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert all(r.name.startswith("ragloaders") for r in records)
    messages = [r.getMessage() for r in records]
    assert all("\n" not in m for m in messages)
    return [m for m in messages if m.startswith(f"{path}: ") and "building it again" in m]


def test_a_truncated_cached_table_is_converted_again_with_one_warning(built, tmp_path, caplog):
    expected = first_start(built, tmp_path)
    assert expected["ticker"] == {"result": "AAPL"}
    table = cached(tmp_path, "finance_company.arrow")
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])  # a crash or a full disk after the rename
    caplog.set_level(logging.WARNING)
    assert answers_again(built, tmp_path) == expected
    lines = rebuilt_warnings(caplog, table)
    assert len(lines) == 1 and "bytes where" in lines[0], caplog.text
    assert file_problem(str(table)) is None  # whole again, and checked


def test_a_table_whose_string_offsets_were_edited_is_converted_again(built, tmp_path, caplog):
    expected = first_start(built, tmp_path)
    table = cached(tmp_path, "finance_company.arrow")
    source = pa.memory_map(str(table))
    whole = source.read_buffer()
    source.seek(0)
    names = pa.ipc.open_file(source).read_all().column("Name")
    chunk = next(c for c in names.chunks if APPLE in c.to_pylist())
    row = chunk.to_pylist().index(APPLE)
    at = chunk.buffers()[1].address - whole.address + 4 * (chunk.offset + row + 1)  # where the name's end is kept
    data = bytearray(table.read_bytes())
    (end,) = struct.unpack_from("<i", data, at)
    struct.pack_into("<i", data, at, end - 3)  # still inside the file and the data buffer: read, the name is cut
    del names, chunk, source, whole
    table.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING)
    assert answers_again(built, tmp_path) == expected
    lines = rebuilt_warnings(caplog, table)
    assert len(lines) == 1 and "checksum" in lines[0], caplog.text


def test_a_table_without_its_check_is_converted_again(built, tmp_path, caplog):
    expected = first_start(built, tmp_path)
    table = cached(tmp_path, "finance_company.arrow")
    Path(str(table) + CHECK_SUFFIX).unlink()  # the crash came between the table's rename and its check
    caplog.set_level(logging.WARNING)
    assert answers_again(built, tmp_path) == expected
    lines = rebuilt_warnings(caplog, table)
    assert len(lines) == 1 and "no check" in lines[0], caplog.text
    assert file_problem(str(table)) is None


@pytest.mark.parametrize("damage", ["truncate", "drop check", "drop file"])
def test_a_damaged_index_is_built_again_with_one_warning(damage, built, tmp_path, caplog):
    expected = first_start(built, tmp_path)
    entries = [p for p in tmp_path.glob("mock_api/*/indexes/*") if p.is_dir() and (p / FOLDER_CHECK).exists()]
    assert entries
    entry = entries[0]
    member = next(p for p in sorted(entry.iterdir()) if p.name != FOLDER_CHECK)
    if damage == "truncate":
        member.write_bytes(member.read_bytes()[: member.stat().st_size // 2])
    elif damage == "drop check":
        (entry / FOLDER_CHECK).unlink()
    else:
        member.unlink()
    caplog.set_level(logging.WARNING)
    assert answers_again(built, tmp_path) == expected
    lines = rebuilt_warnings(caplog, entry)
    assert len(lines) == 1, caplog.text
    assert folder_files(str(entry))[0] is not None


def test_a_check_that_is_not_ours_is_no_check(built, tmp_path):
    first_start(built, tmp_path)
    table = cached(tmp_path, "finance_company.arrow")
    check = Path(str(table) + CHECK_SUFFIX)
    good = json.loads(check.read_text())
    for bad in ("[]", "{", json.dumps({**good, "size": "1"}), json.dumps({**good, "format": "x"}), " " * 5000):
        check.write_text(bad)
        assert "not one ragloaders wrote" in file_problem(str(table))
    check.write_text(json.dumps(good))
    assert file_problem(str(table)) is None


def test_the_fingerprint_sees_a_file_replaced_with_the_same_size_and_mtime(built, tmp_path):
    import shutil

    folder = tmp_path / "kg"
    shutil.copytree(built, folder)
    before = fingerprint(str(folder))
    path = next((folder / "finance_company").glob("*.parquet"))
    stat = path.stat()
    replacement = path.with_suffix(".new")
    replacement.write_bytes(path.read_bytes())
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, path)  # same path, size and mtime; another inode (and ctime)
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert fingerprint(str(folder)) != before


SERVER = r"""
import json, sys
sys.path[:0] = [sys.argv[3]]
from ragloaders import CragMockAPI
api = CragMockAPI(sys.argv[1], cache_dir=sys.argv[2])
print(json.dumps({"ticker": api.finance_get_ticker_by_name("Apple Inc. Common Stock"),
                  "cap": api.finance_get_market_capitalization("AAPL"),
                  "open": api.open_get_entity("nothing"), "year": api.movie_get_year_info("2000")}))
"""


@pytest.mark.slow
def test_two_servers_starting_at_once_on_one_cache_both_answer_right(built, tmp_path):
    api = CragMockAPI(str(built), cache_dir=str(tmp_path / "alone"))
    expected = {"ticker": api.finance_get_ticker_by_name(APPLE), "cap": api.finance_get_market_capitalization("AAPL"),
                "open": api.open_get_entity("nothing"), "year": api.movie_get_year_info("2000")}
    for attempt in range(2):  # each on an empty cache: both convert and index at once
        shared = tmp_path / f"shared-{attempt}"
        servers = [subprocess.Popen([sys.executable, "-c", SERVER, str(built), str(shared), str(ROOT / "loaders")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [server.communicate(timeout=300) for server in servers]
        for server, (out, err) in zip(servers, outputs):
            assert server.returncode == 0, err[-2000:]
            assert json.loads(out) == json.loads(json.dumps(expected))
            assert "building it again" not in err, err  # neither saw the other's file half written
        assert not [p for p in shared.rglob("*") if p.name.endswith((".partial", ".stale"))]
        tables = list(shared.glob("mock_api/*/*.arrow"))
        assert len(tables) >= 4 and all(file_problem(str(table)) is None for table in tables)


def test_a_build_whose_strings_are_not_utf8_is_refused_on_conversion_naming_the_config(built, tmp_path):
    import shutil

    import pyarrow.parquet as pq
    from ragloaders import SourceError

    folder = tmp_path / "kg"
    shutil.copytree(built, folder)
    path = next((folder / "finance_company").glob("*.parquet"))
    table = pq.read_table(path)
    names = table.column("Name").to_pylist()
    raw = pa.array([b"\xff\xfe" if i == 0 else name.encode() for i, name in enumerate(names)], pa.binary())
    pq.write_table(table.set_column(table.schema.get_field_index("Name"), "Name", raw.view(pa.string())), path)
    api = CragMockAPI(str(folder), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(SourceError) as caught:
        api.finance_get_ticker_by_name(APPLE)
    assert_source_error(caught.value, "kg/finance_company", "config finance_company", "Arrow", "UTF8")
    assert not list((tmp_path / "cache").glob("mock_api/*/finance_company.arrow*[!k]"))  # nor kept (but its lock)


def _swap(first: Path, second: Path) -> None:
    between = first.with_name(first.name + ".between")
    first.rename(between)
    second.rename(first)
    between.rename(second)


def test_two_cached_tables_or_indexes_swapped_with_their_checks_are_built_again(built, tmp_path, caplog):
    """Each file's check recorded its size and checksum only: two tables swapped together with their checks were
    mapped under each other's names (one config answered from another's rows, or a KeyError), two index entries
    alike (an IndexError, or [] for every search)."""
    def calls() -> dict:
        api = CragMockAPI(str(built), cache_dir=str(tmp_path))
        return {**answers_again(built, tmp_path), "prices": api.finance_get_price_history("AAPL")}

    expected = calls()
    assert expected["prices"]["result"]
    tables = sorted(tmp_path.glob("mock_api/*/*.arrow"))
    entries = sorted(p for p in tmp_path.glob("mock_api/*/indexes/*") if p.is_dir() and (p / FOLDER_CHECK).exists())
    assert len(tables) >= 2 and len(entries) >= 2, (tables, entries)
    _swap(tables[0], tables[1])
    _swap(Path(f"{tables[0]}{CHECK_SUFFIX}"), Path(f"{tables[1]}{CHECK_SUFFIX}"))
    _swap(entries[0], entries[1])
    assert "written for another file" in file_problem(str(tables[0]))
    assert "written for another folder" in folder_files(str(entries[0]))[1]
    caplog.set_level(logging.WARNING)
    assert calls() == expected
    said = {line for path in (*tables[:2], *entries[:2]) for line in rebuilt_warnings(caplog, path)}
    assert len(said) == 4 and all("another" in line for line in said), caplog.text
    assert file_problem(str(tables[0])) is None and folder_files(str(entries[0]))[0] is not None


def test_what_a_killed_conversion_left_is_removed_and_a_symlinked_lock_is_no_error(built, tmp_path, tmp_path_factory):
    """A conversion killed half way left `<file>.<pid>.<thread>.partial` (and an index `<entry>.<pid>.partial`
    folder) for good; a symlink put at a lock's name made every call an OSError (ELOOP)."""
    expected = first_start(built, tmp_path)
    table = cached(tmp_path, "finance_company.arrow")
    left = [Path(f"{table}.4242.99.partial"), Path(f"{table}.sum.4242.partial")]
    for path in left:
        path.write_bytes(b"half")
    entry = next(p for p in tmp_path.glob("mock_api/*/indexes/*") if p.is_dir())
    folder_left = Path(f"{entry}.4242.partial")
    folder_left.mkdir()
    (folder_left / "order.npy").write_bytes(b"half")
    other = Path(f"{table}.x.4242.partial")  # not a name this file's conversion writes: left alone
    other.write_bytes(b"someone else's")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "a-file"
    elsewhere.write_bytes(b"kept")
    lock = Path(f"{table}.lock")
    lock.unlink()
    lock.symlink_to(elsewhere)
    table.unlink()  # converted again, under its lock
    assert answers_again(built, tmp_path) == expected
    assert not any(path.exists() for path in (*left, folder_left)) and other.exists()
    assert elsewhere.read_bytes() == b"kept" and lock.is_file() and not lock.is_symlink()
