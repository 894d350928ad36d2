"""The mock API cache's checks tried as an attacker would: a check file (`<table>.sum`, an index folder's `.sum`)
replaced by a FIFO is no check (the file is converted again); it is never opened blocking, waiting for a writer."""

from __future__ import annotations

import os
import signal

import pytest
from ragloaders import CragMockAPI
from ragloaders.mock_api.cache_files import CHECK_SUFFIX, FOLDER_CHECK, file_problem, folder_files

APPLE = "Apple Inc. Common Stock"


class Waited(Exception):
    """The start blocked on the FIFO."""


def answers(folder: str, cache: str) -> dict:
    api = CragMockAPI(folder, cache_dir=cache)
    return {"ticker": api.finance_get_ticker_by_name(APPLE), "cap": api.finance_get_market_capitalization("AAPL")}


@pytest.mark.parametrize("check", ["table", "index folder"])
def test_a_check_replaced_by_a_fifo_is_no_check_and_never_waited_on(check, mock_kg_build, tmp_path):
    folder, cache = str(mock_kg_build.out), str(tmp_path)
    expected = answers(folder, cache)
    if check == "table":
        table = next(tmp_path.glob("mock_api/*/finance_company.arrow"))
        fifo = str(table) + CHECK_SUFFIX
    else:
        entry = next(p for p in tmp_path.glob("mock_api/*/indexes/*") if (p / FOLDER_CHECK).exists())
        fifo = str(entry / FOLDER_CHECK)
    os.unlink(fifo)
    os.mkfifo(fifo)

    def waited(signum, frame):
        raise Waited  # not an OSError, which the checks' own error handling would take for a missing check

    before = signal.signal(signal.SIGALRM, waited)
    signal.alarm(10)
    try:
        again = answers(folder, cache)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert again == expected and expected["ticker"] == {"result": "AAPL"}
    assert os.path.isfile(fifo)  # the check written again
    assert (file_problem(str(table)) if check == "table" else folder_files(str(entry))[1]) in (None, "")


@pytest.mark.parametrize("check", ["table", "index folder"])
def test_a_check_nested_deeper_than_json_can_read_is_no_check_not_a_recursion_error(check, tmp_path):
    table = tmp_path / "finance_company.arrow"
    table.write_bytes(b"x")
    (tmp_path / "index").mkdir()
    target = tmp_path / ("finance_company.arrow" + CHECK_SUFFIX if check == "table" else f"index/{FOLDER_CHECK}")
    target.write_bytes(b"[" * 4000)  # within the checks' size limits
    if check == "table":
        assert "is not one ragloaders wrote" in file_problem(str(table))
    else:
        assert folder_files(str(tmp_path / "index")) == (None, "its check is not one ragloaders wrote")
