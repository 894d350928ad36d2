"""The mock API converts each config and builds each domain on first use: opening a build reads only the Parquet
footers, a call converts only the tables it reads, and a row group that cannot be read is a clear SourceError on
the first call that needs it (the answers themselves are compared with the official server's in
test_mock_api_parity.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import assert_source_error
from ragloaders import CragMockAPI, SourceError


@pytest.fixture(scope="module")
def built(mock_kg_build) -> Path:
    """The session's build of the generated cragkg files (read only: a test that changes it copies it)."""
    return mock_kg_build.out


def converted(cache: Path) -> set[str]:
    """The configs converted into the cache (the indexes are kept in a folder beside them)."""
    return {path.stem for path in cache.glob("mock_api/*/*.arrow")}


def test_opening_converts_nothing_and_a_call_only_what_it_reads(built, tmp_path):
    api = CragMockAPI(str(built), cache_dir=str(tmp_path))
    assert converted(tmp_path) == set()
    assert api.finance_get_ticker_by_name("Apple Inc. Common Stock") == {"result": "AAPL"}
    assert converted(tmp_path) == {"finance_company"}
    api.finance_get_market_capitalization("AAPL")
    assert converted(tmp_path) == {"finance_company", "finance_marketcap"}
    assert api.open_get_entity("nothing") == {"result": None}
    assert converted(tmp_path) == {"finance_company", "finance_marketcap", "open_entities"}
    again = CragMockAPI(str(built), cache_dir=str(tmp_path))  # a later start reuses what the first converted
    assert again.open_get_entity("nothing") == {"result": None}


def test_an_unreadable_row_group_is_one_clear_error_on_first_use(built, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(built, folder)
    path = next((folder / "movie_years").glob("*.parquet"))
    footer_start = path.stat().st_size - 8 - int.from_bytes(path.read_bytes()[-8:-4], "little")
    data = bytearray(path.read_bytes())
    data[4:footer_start] = b"\xff" * (footer_start - 4)  # the pages, not the footer
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).num_row_groups == 1
    api = CragMockAPI(str(folder), cache_dir=str(tmp_path / "cache"))
    assert api.finance_get_ticker_by_name("Apple Inc. Common Stock") == {"result": "AAPL"}
    with pytest.raises(SourceError) as raised:
        api.movie_get_year_info("2000")
    assert str(path) in str(raised.value)
    assert_source_error(raised.value, f"movie_years/{path.name}", "config movie_years", "row group 0")


def test_pydantic_is_imported_on_the_first_call_not_on_import_or_open(built, tmp_path):
    script = (
        "import sys\n"
        "import ragloaders\n"
        "loaded = ['pydantic' in sys.modules]\n"
        "api = ragloaders.CragMockAPI(sys.argv[1], cache_dir=sys.argv[2])\n"
        "loaded.append('pydantic' in sys.modules)\n"
        "answer = api.movie_get_movie_info_by_id('not a number')\n"
        "loaded.append('pydantic' in sys.modules)\n"
        "print(loaded, answer['detail'][0]['type'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(built), str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[False,", "False,", "True]", "int_parsing"]
