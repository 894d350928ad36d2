"""An LLM judge for CRAG answers that no exact rule settles: any OpenAI-compatible chat endpoint, asked at
temperature 0 for a JSON object `{"score": 0 or 1, "explanation": ...}`.

The system prompt is ours (JUDGE_PROMPT, written from CRAG's grading rules), a text file, or the constants
`INSTRUCTIONS` and `IN_CONTEXT_EXAMPLES` of a CRAG `prompts/templates.py`, read as data with `ast` (string
literals only; the file is never executed). The user message has the form CRAG's `local_evaluation.py` sends.
Replies are cached on disk, one JSON file per (endpoint, model, system prompt, question, ground truth,
prediction); a request that fails is retried a bounded number of times; an answer without a score of 0 or 1 is
`None` (unparseable), which the caller counts as not correct and reports. The API key comes from an environment
variable and is never printed (nor any piece of it of 8 characters or more a server echoes back, as it is or
written with JSON escapes such as \\u0073); the endpoint is shown without its query values; a redirect is never
followed (it would carry the key to wherever it points), and each request, from connecting to the last byte of the
reply (TLS handshake, status line, headers and body), ends within the timeout: a server trickling bytes cannot hold
a run past it.

Verdicts are read in both official forms: CRAG's `local_evaluation.py` takes the last `{...}` of the reply and the
digits after `"score":` in it (`{"score": 1}`; a quoted `"1"` is no score there, so none here); the KDD Cup 2024
starter kit, whose `prompts/templates.py` asks for `{"Accuracy": "True"}`, reads the lower-cased reply as JSON and
takes `accuracy` true or "true" as correct (false or "false" is not correct here; anything else unparseable).
"""

from __future__ import annotations

import ast
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import stat
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from ..core.deep_folders import make_folders
from ..core.errors import SourceError, UsageError
from ..core.preview import invalid_utf8, preview
from ..core.user_cache import read_small_file

