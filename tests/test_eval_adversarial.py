"""CRAG answer scoring against hostile input: a hostile judge endpoint (slow, redirecting, huge, rate limiting,
odd verdicts), a hostile judge cache and odd predictions files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import assert_names, assert_source_error
from local_http import send_body, serve_in_thread, served
from ragloaders.core.errors import SourceError
from ragloaders.eval import read_predictions
from ragloaders.eval.judge import MAX_REPLY_BYTES, Judge, JudgeError, parse_verdict

SECRET = "sk-adversary-DO-NOT-SEND-0815"


def chat_reply(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


class Hostile(BaseHTTPRequestHandler):
    """An endpoint whose behaviour is `Hostile.mode`; every request is recorded with its Authorization header."""

    mode = "ok"
    target = ""
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        self._record()
        mode = type(self).mode
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", type(self).target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "echo":  # the reason phrase repeats the request's Authorization header
            self.send_response(500, self.headers.get("Authorization"))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "echo-in-reply":  # a verdict whose explanation repeats the key, whole and cut in two
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._send(chat_reply(json.dumps({"score": 1, "explanation": f"auth {key}; {key[:14]} {key[14:]}"})))
        elif mode == "echo-late":  # the key after 150 characters of filler: a cut at 200 would keep most of it
            self.send_response(500, "x" * 150 + self.headers.get("Authorization", "").removeprefix("Bearer "))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "echo-pieces":  # the key cut into pieces of 8 and 9 characters, and its first 12
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self.send_response(500, f"seen {key[:12]} then {key[20:28]} and {key[30:39]} end")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "trickle-headers":  # status line and headers one byte every 0.1 s: each read is quick
            try:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
        elif mode == "429":
            self.send_response(429)
            self.send_header("Retry-After", "999999999")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "trickle":  # one byte every 0.2 s: each read is quick, the whole reply never ends in time
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(30):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
        elif mode == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10 << 20))
            self.end_headers()
            try:
                chunk = b" " * (1 << 20)
                for _ in range(10):
                    self.wfile.write(chunk)
            except OSError:
                pass
        else:
            self._send(chat_reply('{"score": 1, "explanation": "fine"}'))

    do_GET = do_POST  # noqa: N815 - a followed 302 arrives as a GET

    def _record(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        type(self).requests.append({"server": self.server.server_address, "auth": self.headers.get("Authorization")})

    def _send(self, body: bytes):
        send_body(self, body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile():
    Hostile.mode, Hostile.target, Hostile.requests = "ok", "", []
    # two hosts: the second is where a redirect points
    with served(Hostile, daemon_threads=True) as first, served(Hostile, "127.0.0.2", daemon_threads=True) as second:
        yield [f"http://{s.server_address[0]}:{s.server_address[1]}/v1" for s in (first, second)]


def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(hostile, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", SECRET)
    Hostile.mode, Hostile.target = "redirect", hostile[1] + "/chat/completions"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=2, retry_wait=0)
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "redirect", "HTTP 302")
    assert [r["server"][0] for r in Hostile.requests] == ["127.0.0.1"]  # the other host is never asked
    assert SECRET not in str(error.value)


def test_a_reply_echoing_the_key_is_neither_cached_nor_shown_with_it(hostile, tmp_path, monkeypatch):
    """A chat completion whose explanation repeats the Authorization key (a misbehaving proxy, a hostile endpoint):
    the verdict stands, and neither its explanation nor the judge's cache file on disk holds the key or a piece of
    it; the cached reply read back is the blanked one."""
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", SECRET)
    Hostile.mode = "echo-in-reply"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    verdict = judge.verdict("q", "a", "b")
    assert verdict.correct is True and verdict.explanation.startswith("auth <key>"), verdict
    pieces = {SECRET[i:i + 8] for i in range(len(SECRET) - 7)}
    stored = b"".join(path.read_bytes() for path in (tmp_path / "cache").rglob("*") if path.is_file())
    assert stored and not any(piece.encode() in stored for piece in pieces), stored[:300]
    assert not any(piece in verdict.explanation for piece in pieces)
    again = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0).verdict("q", "a", "b")
    assert again.cached and again.explanation == verdict.explanation and len(Hostile.requests) == 1


def test_a_server_echoing_the_key_does_not_get_it_printed(hostile, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", SECRET)
    Hostile.mode = "echo"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "HTTP 500")
    assert Hostile.requests[0]["auth"] == f"Bearer {SECRET}" and SECRET not in str(error.value)


def test_a_reply_that_trickles_in_is_cut_at_the_timeout(hostile, tmp_path):
    Hostile.mode = "trickle"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=1, retry_wait=0, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "timeout", "0.5 s", "2 request")
    assert time.monotonic() - start < 3  # 2 requests of at most 0.5 s each (the server would take 6 s per reply)
    assert len(Hostile.requests) == 2


def test_headers_that_trickle_in_do_not_hold_a_call_past_its_timeout(hostile, tmp_path):
    Hostile.mode = "trickle-headers"  # the server would take 40 s to finish its headers
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "timeout", "0.3 s", "1 request")
    assert time.monotonic() - start < 5  # a bound on hanging (the timeout is 0.3 s), not a benchmark


LONG_KEY = "sk-proj-" + "Q7x9LmN2pR4tV6wY8zA1bC3dE5fG7hJ9kL0mN2pR4tV6wY8z"[:43]  # 51 characters, as OpenAI's


@pytest.mark.parametrize("mode", ["echo-late", "echo-pieces"])
def test_no_piece_of_an_echoed_key_survives_the_reason_being_cut(mode, hostile, tmp_path, monkeypatch):
    assert len(LONG_KEY) == 51
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", LONG_KEY)
    Hostile.mode = mode
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "HTTP 500")
    message = str(error.value)
    assert Hostile.requests[0]["auth"] == f"Bearer {LONG_KEY}"
    leaked = [LONG_KEY[i:i + 8] for i in range(len(LONG_KEY) - 7) if LONG_KEY[i:i + 8] in message]
    assert not leaked and "<key>" in message, message
    expected = "x" * 150 + "<key>" if mode == "echo-late" else "seen <key> then <key> and <key> end"
    assert expected in message  # the server's other words are kept


def test_without_key_blanks_every_run_of_eight_and_keeps_the_rest():
    from ragloaders.eval.judge import without_key

    key = "abcdefghijklmnop"
    assert without_key("say abcdefgh and abcdefg", key) == "say <key> and abcdefg"  # 7 characters are no piece
    assert without_key("ijklmnopabcdefghij", key) == "<key>"  # two pieces side by side: one run
    assert without_key("x" * 195 + key, key)[:200] == "x" * 195 + "<key>"
    assert without_key("abc", "abc") == "<key>" and without_key("abc", None) == "abc"


def test_rate_limits_are_retried_a_bounded_number_of_times_whatever_retry_after_says(hostile, tmp_path):
    Hostile.mode = "429"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=2, retry_wait=0)
    start = time.monotonic()
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], "HTTP 429", "3 request")
    assert time.monotonic() - start < 5 and len(Hostile.requests) == 3


def test_a_huge_reply_is_refused(hostile, tmp_path):
    Hostile.mode = "huge"
    judge = Judge(hostile[0], "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, hostile[0], f"{MAX_REPLY_BYTES:,} bytes")


def cached_judge(tmp_path, url: str) -> tuple[Judge, str]:
    """A judge and the cache file its verdict on ('q', 'a', 'b') would be kept in."""
    judge = Judge(url, "m", str(tmp_path / "cache"), retries=0, retry_wait=0)
    os.makedirs(judge.cache_dir, exist_ok=True)
    return judge, judge._cache_path("q", "a", "b")


def test_a_cache_file_edited_to_deeply_nested_json_is_asked_again(hostile, tmp_path):
    judge, path = cached_judge(tmp_path, hostile[0])
    with open(path, "w") as f:
        f.write("[" * 200_000)
    verdict = judge.verdict("q", "a", "b")
    assert verdict.correct is True and not verdict.cached and len(Hostile.requests) == 1
    assert json.loads(open(path).read())["reply"] == '{"score": 1, "explanation": "fine"}'


_ENDLESS_CACHE = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from ragloaders.eval.judge import Judge
judge = Judge(sys.argv[1], "m", sys.argv[2], retries=0, retry_wait=0)
os.makedirs(judge.cache_dir, exist_ok=True)
os.symlink("/dev/zero", judge._cache_path("q", "a", "b"))
print(judge.verdict("q", "a", "b").correct)
"""


