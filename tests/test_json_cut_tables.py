"""core/json_cut_tables.py on an array that is not mmRAG's: the parallel byte-range reader knows no benchmark."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.json as pa_json
import pytest
from ragloaders.core import json_cut_tables
from ragloaders.core.json_array_cuts import NotCut, boundary_pattern, separator_pattern

KEYS = ("name", "size")
PARSING = pa_json.ParseOptions(explicit_schema=pa.schema([("name", pa.string()), ("size", pa.int64())]),
                               unexpected_field_behavior="error", newlines_in_values=True)
ELEMENTS = [{"name": f'n{i},{{"name": x' if i % 7 == 0 else f"n{i}", "size": i} for i in range(500)]


def never_called(*args):
    raise AssertionError(f"unexpected call {args}")


def read(path, range_bytes: int, **callbacks) -> list[dict]:
    ranges = json_cut_tables.array_ranges(str(path), boundary_pattern(KEYS), range_bytes)
    assert ranges is not None
    parse = callbacks.pop("parse", lambda piece: json_cut_tables.parse_piece(piece, separator_pattern(KEYS), PARSING))
    tables = json_cut_tables.read_ranges(str(path), ranges, boundary_pattern(KEYS), parse=parse,
                                           raise_exact_error=callbacks.get("raise_exact_error", never_called),
                                           read_stream=callbacks.get("read_stream", never_called))
    return [row for table in tables for row in table.to_pylist()]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("range_bytes", [64, 1_000, 1 << 20])
def test_every_element_in_order_whatever_the_cuts(tmp_path, indent, range_bytes):
    path = tmp_path / "array.json"
    path.write_text(json.dumps(ELEMENTS, indent=indent))  # names that look like element starts included
    assert read(path, range_bytes) == ELEMENTS


def test_a_refused_piece_goes_to_the_exact_path_with_its_offset(tmp_path):
    path = tmp_path / "array.json"
    text = json.dumps(ELEMENTS)
    path.write_text(text.replace('"size": 250', '"size": "250"'))  # a string where an integer belongs
    offsets = []

    def raise_exact_error(offset, piece):
        offsets.append(offset)
        raise ValueError("exact")

    with pytest.raises(ValueError, match="exact"):
        read(path, 1 << 20, raise_exact_error=raise_exact_error)
    assert len(offsets) == 1 and offsets[0] <= text.index('"size": 250') < offsets[0] + (1 << 22)


def test_what_cannot_be_cut_is_read_on_by_the_stream_reader(tmp_path):
    path = tmp_path / "array.json"
    path.write_text(json.dumps(ELEMENTS))
    streamed = []

    def refuse(piece):
        raise NotCut("ambiguous")

    def read_stream(stream):
        streamed.append(json.loads(stream.read()))
        yield pa.Table.from_pylist(streamed[-1])

    assert read(path, 1 << 20, parse=refuse, raise_exact_error=lambda offset, piece: None,
                read_stream=read_stream) == ELEMENTS
    assert streamed == [ELEMENTS]