API_KEY_VARIABLES = ("RAGLOADERS_JUDGE_API_KEY", "OPENAI_API_KEY")
"""Where the key is read from, first one set wins; none set: no Authorization header (a local server)."""
RETRIES = 3
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
TIMEOUT_SECONDS = 120
MAX_TIMEOUT_SECONDS = 24 * 60 * 60
"""The longest --judge-timeout taken (a day): far beyond any reply, and within what sockets and timers can wait."""
MAX_PROMPT_BYTES = 1 << 20
"""A judge prompt file larger than this is refused (CRAG's templates.py is a few KB)."""
TEMPLATE_CONSTANTS = ("INSTRUCTIONS", "IN_CONTEXT_EXAMPLES")
MAX_REPLY_BYTES = 4 << 20
"""A reply larger than this is refused (a verdict is a few hundred bytes)."""
MAX_CACHE_BYTES = 2 * MAX_REPLY_BYTES
"""A cached entry holds one reply's content (JSON-escaped) and the model name."""
READ_CHUNK = 64 << 10
KEY_PIECE = 8
"""A run of this many characters of the key, anywhere in a server's words, is blanked (and any longer one)."""
MAX_REASON_CHARS = 200
"""How much of a server's reason phrase an error shows (after the key is blanked)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answered, never followed: a followed one would send the Authorization header elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        return None


class _Deadline:
    """The end of one request. Every socket it watches is shut down when it passes, which wakes whatever waits on
    it (a TLS handshake, the status line, a header trickled one byte at a time, the body): a socket timeout alone
    bounds each read, not their sum."""

    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds
        self._timers: list[threading.Timer] = []

    def remaining(self) -> float:
        return max(self.at - time.monotonic(), 0.001)

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def watch(self, sock: socket.socket) -> None:
        timer = threading.Timer(self.remaining(), _shut_down, (sock,))
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()


def _shut_down(sock: socket.socket) -> None:
    try:  # the plain socket's own shutdown, also for a TLS socket (whose own would drop its TLS state under a reader)
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # closed already: the request ended
        pass


class _WatchedConnection(http.client.HTTPConnection):
    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        super().connect()  # bounded by the socket timeout, set to what is left of the deadline
        self.deadline.watch(self.sock)


class _WatchedTLSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: _Deadline, tls: ssl.SSLContext, **kwargs):
        super().__init__(*args, context=tls, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        super().connect()  # CPython bounds the whole TLS handshake by the socket timeout (what is left)
        self.deadline.watch(self.sock)


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self.deadline = deadline

    def http_open(self, req):  # noqa: ANN001 - urllib's signature
        return self.do_open(_WatchedConnection, req, deadline=self.deadline)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self.deadline = deadline

    def https_open(self, req):  # noqa: ANN001 - urllib's signature
        return self.do_open(_WatchedTLSConnection, req, deadline=self.deadline, tls=TLS_CONTEXT)


TLS_CONTEXT = ssl.create_default_context()
"""How the judge checks an https endpoint's certificate (the system's trusted authorities)."""


JUDGE_PROMPT = """You grade answers to questions. You get a question, its ground truth answer and a prediction.
Take the ground truth as correct. Give "score" 1 when the prediction answers the question with what the ground
truth says, else 0:
- a prediction that is unsure, does not answer the question, or contradicts itself scores 0;
- when the ground truth is a number, the prediction must give almost exactly that number (rounding allowed);
- when the ground truth is a set of items, the prediction must give exactly those items;
- a concise and correct summary of the ground truth, or an accepted other name for it, scores 1.
Reply with one JSON object and nothing else: {"score": 0 or 1, "explanation": "<as short as possible>"}."""


class JudgeError(RuntimeError):
    """The endpoint refused the requests (after the retries), or answered with no chat completion."""


@dataclass(frozen=True)
class JudgeVerdict:
    correct: bool | None
    """None: the answer held no score of 0 or 1."""
    explanation: str
    cached: bool


def read_prompt(path: str) -> str:
    """The system prompt in a file: a CRAG `prompts/templates.py` (by its `.py` suffix) gives INSTRUCTIONS + "\\n"
    + IN_CONTEXT_EXAMPLES, read as string literals with `ast`; any other file is the prompt itself (UTF-8)."""
    try:
        data = read_small_file(path, MAX_PROMPT_BYTES)
    except OSError as e:  # (no errno: a FIFO, device or folder, refused without waiting on it)
        raise SourceError(path, f"the judge prompt cannot be read from it ({e.strerror or 'not a regular file'})"
                          ) from None
    if data is None:
        raise SourceError(path, f"larger than {MAX_PROMPT_BYTES:,} bytes, the most a judge prompt file may hold")
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as open()'s text mode reads it
    except UnicodeDecodeError as e:
        raise SourceError(path, invalid_utf8(data, e.start) + "; the judge prompt is read as UTF-8 text") from None
    if not path.endswith(".py"):
        if not text.strip():
            raise SourceError(path, "the judge prompt is empty")
        return text
    try:
        module = ast.parse(text, filename=path)
    except SyntaxError as e:
        raise SourceError(path, f"not Python a templates.py can be read from ({e.msg}, line {e.lineno})") from None
    found = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in TEMPLATE_CONSTANTS:
                if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                    raise SourceError(path, f"{name} must be a string literal (the file is read as data, never run)",
                                      line=node.lineno)
                found[name] = node.value.value
    missing = [name for name in TEMPLATE_CONSTANTS if name not in found]
    if missing:
        raise SourceError(path, f"no string constant {' or '.join(missing)} (expected CRAG's prompts/templates.py)")
    return found["INSTRUCTIONS"] + "\n" + found["IN_CONTEXT_EXAMPLES"]


def user_message(question: str, ground_truth: str, prediction: str) -> str:
    """The user turn, in the form of CRAG's local_evaluation.py."""
    return f"Question: {question}\n Ground truth: {ground_truth}\n Prediction: {prediction}\n"


_SCORE = re.compile(r'"score"\s*:\s*(\d+)')
ACCURACY = {True: True, "true": True, False: False, "false": False}
"""The starter kit's `accuracy` values (of the lower-cased reply) and what they mean."""


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a hostile reply nested deeper than the parser goes is no verdict
        return None


def last_block(text: str) -> str | None:
    """The last match of CRAG's `re.findall(r"{([^}]*)}", ...)` (with its braces), found in linear time: each match
    runs from the first "{" after the previous one to the next "}"."""
    block, at = None, 0
    while (start := text.find("{", at)) != -1 and (end := text.find("}", start)) != -1:
        block, at = text[start:end + 1], end + 1
    return block


def parse_verdict(content: str) -> tuple[bool | None, str]:
    """(correct, explanation) from a reply in either official form (see the module docstring); None when it holds
    neither a score of 0 or 1 nor an accuracy of true or false."""
    block = last_block(content)
    match = _SCORE.search(block) if block else None
    score = (match.group(1).lstrip("0") or "0") if match else None  # its value as int() reads it, without int()
    if score in ("0", "1"):
        data = _json(content)
        explanation = str(data.get("explanation", "")) if isinstance(data, dict) else block
        return score == "1", explanation
    data = _json(content.lower())
    if isinstance(data, dict):
        accuracy = data.get("accuracy")
        if isinstance(accuracy, (bool, str)) and accuracy in ACCURACY:
            return ACCURACY[accuracy], content
    return None, content


