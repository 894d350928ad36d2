"""CRAG's mock API (tasks 2 and 3) answered from a `crag/mock_kg` build: in process (`CragMockAPI`) or over HTTP
(`ragloaders serve crag/mock_kg`, module http), with no pickles and none of the official server's code.

The official server (`mock_api/server.py` of facebookresearch/CRAG, commit ad15188) is the specification; the tests
run it on generated files and compare every endpoint's JSON with ours (tests/test_mock_api_parity.py). Ours gives
the same answer to every call the official server answers, except where the build's tables do not keep what the
answer shows:

- an open-KG entity (`open_*`): the table does not keep whether a null field was absent or null; ours leaves null
  fields out. (Movie, person and year records, `movie_get_*`, market caps and dividend histories are answered from
  each value's JSON text, `record_json`: the same keys in the same order, nulls, and integers vs floats as the
  official server's: a market cap of 7 is 7, not 7.0.)
- a movie file holding NaN, Infinity or a number out of a float's range, which Python's `json.load` reads, or a
  record whose field does not fit the typed column the build also writes (a float `budget` or `id`, a key inside a
  cast, crew, genre or Oscar entry that the catalogue does not declare): the official server starts (and fails,
  500, on a call whose answer holds a NaN); the build refuses the file, naming the member and the field.
- `music_get_members` is `list(set(members))` in both, an order set by the string hash seed; the build keeps a set
  of members sorted, so the order can differ from the official server's even with the same PYTHONHASHSEED
  (`MusicDomain.get_members` says exactly when).
- Where a string column of a DataFrame or of nba.sqlite mixed types, the build wrote it as JSON text; it is read
  back as JSON when every value parses as JSON of two kinds or more (a text column of only numbers and
  true/false would be misread so).
- Name searches rank equal BM25 scores as numpy's argsort does, which differs between CPUs (AVX-512 or not): ours
  and the official server agree on one machine.

Where the official server fails (HTTP 500, or it does not start), ours answers:

- a NaN anywhere in a response (market cap, `finance_get_info`, a Grammy nominee, an artist's end date) is a 500
  there; here NaN is null (the build stores it so);
- `movie_get_person_info` / `movie_get_movie_info` fail there when a key in the top 10 holds a tab, a line
  separator or a double space (the key re-joined by single spaces is not found); here the key's own record;
- `movie_get_year_info` outside 1990-2021 or not a number: a 500 there, `{"result": null}` here;
- a chart row too short for `get_billboard_attributes`: null here; a billboard entry without `Song` / `Artist`:
  null in its place;
- music searches need some name term with idf > 4 (about 80 distinct names) or the server does not start; here
  such a search answers [];
- a company name or ticker pandas would read as NaN (`NA`, `null`, ...) breaks the server (startup or a 500);
  here the CSV's text is used as it is;
- a `'` in an NBA date, team or game id breaks the server's SQL (null), and a crafted one runs other SQL there; here
  any `'` answers null and nothing is run.

Over HTTP (`serve`, module http), bounds the official server does not set: a body over 1 MiB is answered 413, at most
256 connections are held, one whose request line and headers have not come within 10 s is closed, one whose body has
not all come 10 s after them is answered 408, and a shutdown waits 3 s for the calls under way. Its 422 bodies are
FastAPI's and pydantic's of the versions installed (except that a list gets at most 100 errors, then a
`too_many_errors` one, and a NaN or infinite input is null, where the official server answers 500): the official
requirements' pins (fastapi 0.103, pydantic 2.5) add a `url` to each error and refuse an integer written `" 1 "`, which
newer pydantic takes; the parity tests run the official server under the installed versions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import CragMockAPI

__all__ = ["CragMockAPI"]


def __getattr__(name: str) -> Any:
    """`CragMockAPI`, imported when first used: its tables import pyarrow and `datasets`, which the command line's
    set-up (it imports `mock_api.command`) does without."""
    if name != "CragMockAPI":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .client import CragMockAPI as found

    globals()[name] = found
    return found
