"""The mock API's sources and bad input: a built folder, a hub repository (a fake hub, no network), a cragkg
folder built into the cache; a folder that is not a build, a missing config or column, a port in use, Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import assert_names, assert_source_error
from local_http import served, wait_for_port
from ragloaders import CragMockAPI, SourceError
from ragloaders.cli import main as cli_main
from ragloaders.mock_api import client as client_module
from ragloaders.mock_api.tables import REQUIRED_COLUMNS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def kg(mock_kg_build) -> Path:
    """The session's generated cragkg folder (read only)."""
    return mock_kg_build.kg


@pytest.fixture(scope="module")
def built(mock_kg_build) -> Path:
    """The session's build of it (read only: copy_of for a test that changes it)."""
    return mock_kg_build.out


def copy_of(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(built, target)
    return target


def link_out(file: Path) -> None:
    """`file` moved out of its build folder and linked back in: a data file that is not the folder's own."""
    outside = file.parents[2] / "outside.parquet"
    file.rename(outside)
    file.symlink_to(outside)


def test_a_built_folder_answers(built, tmp_path):
    api = CragMockAPI(str(built), cache_dir=str(tmp_path))
    assert api.finance_get_ticker_by_name("Apple Inc. Common Stock") == {"result": "AAPL"}
    assert api.open_get_entity("nothing")["result"] is None
    assert api.music_get_billboard_rank_date(1, "2024-02-28") == {"result": [["Song 1"], ["Beyonce"]]}
    assert api.movie_get_movie_info_by_id("x")["detail"][0]["loc"] == ["body", "query"]


def test_a_cragkg_folder_is_built_into_the_cache_once(kg, tmp_path, monkeypatch):
    first = CragMockAPI(data_dir=str(kg), cache_dir=str(tmp_path))
    assert first.finance_get_price_history("META")["result"]
    import ragloaders.publish.build as build

    def no_second_build(*args, **kwargs):
        raise AssertionError("built again from unchanged files")

    monkeypatch.setattr(build, "build_folder", no_second_build)
    second = CragMockAPI(data_dir=str(kg), cache_dir=str(tmp_path))
    assert second.finance_get_price_history("META") == first.finance_get_price_history("META")


def test_source_and_data_dir_are_exclusive(kg, built):
    with pytest.raises(ValueError) as caught:
        CragMockAPI(str(built), data_dir=str(kg))
    assert_names(caught.value, "crag/mock_kg build", "data_dir")
    with pytest.raises(ValueError) as caught:
        CragMockAPI()
    assert_names(caught.value, "crag/mock_kg build", "data_dir")


@pytest.mark.parametrize("make, file, facts", [
    (lambda folder: (folder / "README.md").write_text("# my notes\n"), "copy", ["crag/mock_kg", "README.md"]),
    (lambda folder: shutil.rmtree(folder / "music_grammy"), "copy", ["music_grammy"]),
    (lambda folder: pq.write_table(pq.read_table(folder / "finance_info").drop_columns(["info"]),
                                   next((folder / "finance_info").glob("*.parquet"))),
     "copy/finance_info", ["'info'", ", ".join(REQUIRED_COLUMNS["finance_info"])]),
    (lambda folder: pq.write_table(pq.read_table(folder / "movie_persons").drop_columns(["record_json"]),
                                   next((folder / "movie_persons").glob("*.parquet"))),
     "copy/movie_persons", ["'record_json'", ", ".join(REQUIRED_COLUMNS["movie_persons"]), "build it again"]),
    (lambda folder: next((folder / "movie_years").glob("*.parquet")).write_bytes(b"PAR1 not parquet"),
     "movie_years/train-00000-of-00001.parquet", ["Parquet"]),
    (lambda folder: link_out(next((folder / "finance_info").glob("*.parquet"))),
     "finance_info/train-00000-of-00001.parquet", ["finance_info", "outside.parquet"]),
])
def test_a_folder_that_is_not_a_whole_build_is_one_clear_error(built, tmp_path, make, file, facts):
    folder = copy_of(built, tmp_path)
    make(folder)
    with pytest.raises(SourceError) as caught:
        CragMockAPI(str(folder), cache_dir=str(tmp_path / "cache"))
    assert_source_error(caught.value, file, *facts)


def test_each_endpoint_is_answered_by_the_method_its_path_names():
    from ragloaders.mock_api.endpoints import DOMAINS, ENDPOINTS

    assert len({endpoint.path for endpoint in ENDPOINTS}) == len(ENDPOINTS) == 38
    for endpoint in ENDPOINTS:
        name = endpoint.client_method.removeprefix(endpoint.domain + "_")
        assert endpoint.answer.__name__ == name and vars(DOMAINS[endpoint.domain])[name] is endpoint.answer, endpoint
    methods = {name for name, value in vars(CragMockAPI).items() if callable(value) and not name.startswith("_")}
    assert methods - {"call"} == {endpoint.client_method for endpoint in ENDPOINTS}


MALFORMED_BODIES = (
    {}, {"query": None}, {"query": 1.5}, {"query": ["x"]}, {"query": True}, {"query": {"a": 1}}, {"query": " 12 "},
    {"query": "\u0663"}, {"query": 10**30}, {"query": 2**53 + 0.5}, {"rank": "1e3"}, {"rank": 2.0, "date": 5},
    {"game_ids": ["1", 2, None]}, {"game_ids": "a"}, {"date": None, "team_name": 3}, {"other": "x\u2028\x00"},
)
"""Missing fields, wrong types, a 100-bit integer, a non-ASCII digit, a null byte and a line separator."""


@pytest.mark.slow  # (seconds; CI runs it)
def test_the_in_process_client_answers_a_malformed_body_as_the_http_app_byte_for_byte(built, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from ragloaders.mock_api.endpoints import ENDPOINTS
    from ragloaders.mock_api.http import create_app

    api = CragMockAPI(str(built), cache_dir=str(tmp_path))
    client = TestClient(create_app(api.kg))
    rejected = 0
    for endpoint in ENDPOINTS:
        for body in MALFORMED_BODIES:
            response = client.post(endpoint.path, json=body)
            if response.status_code != 422:
                continue
            rejected += 1
            answer = api.call(endpoint.client_method, body)
            assert json.dumps(answer, ensure_ascii=False, separators=(",", ":")) == response.text, (endpoint, body)
    assert rejected > 400  # (most of the 16 bodies are wrong for each of the 37 endpoints that take one)


def test_the_http_app_validates_with_the_models_the_client_does(built):
    pytest.importorskip("fastapi")
    from ragloaders.mock_api.endpoints import ENDPOINTS, MockKg
    from ragloaders.mock_api.http import create_app
    from ragloaders.mock_api.validation import body_model

    app = create_app(MockKg(None))  # (no call is answered: only the routes are read)
    models = {route.path: route.body_field.field_info.annotation if route.body_field else None
              for route in app.routes if route.path in {endpoint.path for endpoint in ENDPOINTS}}
    assert len(models) == 38
    for endpoint in ENDPOINTS:
        assert models[endpoint.path] is body_model(endpoint) is body_model(endpoint), endpoint.path
        assert (models[endpoint.path] is None) == (endpoint.body == ())


def test_every_config_the_api_reads_is_built(built):
    assert all((built / config).is_dir() for config in REQUIRED_COLUMNS)


def test_cli_errors_are_one_line(built, tmp_path, capsys):
    for args, expected in ((["--from", str(tmp_path)], "not a crag/mock_kg build"),
                           (["--from", str(tmp_path / "absent")], "not a hub repository id"),
                           (["--data-dir", str(tmp_path / "absent")], "no such folder")):
        assert cli_main(["serve", "crag/mock_kg", *args, "--cache-dir", str(tmp_path / "c")]) == 2
        err = capsys.readouterr().err
        assert expected in err and len(err.strip().splitlines()) == 1, err
    assert cli_main(["serve", "beir/scifact", "--from", str(built)]) == 2
    assert "path crag/mock_kg" in capsys.readouterr().err


def test_a_port_in_use_is_one_line(built, tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli_main(["serve", "crag/mock_kg", "--from", str(built), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port} is already in use" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_serve_answers_malformed_bodies_as_fastapi_and_stops_cleanly_on_ctrl_c(built, tmp_path):
    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "ragloaders", "serve", "crag/mock_kg", "--from", str(built),
                                "--port", str(port), "--cache-dir", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        base = f"http://127.0.0.1:{port}"
        assert requests.get(base + "/").json() == {"message": "The CRAG API service is running"}
        bad = requests.post(base + "/open/get_entity", data="{not json", headers={"content-type": "application/json"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["type"] == "json_invalid"
        assert requests.post(base + "/open/get_entity", json={"query": ["x"]}).status_code == 422
        assert requests.post(base + "/nowhere", json={}).status_code == 404
        assert requests.post(base + "/open/get_entity", json={"query": "Florida City, Florida"}).json()["result"]
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert f"listening on http://127.0.0.1:{port}" in err and "stopped" in err and "Traceback" not in err


HUB_SCRIPT = textwrap.dedent('''
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import fake_hub
    from fake_hub import FakeHub, http

    hub = FakeHub(sys.argv[2])
    state = hub.load()
    state["repos"]["org/kg"] = {"private": False, "type": "dataset", "branches": {"main": {"files": {}, "commits": []}}}
    hub.save(state)
    for root, _, names in os.walk(sys.argv[3]):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                hub.seed_file("org/kg", os.path.relpath(path, sys.argv[3]).replace(os.sep, "/"), f.read())

    def handle(request):
        # the hub's file download route, which the fake hub (made for uploads) does not serve
        # (and the tree listing at the commit the revision info names, which it knows only as main)
        path = request.url.path
        if "/tree/" + "0" * 40 in path:
            request.read()
            return http.Response(200, json=hub.tree(request, "org/kg", "main")[1])
        parts = path.split("/resolve/", 1)
        if len(parts) == 2:
            parts[1] = parts[1].split("/", 1)[1]
            entry = hub.files("org/kg").get(parts[1])
            if entry is None:
                return http.Response(404, headers={"X-Error-Code": "EntryNotFound"})
            data = hub.read("org/kg", parts[1])
            etag = entry["sha256"] if entry["lfs"] else entry["oid"]
            headers = {"X-Repo-Commit": "0" * 40, "ETag": f'"{etag}"', "Content-Length": str(len(data))}
            return http.Response(200, content=b"" if request.method == "HEAD" else data, headers=headers)
        return hub.handle(request)

    from huggingface_hub import set_client_factory
    set_client_factory(lambda: http.Client(transport=http.MockTransport(handle), follow_redirects=True))
    from ragloaders import CragMockAPI
    api = CragMockAPI("org/kg", cache_dir=sys.argv[4])
    print(json.dumps(api.finance_get_ticker_by_name("Apple Inc. Common Stock")))
    print(json.dumps(api.sports_nba_get_play_by_play_data_by_game_ids(["0012200049"])["result"]["eventnum"]))
    from huggingface_hub import HfApi
    HfApi().create_tag("org/kg", repo_type="dataset", tag="v0")
    print(api.commit, CragMockAPI("org/kg", cache_dir=sys.argv[4], revision="v0").commit)
    try:
        CragMockAPI("org/kg", cache_dir=sys.argv[4], revision="no-such-tag")
    except ValueError as e:  # the probe every command makes refuses it in one line, before any download
        print(" ".join(str(e).split())[:160])
''')


@pytest.mark.slow
def test_a_hub_repository_is_downloaded_and_answers(built, tmp_path):
    script = tmp_path / "hub.py"
    script.write_text(HUB_SCRIPT)
    env = {**os.environ, "HF_ENDPOINT": "http://hub.test", "HF_HUB_DISABLE_XET": "1",
           "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0"}
    done = subprocess.run([sys.executable, str(script), str(ROOT / "tests"), str(tmp_path / "hub"), str(built),
                           str(tmp_path / "cache")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert json.loads(lines[0]) == {"result": "AAPL"}
    assert list(json.loads(lines[1]).values()) == list(range(7))
    assert lines[2] == f"{'0' * 40} {'0' * 40}"  # the seeded repository's one commit, by default and by its tag
    assert "org/kg: the hub dataset repository has no revision 'no-such-tag'" in lines[3]
    downloaded = {p.parent.name for p in (tmp_path / "cache" / "hub").rglob("*.parquet")}
    assert downloaded == set(REQUIRED_COLUMNS)  # only the configs the API reads


@pytest.fixture
def hub(monkeypatch):
    """A local hub whose dataset repositories are HUB_REPOS: the probe of any other answers 404."""
    from http.server import BaseHTTPRequestHandler

    from huggingface_hub import constants
    from local_http import send_body

    class Hub(BaseHTTPRequestHandler):
        def do_GET(self):
            known = self.path.removeprefix("/api/datasets/") in HUB_REPOS
            found = b'{"id": "x", "sha": "' + b"0" * 40 + b'"}'
            send_body(self, found if known else b'{"error": "not found"}', status=200 if known else 404)

        def log_message(self, *args):
            pass

    with served(Hub) as server:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield


HUB_REPOS = {"org/name"}


@pytest.mark.parametrize("ref", ["absolute", "relative"])
def test_a_hub_cache_ref_leading_outside_its_snapshots_is_refused(ref, built, tmp_path, monkeypatch):
    """Offline, huggingface_hub follows `refs/main` in the API's own hub cache (`<cache_dir>/hub`) wherever its text
    leads: a damaged or hostile ref naming a build elsewhere is refused, not served as the repository (the folder's
    name reported as its commit)."""
    from huggingface_hub import constants

    repo = tmp_path / "cache" / "hub" / "datasets--org--kg"
    (repo / "snapshots").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(str(built) if ref == "absolute" else os.path.relpath(built, repo / "snapshots"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConnectionError, match="not to a snapshot of this repository") as refused:
        CragMockAPI("org/kg", cache_dir=str(tmp_path / "cache"))
    assert_names(refused.value, "org/kg", repo / "snapshots")


def test_a_hub_id_with_no_folder_of_that_name_is_taken_as_a_repository(hub, monkeypatch, tmp_path):
    asked = []
    monkeypatch.setattr(client_module, "download_repository", lambda repo, cache, revision: asked.append(repo)
                        or str(tmp_path))
    with pytest.raises(SourceError) as caught:
        CragMockAPI("org/name", cache_dir=str(tmp_path))
    assert_source_error(caught.value, tmp_path.name, "crag/mock_kg", "README.md")
    assert asked == ["org/name"]


def test_a_repository_the_hub_does_not_have_is_one_line_with_the_remedies_and_nothing_downloaded(hub, monkeypatch,
                                                                                                 tmp_path, capsys):
    asked = []
    monkeypatch.setattr(client_module, "download_repository", lambda repo, cache: asked.append(repo) or str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert cli_main(["serve", "crag/mock_kg", "--from", "org/missing", "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no dataset repository org/missing (HTTP 404" in err, err
    assert asked == []


def test_key_index_finds_what_a_dict_of_the_rows_finds():
    """Random keys with repeats, nulls, odd characters and prefixes of each other, split over chunks: the last row
    of each key, as `{key: row}` built in row order gives, and None for absent keys or keys of another type."""
    import random

    import pyarrow as pa
    from ragloaders.mock_api.indexes import KeyIndex, sort_order

    rng = random.Random(7)
    alphabet = ["a", "b", "ab", "", "é", "🙂", " ", "\t", "A", "00123", "0", "\u2028"]
    for _ in range(30):
        keys = [None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
                for _ in range(rng.randint(0, 60))]
        cut = rng.randint(0, len(keys))
        column = pa.chunked_array([pa.array(keys[:cut], pa.string()), pa.array(keys[cut:], pa.string())])
        index = KeyIndex(column, sort_order(column))
        expected = {key: row for row, key in enumerate(keys) if key is not None}
        for probe in {*expected, "zz", "a\u0301", "", 5}:
            assert index.last(probe) == expected.get(probe), (keys, probe)
            assert list(index.rows(probe)) == [row for row, key in enumerate(keys) if key == probe]


@pytest.mark.parametrize("values, is_json", [
    (['"0"', "1", "2.0"], True),             # a DataFrame column mixing strings and numbers
    (["1", "true"], True),
    (['[1, 2]', '{"a": 1}'], True),
    (["1", "2", "30"], False),                # numbers only: a text column of digits, kept as text
    (['"quoted"', '"also"'], False),
    (["Everton", "1"], False),
    (["[not json", "1"], False),
    ([None, None], False),
])
def test_json_text_columns_are_told_from_text(values, is_json):
    import pyarrow as pa
    from ragloaders.mock_api.tables import looks_like_json

    assert looks_like_json(pa.chunked_array([pa.array(values, pa.string())])) is is_json


def test_a_missing_folder_that_looks_like_a_repo_id_says_both(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # no network: the download fails at once
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError, match="build/kg"):
        CragMockAPI("build/kg", cache_dir=str(tmp_path / "cache"))


def test_a_body_over_the_limit_is_413_before_it_is_parsed(built, tmp_path):
    """A body of tens of MB was parsed, validated and echoed whole in a 422 while every other client waited."""
    from fastapi.testclient import TestClient
    from ragloaders.mock_api.http import BodyLimit, create_app

    api = CragMockAPI(str(built), cache_dir=str(tmp_path / "c"))
    client = TestClient(BodyLimit(create_app(api.kg), limit=1000))
    query = {"query": "Florida City, Florida"}
    assert client.post("/open/get_entity", json=query).json()["result"]  # under the limit: as before
    big = json.dumps({"query": ["x"] * 1000}).encode()
    for content in (big, iter([big[:600], big[600:]])):  # a Content-Length, then chunks without one
        answer = client.post("/open/get_entity", content=content, headers={"content-type": "application/json"})
        assert answer.status_code == 413 and answer.json() == {"detail": "request body over 1,000 bytes"}
        assert len(answer.content) < 100
    assert client.post("/open/get_entity", content=b"{}", headers={"content-length": "x"}).status_code == 413
    assert client.post("/open/get_entity", json=query).json()["result"]  # and the next call is answered


@pytest.mark.slow
def test_serve_outlasts_a_client_holding_idle_connections_and_stops_despite_a_slow_one(built, tmp_path):
    """1,100 idle connections used up the server's file descriptors (at a limit of 1,024): no one was answered and
    its log grew by 80,000 tracebacks; a client that stopped half way through its body kept SIGTERM waiting for
    it. `--port 0` was printed as port 0."""
    import re
    import resource

    import requests
    from ragloaders.mock_api.http import REQUEST_SECONDS

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1_100  # past the 1,024 files the server may open
    if min(hard, 4096) < wanted + 100:
        pytest.skip(f"this test opens {wanted} connections; the limit of open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloaders", "serve", "crag/mock_kg", "--from", str(built), "--port", "0",
         "--cache-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)))
    idle: list[socket.socket] = []
    try:
        line = process.stderr.readline()
        port = int(re.search(r"listening on http://127\.0\.0\.1:(\d+) ", line).group(1))
        assert port != 0, line
        wait_for_port(port, process)
        base = f"http://127.0.0.1:{port}"
        for _ in range(wanted):
            idle.append(socket.create_connection(("127.0.0.1", port)))
        try:  # answered, or its connection closed at once past the limit: not left waiting
            assert requests.get(base + "/", timeout=10).status_code in (200, 503)
        except requests.ConnectionError:
            pass
        for connection in idle:
            connection.close()
        idle.clear()
        for attempt in range(50):  # and the server answers still, once it has seen those connections close
            try:
                assert requests.get(base + "/", timeout=10).status_code == 200
                break
            except requests.ConnectionError:
                assert attempt < 49
                time.sleep(0.1)
        # a byte a connection, and stop: 256 of them kept everyone else out for good
        stalled = socket.create_connection(("127.0.0.1", port))
        idle.append(stalled)
        stalled.sendall(b"POST /open/get_entity HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                        b"content-length: 100\r\n\r\n{")  # and the rest of its body never
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", port)))
            idle[-1].sendall(b"G")
        time.sleep(REQUEST_SECONDS + 2)
        assert requests.get(base + "/", timeout=10).status_code == 200
        stalled.settimeout(5)
        assert stalled.recv(200).startswith(b"HTTP/1.1 408 ")
        for connection in idle:
            connection.close()
        idle.clear()
        slow = socket.create_connection(("127.0.0.1", port))
        idle.append(slow)
        slow.sendall(b"POST /open/get_entity HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     b"content-length: 100\r\n\r\n{\"query\":")  # and nothing more
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        for connection in idle:
            connection.close()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and "ragloaders serve: stopped" in err, err[-2000:]
    assert "Traceback" not in err and len(err) < 5000, err[-2000:]


@pytest.mark.parametrize("config, column, kind", [("movie_movies", "id", "integers"),
                                                  ("music_artists", "members", "lists"),
                                                  ("finance_price", "prices", "lists"),
                                                  ("finance_price", "ticker", "text")])
def test_a_column_of_another_kind_than_the_build_writes_is_refused_naming_it(config, column, kind, built, tmp_path):
    """Right names, other types (a build edited, or written by another tool): ids as text answered None, members as
    JSON text came back a character at a time, prices as text raised AttributeError, tickers as integers found
    nothing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    folder = copy_of(built, tmp_path)
    path = sorted((folder / config).glob("*.parquet"))[0]
    table = pq.read_table(path)
    values = table.column(column)
    if kind == "text":
        changed = pc.cast(pa.array(range(len(values))), pa.int64())
    else:
        changed = pa.array([json.dumps(value) for value in values.to_pylist()], pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, changed), path)
    with pytest.raises(SourceError) as caught:
        CragMockAPI(str(folder), cache_dir=str(tmp_path / "c"))
    assert_names(caught.value, str(path), f"config {config}: column {column} holds", f"the mock API reads {kind}")


@pytest.mark.parametrize("config, column, value", [("movie_movies", "record_json", '{"title": "cut sho'),
                                                   ("finance_marketcap", "record_json", "[" * 100_000),
                                                   ("open_entities", "summary_structured", "{'python': 'repr'}"),
                                                   ("open_entities", "other", "[1, 2]")])
def test_a_json_text_value_a_build_cannot_hold_is_one_error_naming_it_in_process_and_a_500_over_http(
        config, column, value, built, tmp_path):
    """A build edited or written by another tool (a hub repository given to --from): JSON text that does not parse,
    nests past Python's recursion limit, or is not the object a record's `other` holds raised JSONDecodeError,
    RecursionError or ValueError from inside the call, and over HTTP a bare 500 with a traceback in the log."""
    import pyarrow as pa

    folder = copy_of(built, tmp_path)
    path = sorted((folder / config).glob("*.parquet"))[0]
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[0] = value
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.string())), path)
    key = table.column(table.column_names[0])[0].as_py()
    method, argument = {"movie_movies": ("movie_get_movie_info", key), "finance_marketcap":
                        ("finance_get_market_capitalization", key), "open_entities": ("open_get_entity", key)}[config]
    api = CragMockAPI(str(folder), cache_dir=str(tmp_path / "c"))
    with pytest.raises(SourceError) as caught:
        api.call(method, {"query": argument})
    assert_names(caught.value, folder / config, f"column {column}: a value is not")
    assert len(str(caught.value)) < 600
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from ragloaders.mock_api.endpoints import ENDPOINTS
    from ragloaders.mock_api.http import create_app

    path_of = {endpoint.client_method: endpoint.path for endpoint in ENDPOINTS}
    response = TestClient(create_app(api.kg), raise_server_exceptions=False).post(
        path_of[method], json={"query": argument})
    assert response.status_code == 500 and response.json() == {"detail": str(caught.value)}


@pytest.mark.parametrize("name", ["finance_marketcap.arrow", "finance_marketcap.arrow.sum"])
def test_a_folder_at_the_name_of_a_cached_table_is_refused_naming_it_and_left_alone(name, built, tmp_path):
    """A converted table or its check is a file: a folder at its name (not one ragloaders wrote) made the
    conversion's rename fail with IsADirectoryError after converting the table again."""
    CragMockAPI(str(built), cache_dir=str(tmp_path / "c")).finance_get_market_capitalization("META")
    [converted] = (tmp_path / "c" / "mock_api").glob(f"*/{name}")
    converted.unlink()
    converted.mkdir()
    (converted / "kept").write_text("not the cache's")
    with pytest.raises(SourceError) as caught:
        CragMockAPI(str(built), cache_dir=str(tmp_path / "c")).finance_get_market_capitalization("META")
    assert_names(caught.value, converted, "a folder is at the name of a file of the mock API's cache")
    assert (converted / "kept").read_text() == "not the cache's"


@pytest.mark.slow  # (it decodes the 256 MB the bound allows first: seconds)
def test_a_parquet_file_whose_values_expand_without_bound_is_refused_on_conversion(built, tmp_path):
    """A few KB of Parquet (one long value, dictionary-encoded in a row group of 262,144 rows) was converted whole:
    gigabytes of memory and of cache disk."""
    import pyarrow as pa
    from ragloaders.mock_api.tables import EXPANSION_SLACK, MAX_EXPANSION

    folder = copy_of(built, tmp_path)
    rows = 1 << 18
    indices = pa.array([0] * rows, pa.int32())

    def repeated(value: str) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(indices, pa.array([value], pa.string()))

    target = sorted((folder / "open_entities").glob("*.parquet"))[0]
    schema = pq.read_schema(target)
    columns = {name: repeated("e" if name == "entity" else "{}" if name == "other" else "x" * 2000)
               for name in schema.names}
    pq.write_table(pa.table(columns).cast(schema), target, row_group_size=rows)
    assert target.stat().st_size < 1_000_000  # (the decoded rows: 1.5 GB)
    api = CragMockAPI(str(folder), cache_dir=str(tmp_path / "c"))
    with pytest.raises(SourceError) as caught:
        api.open_search_entity_by_name("e")
    assert_names(caught.value, "config open_entities: its rows hold more than",
                 f"{MAX_EXPANSION:,} times its Parquet files' size")
    assert not any(p.stat().st_size > EXPANSION_SLACK + (1 << 20) for p in (tmp_path / "c").rglob("*") if p.is_file())