CHAT_PATH = "/chat/completions"


def chat_url(url: str) -> str:
    """The chat completions URL of `url` (a base such as http://host/v1, or the full .../chat/completions, either
    with a query such as ?api-version=...): the path completed before the query, any #fragment dropped. UsageError
    for anything but an http(s) URL of printable ASCII, or one holding a user name or password (`user:pass@`, which
    urllib would not send): the key goes in an environment variable (API_KEY_VARIABLES)."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--judge-url must be an http(s) URL, got {preview(redacted_url(url))}")
    if any(not "!" <= c <= "~" for c in url):  # (http.client refuses such a URL with the URL, query values and all)
        raise UsageError(f"--judge-url must be printable ASCII without spaces (percent-encode the rest), got "
                         f"{preview(redacted_url(url))}")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        raise UsageError(f"--judge-url is not a URL ({e}), got {preview(redacted_url(url))}") from None
    if "@" in parts.netloc:
        raise UsageError(f"--judge-url must not hold a user name or password, got {preview(redacted_url(url))}; "
                         f"give the API key in {' or '.join(API_KEY_VARIABLES)}")
    path = parts.path if parts.path.rstrip("/").endswith(CHAT_PATH) else parts.path.rstrip("/") + CHAT_PATH
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def redacted_url(url: str) -> str:
    """`url` as messages and reports show it: a user name and password, each query value and the #fragment
    replaced by `<redacted>` (any of them may be a secret: `?api-key=...`), the rest as given."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # ("http://[::1/v1": an unclosed IPv6 address) all but the scheme may hold a secret
        return url.partition("://")[0] + "://<redacted>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "<redacted>@" + netloc.rpartition("@")[2]
    fields = (field.partition("=") for field in parts.query.split("&")) if parts.query else ()
    query = "&".join(name + "=<redacted>" if sep else "<redacted>" for name, sep, _ in fields)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, "<redacted>" if parts.fragment else ""))


def api_key() -> str | None:
    """The key of the first of API_KEY_VARIABLES set (None: none is). UsageError, naming the variable but never
    showing the key, for one an HTTP header cannot carry as it is: a character beyond Latin-1, a space or a control
    character (a line break would end the header early)."""
    variable = next((v for v in API_KEY_VARIABLES if os.environ.get(v)), None)
    if variable is None:
        return None
    key = os.environ[variable]
    for position, char in enumerate(key, start=1):
        if not ("!" <= char <= "~" or "\xa1" <= char <= "\xff"):
            kind = ("a line break" if char in "\r\n" else "a space" if char.isspace() else
                    "a control character" if char < "\xa1" else f"U+{ord(char):04X} (beyond Latin-1)")
            raise UsageError(f"{variable} holds {kind} at character {position} of {len(key)}, which an HTTP header "
                             "cannot carry as it is: give the key exactly as issued")
    return key


