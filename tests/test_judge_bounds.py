"""The CRAG judge at its bounds: an API key echoed back in JSON escapes, the verdict cache across endpoints and
prompts, a reply nested past the parser's depth, an endpoint URL with a query or credentials in it, a timeout past
what a socket can wait, and a prompt file that is huge, endless or not a file at all."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import assert_names, assert_source_error
from local_http import send_body, served
from ragloaders.cli import main
from ragloaders.core.errors import UsageError
from ragloaders.eval.commands import judge_limits
from ragloaders.eval.judge import (
    MAX_PROMPT_BYTES,
    MAX_TIMEOUT_SECONDS,
    Judge,
    JudgeError,
    read_prompt,
    without_key,
)
from test_eval_adversarial import chat_reply
from test_eval_crag import crafted, crafted_rows, write_jsonl  # noqa: F401 - crafted: the fixture, used by name

KEY = "sk-adversary-DO-NOT-SEND-0815"


def pieces(key: str) -> set[str]:
    """Every run of 8 characters of `key`: what must never be shown or stored."""
    return {key[i:i + 8] for i in range(len(key) - 7)}


def leaked(text: str, key: str) -> list[str]:
    return sorted(piece for piece in pieces(key) if piece in text)


def every_char_escaped(key: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in key)


def every_other_char_escaped(key: str) -> str:
    """Upper-case hex, every second character: no run of 8 characters of the key is left as it is."""
    return "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(key))


def slashes_and_non_ascii_escaped(key: str) -> str:
    return "".join("\\/" if c == "/" else f"\\u{ord(c):04x}" if ord(c) > 127 else c for c in key)


class Echo(BaseHTTPRequestHandler):
    """A chat endpoint whose reply is `Echo.mode`'s (a function of the request's key), each request recorded with
    its path (query included); `server.score` is the score an "ok" reply gives."""

    mode = "ok"
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests.append({"path": self.path, "port": self.server.server_address[1]})
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        mode = type(self).mode
        if mode == "deep":
            send_body(self, b'{"choices":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        elif mode == "fail":
            send_body(self, b"", status=500)
        elif mode == "ok":
            send_body(self, chat_reply(json.dumps({"score": self.server.score, "explanation": "fine"})))
        else:  # mode: a function writing the key with JSON escapes
            escaped = mode(key)
            send_body(self, chat_reply('{"score": 0, "explanation": "echo ' + escaped + '", "list": ["'
                                       + escaped + '"]}'))

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoints():
    """Two chat endpoints on 127.0.0.1 (base URLs .../v1): the first scores 1, the second 0."""
    Echo.mode, Echo.requests = "ok", []
    with served(Echo, daemon_threads=True, score=1) as first, served(Echo, daemon_threads=True, score=0) as second:
        yield [f"http://127.0.0.1:{s.server_address[1]}/v1" for s in (first, second)]


def cli_args(crafted: dict, tmp_path, url: str, *more: str) -> list[str]:  # noqa: F811 - the fixture's value
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    return ["eval", "crag/task_1_and_2", "--predictions", path, "--judge-url", url, "--judge-model", "m",
            "--data-dir", crafted["data_dir"], "--cache-dir", crafted["cache_dir"], *more]


# --- 1. the key, echoed back in JSON escapes -----------------------------------------------------------------------


@pytest.mark.parametrize("key, escape", [
    (KEY, every_char_escaped),
    (KEY, every_other_char_escaped),
    ("sk-caf\u00e9/Schl\u00fcssel/0815-abc", slashes_and_non_ascii_escaped),  # a Latin-1 key: what a header carries
])
def test_a_key_echoed_in_json_escapes_is_blanked_in_the_explanation_and_the_cache(key, escape, endpoints, tmp_path,
                                                                                 monkeypatch):
    """The explanation is read from the reply's JSON, which decodes `\\u0073k-...` to the key: it and the cached
    reply, decoded once (the cache file) and twice (the reply's own JSON), hold no piece of it."""
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", key)
    Echo.mode = escape
    judge = Judge(endpoints[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    verdict = judge.verdict("q", "a", "b")
    assert verdict.correct is False and verdict.explanation.startswith("echo <key>"), verdict
    assert not leaked(verdict.explanation, key)
    [file] = (tmp_path / "cache").iterdir()
    reply = json.loads(file.read_text(encoding="utf-8"))["reply"]
    assert not leaked(reply, key) and not leaked(json.dumps(json.loads(reply), ensure_ascii=False), key), reply
    again = Judge(endpoints[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0).verdict("q", "a", "b")
    assert again.cached and again.explanation == verdict.explanation and len(Echo.requests) == 1


def test_a_key_echoed_in_json_escapes_is_not_written_to_verdicts(crafted, endpoints, tmp_path, monkeypatch,  # noqa: F811
                                                                 capsys):
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", KEY)
    Echo.mode = every_char_escaped
    target = tmp_path / "verdicts.jsonl"
    assert main(cli_args(crafted, tmp_path, endpoints[0], "--judge-cache", str(tmp_path / "c"), "--verdicts",
                         str(target))) == 0
    out = capsys.readouterr()
    explanations = [json.loads(line)["judge_explanation"] for line in target.read_text("utf-8").splitlines()]
    assert [e for e in explanations if e] and all(e.startswith("echo <key>") for e in explanations if e)
    assert not leaked(target.read_text("utf-8") + "".join(explanations) + out.out + out.err, KEY)


def test_without_key_reads_escapes_as_a_json_parser_does():
    astral = "key-\U0001f511-secret-4711"  # a key beyond the BMP, written as a surrogate pair
    pair = "".join(f"\\u{ord(c):04x}" if c.isascii() else "\\ud83d\\udd11" for c in astral)
    assert without_key(f'{{"explanation": "{pair} seen"}}', astral) == '{"explanation": "<key> seen"}'
    assert without_key('"\\\\u0041BCDEFGH"', "ABCDEFGHIJ") == '"\\\\u0041BCDEFGH"'  # an escaped backslash: no key
    assert without_key('"x\\u0041BCDEFGHy"', "ABCDEFGHIJ") == '"x<key>y"'
    assert without_key("\\u0041BCDEFG", "ABCDEFGHIJ") == "\\u0041BCDEFG"  # 7 characters are no piece


# --- 2. what the cache and the report are keyed on -----------------------------------------------------------------


def test_the_cache_keeps_each_endpoints_verdicts_apart(endpoints, tmp_path):
    cache = str(tmp_path / "cache")
    assert Judge(endpoints[0], "m", cache, retries=0, retry_wait=0).verdict("q", "a", "b").correct is True
    other = Judge(endpoints[1], "m", cache, retries=0, retry_wait=0).verdict("q", "a", "b")
    assert other.correct is False and not other.cached
    assert [r["port"] for r in Echo.requests] == [int(url.split(":")[2].split("/")[0]) for url in endpoints]
    again = Judge(endpoints[1], "m", cache, retries=0, retry_wait=0).verdict("q", "a", "b")
    assert again.cached and again.correct is False and len(Echo.requests) == 2


def test_the_report_names_the_judge_prompt(crafted, endpoints, tmp_path, capsys):  # noqa: F811
    prompts = []
    for i, text in enumerate(["Grade strictly.", "Grade leniently."]):
        prompt = tmp_path / f"prompt{i}.txt"
        prompt.write_text(text, encoding="utf-8")
        prompts.append((str(prompt), hashlib.sha256(text.encode()).hexdigest()))
    seen = []
    for prompt, digest in prompts:
        args = cli_args(crafted, tmp_path, endpoints[0], "--judge-cache", str(tmp_path / "c"), "--judge-prompt", prompt)
        assert main([*args, "--json"]) == 0
        seen.append(json.loads(capsys.readouterr().out)["identity"]["judge"])
        assert digest in seen[-1]
        assert main(args) == 0
        assert digest in capsys.readouterr().out.splitlines()[-1]
    assert seen[0] != seen[1]


# --- 3. a reply nested past the parser's depth ---------------------------------------------------------------------


def test_a_reply_nested_100k_deep_is_a_judge_error(crafted, endpoints, tmp_path, capsys):  # noqa: F811
    Echo.mode = "deep"
    judge = Judge(endpoints[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, "judge m at ", endpoints[0], "not a chat completion")
    assert main(cli_args(crafted, tmp_path, endpoints[0], "--judge-cache", str(tmp_path / "c"))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ragloaders: error: judge m at ") and "RecursionError" not in err


# --- 4. an endpoint URL with a query or credentials ----------------------------------------------------------------


def test_a_query_stays_after_the_path_and_its_values_are_never_shown(crafted, endpoints, tmp_path, capsys):  # noqa: F811
    secret = "QUERY-SECRET-31337"
    url = f"{endpoints[0]}?api-version=2024&api-key={secret}"
    judge = Judge(url, "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    assert judge.verdict("q", "a", "b").correct is True
    assert Echo.requests[-1]["path"] == f"/v1/chat/completions?api-version=2024&api-key={secret}"
    assert secret not in judge.describe() and "api-key=<redacted>" in judge.describe()
    assert not any(secret in path.name or secret in path.read_text() for path in (tmp_path / "cache").iterdir())
    Echo.mode = "fail"
    with pytest.raises(JudgeError) as error:
        Judge(url, "m", str(tmp_path / "c2"), retries=0, retry_wait=0).verdict("q", "a", "b")
    assert_names(error.value, "HTTP 500", "api-key=<redacted>")
    assert secret not in str(error.value)
    Echo.mode = "ok"
    assert main(cli_args(crafted, tmp_path, url, "--judge-cache", str(tmp_path / "c3"), "--json")) == 0
    out = capsys.readouterr()
    assert secret not in out.out + out.err and "api-key=<redacted>" in json.loads(out.out)["identity"]["judge"]


@pytest.mark.parametrize("url, secret", [
    ("http://user:PASSWORD-4711@127.0.0.1:9/v1", "PASSWORD-4711"),  # refused: the key goes in an environment variable
    ("http://127.0.0.1:9/v1?api-key=SE CRET-4711", "CRET-4711"),  # http.client's own error quoted the whole URL
    ("http://127.0.0.1:9/v1?api-key=SECRET-\u00e94711", "4711"),
])
def test_a_url_with_credentials_or_unsendable_characters_is_refused_without_showing_them(url, secret, crafted,  # noqa: F811
                                                                                          tmp_path, capsys):
    with pytest.raises(UsageError) as error:
        Judge(url, "m", str(tmp_path / "cache"))
    assert_names(error.value, "--judge-url", "<redacted>")
    assert secret not in str(error.value)
    assert main(cli_args(crafted, tmp_path, url, "--judge-cache", str(tmp_path / "c"))) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragloaders: error: --judge-url must ") and secret not in err


@pytest.mark.parametrize("key, what", [
    ("sk-\u20ac-key-4711", "U+20AC (beyond Latin-1) at character 4 of"),  # http.client cannot encode it
    ("sk-key-4711\r\nX-Injected: 1", "a line break at character 12 of"),  # it would end the header early
    ("sk-key-4711 ", "a space at character 12 of"),  # (a copy-paste's trailing blank)
    ("sk-key-\x7f4711", "a control character at character 8 of"),
])
def test_a_key_a_header_cannot_carry_is_refused_naming_the_variable_not_the_key(key, what, crafted, endpoints,  # noqa: F811
                                                                                tmp_path, monkeypatch, capsys):
    """Before, each of these was sent as far as http.client and came back as "the reply is not a chat completion"."""
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", key)
    with pytest.raises(UsageError) as error:
        Judge(endpoints[0], "m", str(tmp_path / "cache"))
    assert_names(error.value, "RAGLOADERS_JUDGE_API_KEY", what)
    assert "4711" not in str(error.value)
    assert main(cli_args(crafted, tmp_path, endpoints[0], "--judge-cache", str(tmp_path / "c"))) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragloaders: error: RAGLOADERS_JUDGE_API_KEY holds ") and "4711" not in err
    assert Echo.requests == []


# --- 5. a timeout past what a socket can wait ----------------------------------------------------------------------


def test_a_timeout_beyond_a_day_is_refused_naming_the_option(crafted, tmp_path, capsys):  # noqa: F811
    assert judge_limits(str(MAX_TIMEOUT_SECONDS), None)["timeout"] == MAX_TIMEOUT_SECONDS == 86400
    for typed in ("1e10", "86401"):
        with pytest.raises(UsageError) as error:
            judge_limits(typed, None)
        assert_names(error.value, "--judge-timeout", "at most 86400", repr(typed))
    with pytest.raises(UsageError):
        Judge("http://127.0.0.1:9/v1", "m", str(tmp_path / "cache"), timeout=1e10)
    assert main(cli_args(crafted, tmp_path, "http://127.0.0.1:9/v1", "--judge-timeout", "1e10")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ragloaders: error: --judge-timeout must be ") and "'1e10'" in err


# --- 6. a prompt file that is huge, endless or not a file ----------------------------------------------------------


def test_a_prompt_file_larger_than_the_bound_is_refused(tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(2 * MAX_PROMPT_BYTES)  # sparse: NUL bytes, valid UTF-8, never written
    with pytest.raises(Exception) as error:
        read_prompt(str(big))
    assert_source_error(error.value, "big.txt", f"{MAX_PROMPT_BYTES:,} bytes")
    (tmp_path / "fits.txt").write_bytes(b"x" * MAX_PROMPT_BYTES)
    assert len(read_prompt(str(tmp_path / "fits.txt"))) == MAX_PROMPT_BYTES


def test_a_prompt_that_is_no_regular_file_is_refused_without_waiting(crafted, tmp_path, capsys):  # noqa: F811
    fifo = str(tmp_path / "prompt.fifo")
    os.mkfifo(fifo)
    outcome: list[BaseException | str] = []

    def read() -> None:
        try:
            outcome.append(read_prompt(fifo))
        except Exception as e:  # noqa: BLE001 - the test looks at what it is
            outcome.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():  # blocked on a FIFO no one writes: let it end, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading the prompt waited for a writer of the FIFO")
    assert_source_error(outcome[0], "prompt.fifo", "not a regular file")
    for special in ("/dev/zero", str(tmp_path)):  # endless; a folder
        with pytest.raises(Exception) as error:
            read_prompt(special)
        assert_source_error(error.value, os.path.basename(special), "the judge prompt", "not a regular file")
    assert main(cli_args(crafted, tmp_path, "http://127.0.0.1:9/v1", "--judge-prompt", fifo)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ragloaders: error: {fifo}: the judge prompt ")
