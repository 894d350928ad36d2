"""`ragloaders serve crag/mock_kg` against hostile clients: a body sent a byte at a time, a name search of one word
repeated a hundred thousand times, a list of a hundred thousand wrong ids, one game id repeated ten thousand times,
and NaN or an infinite number in a body; each once held the server (or every other client) for seconds or minutes,
grew its memory by hundreds of MB, or logged a traceback per request."""

from __future__ import annotations

import json
import random
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from ragloaders import CragMockAPI

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from ragloaders.mock_api import http  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "crag_mock_api"
PLAYS = "/sports/nba/get_play_by_play_data_by_game_ids"


@pytest.fixture(scope="module")
def api(mock_kg_build, tmp_path_factory) -> CragMockAPI:
    """The in-process API on the session's generated KG build (mock_kg_build)."""
    return CragMockAPI(str(mock_kg_build.out), cache_dir=str(tmp_path_factory.mktemp("hostile-http-cache")))


@pytest.fixture
def served(api, monkeypatch) -> Iterator[int]:
    """`ragloaders serve`'s server (http.bounded_server: uvicorn, BodyLimit, bounded_protocol) on a thread, with
    REQUEST_SECONDS at 0.5 s; yields its port."""
    monkeypatch.setattr(http, "REQUEST_SECONDS", 0.5)
    listening = http.bound_socket("127.0.0.1", 0)
    server = http.bounded_server(api.kg)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive()
            time.sleep(0.01)
        yield listening.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        listening.close()


def _response(connection: socket.socket) -> bytes:
    """One whole HTTP response read from `connection` (its head, then as many bytes as its content-length)."""
    connection.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536) or b"<closed>"
        assert not data.endswith(b"<closed>"), data
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += connection.recv(65536) or b"<closed>"
        assert not body.endswith(b"<closed>"), body
    return data[:len(head) + 4] + body