class Judge:
    """Asks `model` at `url` (a base such as http://host/v1, or the full .../chat/completions) for verdicts."""

    def __init__(self, url: str, model: str, cache_dir: str, *, prompt: str = JUDGE_PROMPT, retries: int = RETRIES,
                 retry_wait: float = 1.0, timeout: float = TIMEOUT_SECONDS):
        self.url = chat_url(url)
        self.shown_url = redacted_url(self.url)
        """The endpoint as every message and report shows it: its query values hidden."""
        self.model, self.prompt, self.cache_dir = model, prompt, cache_dir
        check_limits(timeout, retries)
        self.retries, self.retry_wait, self.timeout = retries, retry_wait, timeout
        self.requests = 0
        """HTTP requests made (retries included)."""
        self.cache_hits = 0
        self.api_key = api_key()

    def describe(self) -> str:
        """What decides the verdicts, for a report: the model, the endpoint (`shown_url`) and the system prompt
        (its sha256)."""
        digest = hashlib.sha256(self.prompt.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self._name()} with system prompt sha256 {digest}"

    def _name(self) -> str:
        """The judge as its errors name it."""
        return f"{self.model} at {self.shown_url}"

    def _cache_path(self, question: str, ground_truth: str, prediction: str) -> str:
        # the whole URL, query included: a file's name is a digest, so no secret in the URL is written in clear
        key = json.dumps([self.url, self.model, self.prompt, question, ground_truth, prediction], ensure_ascii=False)
        return os.path.join(self.cache_dir, hashlib.sha256(key.encode("utf-8")).hexdigest() + ".json")

    def verdict(self, question: str, ground_truth: str, prediction: str) -> JudgeVerdict:
        """The judge's verdict on one (question, ground truth, prediction); the reply comes from the cache when it
        holds one (a reply is cached as given, parsed or not: the same request at temperature 0 is not repeated),
        with every piece of the API key in it blanked first (`without_key`, which also sees through JSON escapes):
        neither the cache nor an explanation holds the key, however the reply encoded it."""
        path = self._cache_path(question, ground_truth, prediction)
        content = self._cached(path)
        cached = content is not None
        if cached:
            self.cache_hits += 1
            content = without_key(content, self.api_key)  # (a file an older ragloaders wrote)
        else:
            content = self._ask(user_message(question, ground_truth, prediction))
            self._store(path, {"model": self.model, "reply": content})
        correct, explanation = parse_verdict(content)
        return JudgeVerdict(correct, without_key(explanation, self.api_key), cached=cached)

    @staticmethod
    def _cached(path: str) -> str | None:
        """The reply cached at `path`, or None when there is none we wrote: a file edited into anything else (not
        a regular file, larger than a reply can be, not our JSON) is asked again and replaced."""
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return None
            with open(path, "rb") as f:
                raw = f.read(MAX_CACHE_BYTES + 1)
        except OSError:
            return None
        try:
            data = _json(raw.decode("utf-8")) if len(raw) <= MAX_CACHE_BYTES else None
        except UnicodeDecodeError:
            return None
        content = data.get("reply") if isinstance(data, dict) else None
        return content if isinstance(content, str) else None

    def _store(self, path: str, value: dict) -> None:
        make_folders(self.cache_dir)
        handle, partial = tempfile.mkstemp(dir=self.cache_dir, suffix=".incomplete")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False)
            os.replace(partial, path)
        finally:
            if os.path.lexists(partial):
                os.unlink(partial)

    def _ask(self, user: str) -> str:
        body = json.dumps({
            "model": self.model, "temperature": 0, "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": self.prompt}, {"role": "user", "content": user}],
        }).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.retry_wait * attempt)
            self.requests += 1
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            deadline = _Deadline(self.timeout)
            opener = urllib.request.build_opener(_NoRedirect, _WatchedHTTP(deadline), _WatchedHTTPS(deadline))
            try:
                with opener.open(request, timeout=deadline.remaining()) as response:
                    raw = _read_by(response, deadline.at)
                if len(raw) > MAX_REPLY_BYTES:
                    raise JudgeError(f"judge {self._name()}: a reply larger than {MAX_REPLY_BYTES:,} bytes")
                reply = json.loads(raw)
                content = reply["choices"][0]["message"]["content"]
                if not isinstance(content, str):
                    raise TypeError(content)
                return without_key(content, self.api_key)  # (cached and shown: a server may echo the key in it)
            except urllib.error.HTTPError as e:
                if 300 <= e.code < 400:
                    raise JudgeError(f"judge {self._name()}: answered with a redirect (HTTP {e.code}), which is "
                                     "not followed; give the endpoint's own URL") from None
                problem = f"HTTP {e.code} {self._server_words(e.reason)}"
                if e.code not in RETRY_STATUS:
                    break
            except (OSError, http.client.HTTPException) as e:  # URLError, timeouts, resets, a socket shut down
                problem = (f"no answer within the timeout of {self.timeout:g} s" if deadline.passed() else
                           f"no answer ({self._server_words(getattr(e, 'reason', e))})")
            except (ValueError, RecursionError, KeyError, IndexError, TypeError):  # (a reply nested 100k deep)
                raise JudgeError(f"judge {self._name()}: the reply is not a chat completion "
                                 "(choices[0].message.content)") from None
            finally:
                deadline.cancel()
        raise JudgeError(f"judge {self._name()}: {problem} after {attempt + 1} request(s)")

    def _server_words(self, text: object) -> str:
        """A server's words (a hostile one may echo the Authorization header) on one line, with every run of
        KEY_PIECE or more characters of the API key blanked first, then cut to MAX_REASON_CHARS characters."""
        return _one_line(without_key(str(text)[:64 << 10], self.api_key))


