"""CRAG records parsed straight to Arrow (`record_table`) against the line path (`normalize(loads_strict(line))`):
every line the fast path takes gives the line path's row exactly, and every line the line path refuses, or that
only it can read, is left to it. Run in a child process: pyarrow's JSON reader has crashed the process on input
(a buffer beginning with `null`), and a crash must fail this test, not end the run."""

from __future__ import annotations

import bz2
import json
import subprocess
import sys

import pytest
from conftest import DATA

EXAMPLE = DATA / "crag" / "dev_data.jsonl.bz2"

CHILD = r"""
import json, sys
import pyarrow as pa
from ragloaders.benchmarks.crag import builder
from ragloaders.benchmarks.crag.catalogue import RECORDS_SCHEMA
from ragloaders.core.readers.strict_json import loads_strict

taken = left = refused = 0
for line in sys.stdin.buffer.read().split(b"\n\x00\n"):
    try:
        expected = pa.Table.from_pylist([builder.normalize(loads_strict(line))], schema=RECORDS_SCHEMA)
    except ValueError:
        expected = None
    table = builder.record_table(line)
    if table is None:
        left += 1
        refused += expected is None
        continue
    taken += 1
    assert expected is not None, ("the fast path took a line the line path refuses", line[:300])
    assert table.schema.equals(RECORDS_SCHEMA, check_metadata=True), table.schema
    assert table.equals(expected), ("different rows", line[:300], table.to_pylist(), expected.to_pylist())
    assert table.nbytes == expected.nbytes, line[:300]
print(json.dumps({"taken": taken, "left": left, "refused": refused}))
"""


def small(record: dict) -> dict:
    """The record with every page's HTML cut to 300 characters: the same shape, quick to parse many times."""
    record = json.loads(json.dumps(record))
    for page in record["search_results"]:
        page["page_result"] = page["page_result"][:300]
    return record


def variants(record: dict) -> list[bytes]:
    """`record` as JSON, then broken or made odd in the ways a source line can be."""
    line = json.dumps(record, ensure_ascii=False).encode()
    body = line[1:]
    page = json.dumps(record["search_results"][0], ensure_ascii=False).encode()
    with_page = lambda text: line.replace(page, text, 1)  # noqa: E731
    edits = [
        line, json.dumps(record).encode(), json.dumps(record, indent=1).encode().replace(b"\n", b" "),
        b'{"split": 0, ' + body, b'{"interaction_id": "x", ' + body, b'{"extra": 1, ' + body,
        b'{"deep": ' + b"[" * 300 + b"]" * 300 + b", " + body,
        b" " + line, line + b" ", b"\xef\xbb\xbf" + line, line + line, line + b" null", b"null", b"[" + line + b"]",
        line[:-1] + b", }", line[:-1] + b', "x": NaN}', line[: len(line) // 2], b"{}", b'{"split": 1}',
        with_page(page.replace(b'"page_name": ', b'"page_name": "dup", "page_name": ', 1)),
        with_page(page.replace(b'"page_name": ', b'"page_nam\\u0065": ', 1)),
        with_page(page.replace(b'"page_name": ', b'"unknown": 1, "page_name": ', 1)),
        with_page(b"null"), with_page(b"[]"), with_page(b"7"), with_page(page + b", null"),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\\ud800', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\\udc00\\ud800', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\\ud83d\\ude00 \\u0000 \\" \\\\ \\/ ', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\xff', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\xc0\xaf', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\xed\xa0\x80', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\t', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": "\x01', 1)),
        with_page(page.replace(b'"page_result": "', b'"page_result": 5, "x": "', 1)),
    ]
    splits = (b"2", b"-1", b'"1"', b"1.0", b"1e0", b"01", b"-0", b"true", b"null", b"9" * 30, b"-9223372036854775809")
    for split in splits:
        edits.append(line.replace(b'"split": 1', b'"split": ' + split, 1))
    edits.append(line.replace(b'"split": 1, ', b"", 1))
    for field in (b"interaction_id", b"query"):
        edits += [line.replace(b'"' + field + b'": ', b'"' + field + b'": null, "x": ', 1),
                  line.replace(b'"' + field + b'": ', b'"' + field + b'": 5, "x": ', 1)]
    for legacy in (b'"[]"', b'"[\'a\', \\"b\'s\\"]"', b'"not a list"', b'"[1]"', b"null", b"[]"):
        edits.append(line.replace(b'"alternative_answers": ', b'"alternative_answers": ' + legacy + b', "y": ', 1))
    edits += [line.replace(b'"alternative_answers": ', b'"alt_ans": ["a", null], "alternative_answers": ', 1),
              line.replace(b'"alternative_answers": ', b'"alt_ans": ["a"], "alternative_answers": ', 1),
              line.replace(b'"alternative_answers": ', b'"alt_ans": "a", "alternative_answers": ', 1),
              line.replace(b'"search_results": [', b'"search_results": null, "z": [', 1),
              line.replace(b'"search_results": [', b'"search_results": [], "z": [', 1)]
    return edits


@pytest.mark.slow  # (seconds; CI runs it)
def test_records_parsed_straight_to_arrow_are_the_line_paths_rows_or_left_to_it():
    records = [json.loads(line) for line in bz2.decompress(EXAMPLE.read_bytes()).splitlines() if line.strip()]
    assert all("alternative_answers" in record and '"split": 1' in json.dumps(record) for record in records)
    lines = [json.dumps(record).encode() for record in records]  # the real records whole, HTML and all
    for record in records[:5]:
        lines += variants(small(record))
    run = subprocess.run([sys.executable, "-c", CHILD], input=b"\n\x00\n".join(lines), capture_output=True,
                         timeout=300)
    assert run.returncode == 0, (run.returncode, run.stderr.decode(errors="replace")[-3000:])
    counts = json.loads(run.stdout)
    assert counts["taken"] + counts["left"] == len(lines)
    assert counts["taken"] >= 10 + 5 * 6 and counts["refused"] >= 5 * 50, counts  # both paths are really exercised