def test_a_body_sent_a_byte_at_a_time_is_answered_408_and_closed(served):
    """Each byte came before the body's timeout, which was counted per read: 256 such clients held every
    connection for as long as they went on (everyone else got 503). The whole body now has REQUEST_SECONDS."""
    trickler = socket.create_connection(("127.0.0.1", served))
    with trickler:
        trickler.sendall(b"POST /finance/get_ticker_by_name HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         b"content-length: 100000\r\n\r\n")
        answer = b""
        for _ in range(60):  # a byte every 0.1 s for up to 6 s: 12 times the deadline
            if select.select([trickler], [], [], 0.1)[0]:
                answer = trickler.recv(1000)
                break
            trickler.sendall(b" ")
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        trickler.settimeout(5)
        while chunk := trickler.recv(1000):  # and the connection is closed
            answer += chunk
        assert answer.endswith(b'{"detail": "the request body did not all come within 0.5 s"}'), answer
    with socket.create_connection(("127.0.0.1", served)) as fresh:  # a fresh client is answered
        fresh.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert _response(fresh).startswith(b"HTTP/1.1 200 ")


def test_a_whole_body_within_the_deadline_is_answered(served):
    with socket.create_connection(("127.0.0.1", served)) as client:
        body = json.dumps({"query": "Apple Inc. Common Stock"}).encode()
        client.sendall(b"POST /finance/get_ticker_by_name HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                       b"content-length: %d\r\n\r\n" % len(body))
        for byte in range(len(body)):  # in pieces, each well within the deadline, the whole too
            client.sendall(body[byte:byte + 1])
        answer = _response(client)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"result":"AAPL"}'), answer


def _counted(monkeypatch, cls: type, name: str) -> list[int]:
    """Counts the calls of method `name` of `cls` (one list item per call)."""
    calls: list[int] = []
    method = getattr(cls, name)

    def counting(self, *args, **kwargs):
        calls.append(1)
        return method(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counting)
    return calls


def test_a_word_repeated_in_a_name_search_is_looked_up_once_and_answers_as_rank_bm25(api, monkeypatch):
    """`"inc " * 262,000` (1 MiB) took a minute on a KG of 20,000 companies: one lookup and one pass over the
    postings per occurrence. Each distinct term is now looked up and scored once; the scores stay rank_bm25's
    bit for bit (floating-point sums depend on their order, so k occurrences are still k additions)."""
    from ragloaders.mock_api.search import OkapiIndex, Postings
    from rank_bm25 import BM25Okapi

    finance = api.kg.domain("finance")
    lookups, passes = _counted(monkeypatch, Postings, "term_id"), _counted(monkeypatch, Postings, "of")
    query = "inc " * 20_000 + "common " + "inc stock " * 5_000
    top = finance.index.top(query)
    assert len(lookups) <= 3 and len(passes) == 3  # inc, common, stock
    official = BM25Okapi([name.split() for name in finance.normalised])
    expected = official.get_scores(query.split())
    assert finance.index.scores(query.split()).tobytes() == expected.tobytes()
    assert top == [int(i) for i in np.argsort(expected)[::-1][:10] if expected[i] != 0] and top
    assert api.finance_get_company_name(query)["result"]  # and over the API
    # a corpus of varied lengths, queries of a few words repeated and interleaved: the same scores, bit for bit
    rng = random.Random(7)
    words = [f"w{i}" for i in range(12)]
    corpus = [[rng.choice(words) for _ in range(rng.randint(1, 9))] for _ in range(400)]
    ours, official = OkapiIndex(corpus), BM25Okapi(corpus)
    for _ in range(20):
        pool = rng.sample(words, 3) + ["absent"]
        query = [rng.choice(pool) for _ in range(rng.randint(50, 600))]
        assert ours.scores(query).tobytes() == official.get_scores(query).tobytes()


def test_a_word_repeated_in_a_music_search_ranks_as_the_official_music_bm25(monkeypatch):
    import importlib.util

    from ragloaders.mock_api.search import CutoffIndex, Postings

    if not (REFERENCE / "cragapi" / "fast_bm25.py").is_file():
        pytest.skip(f"the official mock API is not at {REFERENCE}")
    spec = importlib.util.spec_from_file_location("crag_reference_fast_bm25", REFERENCE / "cragapi" / "fast_bm25.py")
    fast_bm25 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fast_bm25)
    rng = random.Random(3)
    corpus = [[f"n{i % 90}", rng.choice(("band", "the", f"x{i % 40}")), *[f"y{i % 7}"] * rng.randint(0, 2)]
              for i in range(300)]
    official, ours = fast_bm25.BM25(corpus), CutoffIndex(corpus)
    passes = _counted(monkeypatch, Postings, "of")
    for _ in range(20):
        pool = [f"n{rng.randrange(100)}", f"x{rng.randrange(45)}", f"y{rng.randrange(8)}", "band", "absent"]
        query = [rng.choice(pool[:rng.randint(1, 5)]) for _ in range(rng.randint(50, 600))]
        passes.clear()
        assert ours.top(" ".join(query)) == official.get_top_n(query, list(range(len(corpus))), n=10)
        assert len(passes) <= len(set(query))


def test_many_distinct_words_are_looked_up_as_one_at_a_time_finds_them():
    """A 1 MiB query of 200,000 distinct words cost a binary search each (seconds): past a 50th of the vocabulary
    they are looked up together."""
    from ragloaders.mock_api.search import OkapiIndex

    index = OkapiIndex([[f"w{i}", f"v{i % 7}"] for i in range(300)])
    words = [f"w{i}" for i in range(0, 400, 3)] + ["v3", "absent", "\ud800", "", "w1"]
    assert len(words) * 50 > len(index.postings.terms.values)  # together
    found = index.postings.term_ids(words)
    assert found == [index.postings.term_id(word) for word in words]
    assert found[-3:] == [None, None, index.postings.term_id("w1")] and found[0] is not None
    assert index.postings.term_ids(["w1", "absent"]) == [index.postings.term_id("w1"), None]  # one at a time