_JSON_ESCAPE = re.compile(r'\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|["\\/bfnrt])')
"""One escape of a JSON string, a surrogate pair as one; matched left to right, as a JSON parser reads them."""
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescaped(escape: re.Match) -> str:
    """The one character a `_JSON_ESCAPE` match stands for."""
    text = escape.group()
    if text[1] != "u":
        return _ESCAPED[text[1]]
    if len(text) == 12:  # a surrogate pair
        return chr(0x10000 + ((int(text[2:6], 16) - 0xD800) << 10) + int(text[8:12], 16) - 0xDC00)
    return chr(int(text[2:6], 16))


def without_key(text: str, key: str | None) -> str:
    """`text` with every run of at least KEY_PIECE characters (or the whole key, if shorter) that also occurs in
    `key` replaced by `<key>`: the key, any prefix or piece of it, however the server cut it, as it is or written
    with JSON escapes (`\\u0073k-...`, a surrogate pair, `\\/`): a reply is JSON that is decoded before its
    explanation is shown, and its cached copy decodes to what it held."""
    if not key:
        return text
    width = min(KEY_PIECE, len(key))
    pieces = {key[i:i + width] for i in range(len(key) - width + 1)}
    decoded = _JSON_ESCAPE.sub(_unescaped, text) if "\\" in text else text
    if not any(piece in text or piece in decoded for piece in pieces):  # (C scans: a whole reply in milliseconds)
        return text
    hidden = _pieces_in(text, pieces, width)
    if decoded != text:  # each character of the decoded text hidden hides what it was written as
        hidden_decoded, at, raw_at = _pieces_in(decoded, pieces, width), 0, 0
        for escape in _JSON_ESCAPE.finditer(text):
            literal = escape.start() - raw_at
            for i in range(literal):
                hidden[raw_at + i] = hidden[raw_at + i] or hidden_decoded[at + i]
            if hidden_decoded[at + literal]:
                hidden[escape.start():escape.end()] = [True] * (escape.end() - escape.start())
            at, raw_at = at + literal + 1, escape.end()
        for i in range(len(text) - raw_at):
            hidden[raw_at + i] = hidden[raw_at + i] or hidden_decoded[at + i]
    out, i = [], 0
    while i < len(text):
        if hidden[i]:
            while i < len(text) and hidden[i]:
                i += 1
            out.append("<key>")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _pieces_in(text: str, pieces: set[str], width: int) -> list[bool]:
    """For each character of `text`, whether it is in a run of `width` characters that is one of `pieces`."""
    hidden = [False] * len(text)
    for i in range(len(text) - width + 1):
        if text[i:i + width] in pieces:
            hidden[i:i + width] = [True] * width
    return hidden


def check_limits(timeout: float, retries: int, typed: tuple[str | None, str | None] = (None, None)) -> None:
    """UsageError unless the timeout is a positive number of seconds, at most MAX_TIMEOUT_SECONDS (a larger one
    overflows the socket's and the timer's clocks), and the retries a count (0 or more); the message shows what was
    typed on the command line (`typed`: the text of --judge-timeout and --judge-retries, None for a value given in
    Python) or a preview of the value."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise limit_error("--judge-timeout", timeout if typed[0] is None else typed[0])
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise limit_error("--judge-retries", retries if typed[1] is None else typed[1])


LIMIT_RULES = {"--judge-timeout": f"a positive number of seconds, at most {MAX_TIMEOUT_SECONDS} (a day)",
               "--judge-retries": "a whole number, 0 or more"}


def limit_error(option: str, given: object) -> UsageError:
    """What `option` (a key of LIMIT_RULES) must be, and a preview of what was `given`."""
    return UsageError(f"{option} must be {LIMIT_RULES[option]}, got {preview(given)}")


def _read_by(response, deadline: float) -> bytes:  # noqa: ANN001 - an http.client.HTTPResponse
    """The body, at most MAX_REPLY_BYTES + 1 bytes of it, read whole before `deadline` (else TimeoutError)."""
    chunks, size = [], 0
    while size <= MAX_REPLY_BYTES:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply did not arrive whole within the timeout")
        chunk = response.read1(min(READ_CHUNK, MAX_REPLY_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if time.monotonic() >= deadline:  # the end came from the socket being shut down at the deadline
        raise TimeoutError("the reply did not arrive whole within the timeout")
    return b"".join(chunks)


def _one_line(text: object) -> str:
    """Words on one line, shortened (the CLI prints errors in one line)."""
    return " ".join(str(text).split())[:MAX_REASON_CHARS]