def test_a_cache_file_that_never_ends_is_read_only_so_far(hostile, tmp_path):
    done = subprocess.run([sys.executable, "-c", _ENDLESS_CACHE, hostile[0], str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "True"


@pytest.mark.parametrize("reply, correct", [
    ('{"score": 1, "explanation": "ok"}', True),  # CRAG's local_evaluation.py form
    ('{"score": 01}', True),  # its parser reads digits: int("01") is 1
    ('{"score": ' + "0" * 5000 + "1}", True),
    ('{"score": ' + "9" * 5000 + "}", None),  # more digits than int() converts: no score, no crash
    ('{"score": "1"}', None),  # a quoted score is no match of its '"score"\\s*:\\s*(\\d+)'
    ('{"Accuracy": "True"}', True),  # the KDD Cup starter kit's form (its templates.py asks for this)
    ('{"accuracy": true}', True),
    ('{"Accuracy": "False"}', False),
    ('{"accuracy": "yes"}', None),
    ("[1]", None),
    ('"score"', None),
])
def test_parse_verdict_reads_both_official_forms_and_nothing_else(reply, correct):
    assert parse_verdict(reply)[0] is correct


def test_last_block_is_the_last_match_of_crags_findall():
    import random
    import re

    from ragloaders.eval.judge import last_block

    rng = random.Random(0)
    for _ in range(5000):
        text = "".join(rng.choice('{}a": 1') for _ in range(rng.randint(0, 30)))
        matches = re.findall(r"{([^}]*)}", text)  # CRAG's local_evaluation.py parse_response
        assert last_block(text) == ("{" + matches[-1] + "}" if matches else None), text


def test_parse_verdict_takes_linear_time_on_a_reply_of_open_braces():
    start = time.monotonic()
    assert parse_verdict("{" * 200_000 + '{"score": 1}')[0] is True  # the last {...}, as CRAG's findall gives
    assert parse_verdict("{" * 200_000)[0] is None
    assert time.monotonic() - start < 1  # a regex that retries from every brace took minutes here


# --- predictions files ---------------------------------------------------------------------------------------------


def test_predictions_with_a_bom_odd_csv_and_parquet_lists(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps({"interaction_id": "a", "prediction": "x"}).encode() + b"\n")
    assert read_predictions(jsonl) == {"a": "x"}
    csv_path = tmp_path / "p.csv"
    csv_path.write_bytes(b'\xef\xbb\xbfinteraction_id,prediction\r\n"a,1","line one\nline ""two"""\r\nb,\r\n')
    assert read_predictions(csv_path) == {"a,1": 'line one\nline "two"', "b": ""}
    ints = tmp_path / "ints.jsonl"
    ints.write_text('{"interaction_id": 7, "prediction": "x"}\n')
    with pytest.raises(SourceError) as caught:
        read_predictions(ints)
    assert_source_error(caught.value, "ints.jsonl", "`interaction_id`", "string", "got 7", line=1)
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"interaction_id": "a", "prediction": "x"}\n{"interaction_id": "a", "prediction": "y"}\n')
    with pytest.raises(SourceError) as caught:
        read_predictions(twice)
    assert_source_error(caught.value, "twice.jsonl", "interaction_id 'a'", "second prediction", line=2)
    listed = tmp_path / "list.parquet"
    pq.write_table(pa.table({"interaction_id": ["a"], "prediction": [["x", "y"]]}), listed)
    with pytest.raises(SourceError) as caught:
        read_predictions(listed)
    assert_source_error(caught.value, "list.parquet", "`prediction`", "string", "['x', 'y']", record=1)


def test_a_csv_row_with_more_fields_than_the_header_counts_and_shows_them_bounded(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("interaction_id,prediction\na,x\nb,y,extra one," + "z" * 10_000 + "\n")
    with pytest.raises(SourceError) as caught:
        read_predictions(path)
    assert_source_error(caught.value, "p.csv", "more fields than the header", "2 fields", "its 2", "'extra one'",
                        line=3)
    assert len(str(caught.value)) < len(str(path)) + 300


def test_a_huge_non_string_prediction_is_shown_bounded(tmp_path):
    listed = tmp_path / "big.parquet"
    pq.write_table(pa.table({"interaction_id": ["a"], "prediction": [["x" * 100_000] * 1000]}), listed)
    with pytest.raises(SourceError) as caught:
        read_predictions(listed)
    assert_source_error(caught.value, "big.parquet", "`prediction`", "string", "['xxx", record=1)
    assert len(str(caught.value)) < len(str(listed)) + 300



# --- the 75-token trim of a huge prediction ------------------------------------------------------------------------


def llama_like_tokenizer(path, *, join_words: bool = False) -> str:
    """A tokenizer.json built as CRAG's Llama-2 one (BPE over the whole text, "▁" prepended and for spaces, byte
    fallback); with join_words a merge that spans a word's end and the next space (CRAG's has none)."""
    from tokenizers import Tokenizer, decoders, models, normalizers

    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", *letters]
    merges = [("\u2581", "t"), ("\u2581t", "h"), ("h", "e"), ("\u2581th", "e"), ("\u2581", "\u2581"), ("a", "n"),
              ("an", "d"), ("\u2581", "and")]
    if join_words:
        merges.append(("e", "\u2581"))
    for left, right in merges:
        pieces.append(left + right)
    vocab = {piece: n for n, piece in enumerate(dict.fromkeys(pieces))}
    tokenizer = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens(["<s>", "</s>"])
    tokenizer.save(str(path))
    return str(path)


def whole_text_trim(tokenizer_path: str, text: str) -> str:
    """CRAG's trim computed on the whole text: encode, first 75 ids, decode (the tokenizers library alone)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_path)
    return tokenizer.decode(tokenizer.encode(text, add_special_tokens=False).ids[:75], skip_special_tokens=False)


def test_a_huge_prediction_is_trimmed_from_its_first_words_exactly(tmp_path):
    pytest.importorskip("tokenizers")
    from ragloaders.eval.crag_answers import Trimmer

    path = llama_like_tokenizer(tmp_path / "tokenizer.json")
    trim = Trimmer(path)
    trim.FIRST_WINDOW = 40  # many cuts on short texts
    rng = __import__("random").Random(4)
    alphabet = ["the", "and", "a", "e", " ", "  ", "\n", "é", "漢", "🙂", "<s>", "</s>", "x"]
    for size in (10, 900, 1100, 1500, 3000, 9000):
        text = "".join(rng.choice(alphabet) for _ in range(size))
        assert trim(text) == whole_text_trim(path, text), size
    for text in ("x" * 5000 + " the" * 10, " " * 5000 + "and the", "漢" * 6000):
        assert trim(text) == whole_text_trim(path, text)
    trim.FIRST_WINDOW = Trimmer.FIRST_WINDOW
    huge = "the and a " * 5_000_000  # 50 MB: tokenizing it whole takes minutes and gigabytes
    start = time.monotonic()
    assert trim(huge) == whole_text_trim(path, huge[:10_000])
    assert time.monotonic() - start < 2
    joining = Trimmer(llama_like_tokenizer(tmp_path / "joins.json", join_words=True))
    text = "the " * 2000
    assert joining(text) == whole_text_trim(str(tmp_path / "joins.json"), text)


_WRITER = """
import sys
from ragloaders.eval.judge import Judge
judge = Judge("http://127.0.0.1:9/v1", "m", sys.argv[1])
path = judge._cache_path("q", "a", "b")
print("ready", flush=True)
for _ in range(300):
    judge._store(path, {"model": "m", "reply": "A" * 50_000})
"""


@pytest.mark.slow
def test_two_processes_writing_one_cache_entry_leave_it_whole(tmp_path):
    judge, path = cached_judge(tmp_path, "http://127.0.0.1:9/v1")
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, judge.cache_dir], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    seen = set()
    while writer.poll() is None:
        judge._store(path, {"model": "m", "reply": "B" * 50_000})
        seen.add(judge._cached(path))
    assert writer.wait() == 0
    assert seen <= {"A" * 50_000, "B" * 50_000} and judge._cached(path) in seen | {"A" * 50_000}
    assert sorted(os.listdir(judge.cache_dir)) == [os.path.basename(path)]  # no partial file left behind


@pytest.fixture
def tls_server(tmp_path, monkeypatch):
    """An HTTPS judge on 127.0.0.1 with a certificate made here (openssl), trusted by the judge for the test."""
    import shutil
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    monkeypatch.setattr("ragloaders.eval.judge.TLS_CONTEXT", ssl.create_default_context(cafile=str(cert)))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    Hostile.mode, Hostile.requests = "ok", []
    serve_in_thread(server)
    yield f"https://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_https_judge_answers_and_its_trickled_headers_end_at_the_timeout(tls_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", SECRET)
    judge = Judge(tls_server, "m", str(tmp_path / "cache"), retries=0, retry_wait=0, timeout=5)
    assert judge.verdict("q", "a", "b").correct is True and Hostile.requests[0]["auth"] == f"Bearer {SECRET}"
    Hostile.mode = "trickle-headers"
    judge = Judge(tls_server, "m", str(tmp_path / "cache2"), retries=0, retry_wait=0, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(JudgeError) as error:
        judge.verdict("q", "a", "b")
    assert_names(error.value, tls_server, "timeout", "0.3 s")
    assert time.monotonic() - start < 5


def test_a_tls_handshake_that_trickles_ends_at_the_timeout(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def trickle():  # a TLS record header announcing 16 KB of handshake, then one byte every 0.1 s
        connection, _ = listener.accept()
        try:
            for byte in b"\x16\x03\x03\x40\x00" + b"\x02" * 400:
                connection.sendall(bytes([byte]))
                time.sleep(0.1)
        except OSError:
            pass
        finally:
            connection.close()

    threading.Thread(target=trickle, daemon=True).start()
    url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
    judge = Judge(url, "m", str(tmp_path / "cache"), retries=0, retry_wait=0, timeout=0.3)
    start = time.monotonic()
    try:
        with pytest.raises(JudgeError) as error:
            judge.verdict("q", "a", "b")
        assert_names(error.value, url, "timeout", "0.3 s")
        assert time.monotonic() - start < 5
    finally:
        listener.close()