def _plain_errors(body: dict) -> list[dict]:
    """FastAPI's errors for the body of the play-by-play endpoint, as the official server (`game_ids: List[str]`)
    makes them."""
    from pydantic import ValidationError, create_model

    try:
        create_model("Official", game_ids=(list[str], ...)).model_validate(body)
    except ValidationError as e:
        return [{**error, "loc": ["body", *error["loc"]]} for error in e.errors(include_url=False)]
    return []


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_list_of_many_wrong_ids_gets_the_first_errors_and_how_many_more(api):
    """`{"game_ids": [[]] * 260_000}` (1 MiB) was answered with all 260,000 errors: 27 MB, 7 s, 300 MB more memory
    (pydantic made every error, FastAPI copied them). The list is now validated 100 items at a time and only the
    first 100 errors are made; they are the official server's first 100, then one says how many more there were."""
    from pydantic import ValidationError
    from ragloaders.mock_api.endpoints import BY_PATH
    from ragloaders.mock_api.validation import MAX_ERRORS, body_model

    body = {"game_ids": ["0022200001", [], 3, *[[]] * 100_000, "x"]}
    with pytest.raises(ValidationError) as raised:
        body_model(BY_PATH[PLAYS]).model_validate(body)
    assert raised.value.error_count() == MAX_ERRORS + 1  # made, not only shown
    response = TestClient(http.create_app(api.kg)).post(PLAYS, json=body)
    assert response.status_code == 422 and len(response.content) < 20_000
    detail = response.json()["detail"]
    expected = json.loads(json.dumps(_plain_errors(body)[:MAX_ERRORS]))
    assert detail[:MAX_ERRORS] == expected and detail[1]["loc"] == ["body", "game_ids", 2]
    assert detail[MAX_ERRORS:] == [{"type": "too_many_errors", "loc": ["body", "game_ids"],
                                    "msg": "99,902 more errors not shown (the first 100 are)", "input": None}]
    in_process = api.call("sports_nba_get_play_by_play_data_by_game_ids", body)
    assert json.dumps(in_process, ensure_ascii=False, separators=(",", ":")) == response.text
    # a long list with few errors: exactly the official errors; a long valid list: answered
    few = {"game_ids": ["0022200001"] * 150 + [7] + ["x"] * 150 + [None]}
    assert api.call("sports_nba_get_play_by_play_data_by_game_ids", few)["detail"] == _plain_errors(few)
    assert "result" in api.call("sports_nba_get_play_by_play_data_by_game_ids", {"game_ids": ["x"] * 1000})


def test_one_game_id_repeated_is_gathered_once(api, monkeypatch):
    """One id given 10,000 times gathered its plays 10,000 times before keeping each once (memory as ids x plays);
    SQL's `IN` matches each row once, and so does the answer."""
    from ragloaders.mock_api.indexes import KeyIndex

    sports = api.kg.domain("sports")
    game = sports.plays.column("game_id")[0].as_py()
    once = api.sports_nba_get_play_by_play_data_by_game_ids([game])["result"]
    assert once and len(next(iter(once.values()))) > 1
    lookups = _counted(monkeypatch, KeyIndex, "rows")
    assert api.sports_nba_get_play_by_play_data_by_game_ids([game] * 10_000 + ["absent"])["result"] == once
    assert len(lookups) == 2


@pytest.mark.parametrize("text, shown", [
    ('{"query":NaN}', None), ('{"query":1e999999}', None), ('{"query":-Infinity}', None),
    ('{"query":[NaN,1,{"a":Infinity,"b":[1e999999]}]}', [None, 1, {"a": None, "b": [None]}]),
    ('{"query":[1.5,"x"]}', [1.5, "x"]),
])
def test_nan_or_an_infinite_number_in_a_body_is_a_422_as_in_process(api, caplog, text, shown):
    """Python's JSON parser reads NaN, Infinity and 1e999999 (as infinity); a 422 echoing one could not be written
    as JSON: a 500 and a traceback of 75 lines in the log per request. It is a 422 whose input shows null, over
    HTTP and in process alike."""
    client = TestClient(http.create_app(api.kg), raise_server_exceptions=False)
    response = client.post("/finance/get_ticker_by_name", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json() == {"detail": [{"type": "string_type", "loc": ["body", "query"],
                                           "msg": "Input should be a valid string", "input": shown}]}
    in_process = api.call("finance_get_ticker_by_name", json.loads(text))
    assert json.dumps(in_process, ensure_ascii=False, separators=(",", ":"), allow_nan=False) == response.text
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


def test_nan_in_a_body_sent_to_the_server_logs_no_traceback(served, capfd):
    body = b'{"query":NaN}'
    with socket.create_connection(("127.0.0.1", served)) as client:
        for _ in range(3):
            client.sendall(b"POST /finance/get_ticker_by_name HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
                           b"\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            answer = _response(client)
            assert answer.startswith(b"HTTP/1.1 422 ") and answer.endswith(b'"input":null}]}'), answer
    assert capfd.readouterr().err == ""
