"""`ragloaders serve crag/mock_kg`: the official mock API server's endpoints over HTTP (FastAPI + uvicorn, the
official stack; the `[serve]` extra), answered by MockKg.

Same paths, request bodies (pydantic models with the official ones' field names, types and defaults: module
validation's, the very models the in-process client validates with), status codes (422 with
FastAPI's body for a malformed body) and JSON as the official server; `GET /` answers its "running" message. A 422
is the in-process client's: FastAPI's, except that a list lists at most validation.MAX_ERRORS errors (then one saying
how many more) and a NaN or infinite number the body held is null (FastAPI answered it 500: JSON has neither).
Handlers are coroutines answering in the event loop, as the official server's are (no thread hop per call; a long
call delays the next, as there).

Bounds the official server does not set (each a declared difference): a request body over MAX_BODY_BYTES is answered
413 before it is parsed (one body of tens of MB, validated and then echoed whole in a 422, held every other client
for a minute); at most MAX_CONNECTIONS connections and calls at once, any more answered 503 (a client holding a
thousand idle connections used up the process's file descriptors, no one was answered and the log grew by megabytes
a second; now a connection past that many is closed at once, one whose request line and headers have not arrived
within REQUEST_SECONDS is closed, `bounded_protocol`, and one whose body has not all arrived REQUEST_SECONDS after
them is answered 408 and closed, `BodyLimit`); a shutdown waits SHUTDOWN_SECONDS for the calls under way, not for a
client that stopped sending.
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import sys
from typing import Any

from ..core.errors import SourceError
from .endpoints import ENDPOINTS, ROOT_MESSAGE, Endpoint, MockKg
from .validation import body_model, reported, values_of


def missing_stack() -> str | None:
    """A one-line hint when FastAPI or uvicorn is not installed, else None."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        return f"ragloaders serve needs FastAPI and uvicorn ({e}); install them with: pip install 'ragloaders[serve]'"
    return None


def _route(kg: MockKg, endpoint: Endpoint) -> Any:
    model = body_model(endpoint)
    if model is None:
        async def answer_empty():  # (no return annotation: FastAPI would validate the answer against it)
            return kg.answer(endpoint, [])

        return answer_empty

    async def answer(body: Any):  # (no return annotation: FastAPI would validate the answer against it)
        return kg.answer(endpoint, values_of(endpoint, body))

    answer.__annotations__ = {"body": model}  # FastAPI reads the body model from the annotation
    return answer


def create_app(kg: MockKg) -> Any:
    """The FastAPI application answering every endpoint from `kg`. A call that meets a damaged value of the build (a
    SourceError) is answered 500 with that error's one line as `detail`, and the line goes to stderr; the server
    goes on answering."""
    from fastapi import FastAPI
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    app = FastAPI(title="CRAG mock API (ragloaders)", description="CRAG's mock API answered from a crag/mock_kg build")

    @app.exception_handler(RequestValidationError)
    async def malformed_body(request: Any, error: RequestValidationError) -> Any:
        # FastAPI's own handler, with the errors bounded and made JSON as the in-process client's (`reported`)
        return JSONResponse(status_code=422, content={"detail": jsonable_encoder(reported(list(error.errors())))})

    @app.exception_handler(SourceError)
    async def damaged_build(request: Any, error: SourceError) -> Any:
        print(f"ragloaders serve: {request.url.path}: {error}", file=sys.stderr, flush=True)
        return JSONResponse(status_code=500, content={"detail": str(error)})

    @app.get("/")
    async def root():
        return ROOT_MESSAGE

    for endpoint in ENDPOINTS:
        app.post(endpoint.path, name=endpoint.client_method)(_route(kg, endpoint))
    return app


MAX_BODY_BYTES = 1 << 20
"""A request body's size at most (the largest call, a list of game ids, is a few KB)."""
MAX_CONNECTIONS = 256
"""Connections and calls at once at most (uvicorn's limit_concurrency); more are answered 503."""
ACCEPTED_AT_ONCE = 64
"""The listening socket's backlog, which is also how many connections asyncio accepts at one wake: the ones past
MAX_CONNECTIONS are closed before the next wake, so a burst of connections never holds more than a few hundred
file descriptors (with uvicorn's 2,048, one burst took all 1,024 and asyncio logged a traceback per refused accept)."""
REQUEST_SECONDS = 10
"""How long a connection may take to send a request's line and headers (`bounded_protocol`), and then the whole of
its body (`BodyLimit`)."""
SHUTDOWN_SECONDS = 3
"""How long Ctrl-C or SIGTERM waits for the calls under way before it closes their connections."""


class BodyLimit:
    """ASGI middleware: the body of an HTTP request is read (up to `limit` bytes) before the application sees it, and
    a request whose Content-Length or body is over `limit` is answered 413 without being parsed; one whose body has
    not all come REQUEST_SECONDS after its headers, 408 (and its connection closed)."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await self._too_large(send)
            return
        body = bytearray()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REQUEST_SECONDS  # for the whole body: a byte every few seconds held it for good
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:  # a body that stopped coming, or comes too slowly
                await self._answer(send, 408, f"the request body did not all come within {REQUEST_SECONDS} s")
                return
            except asyncio.CancelledError:  # shut down while the client was still sending: no call was made
                await self._answer(send, 503, "the server is stopping")
                return
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > self.limit:  # (a chunked body declares no length)
                await self._too_large(send)
                return
            if not message.get("more_body"):
                break
        given = False

        async def replayed() -> dict:
            nonlocal given
            if given:
                return await receive()
            given = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replayed, send)

    async def _too_large(self, send: Any) -> None:
        await self._answer(send, 413, f"request body over {self.limit:,} bytes")

    @staticmethod
    async def _answer(send: Any, status: int, words: str) -> None:
        detail = json.dumps({"detail": words}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(detail)),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": detail})


def bounded_protocol(base: type) -> type:
    """uvicorn's HTTP protocol class `base` with two bounds it lacks: a connection past MAX_CONNECTIONS is closed as
    soon as it is accepted (uvicorn's limit counts requests, so idle connections held file descriptors until none
    was left), and one whose next request has not begun (its line and headers all there) REQUEST_SECONDS after it
    was accepted or answered is closed (uvicorn times only a silent connection between two requests: one byte a
    connection, 256 of them, kept everyone else out for good)."""

    class Bounded(base):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > MAX_CONNECTIONS:
                transport.close()
            else:
                self._expect_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._expect_request()

        def _expect_request(self) -> None:
            self.loop.call_later(REQUEST_SECONDS, self._close_if_no_request, self.cycle)

        def _close_if_no_request(self, waited_since: Any) -> None:
            if self.cycle is waited_since and not self.transport.is_closing():  # no request began meanwhile
                self.transport.close()

    return Bounded


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (port 0: one the system picks), or OSError with one clear line when it
    cannot be bound (in use, or not an address of this machine). Bound before the tables are opened, and handed to
    the server: no other process can take the port in between."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(ACCEPTED_AT_ONCE)
    except OSError as e:
        listening.close()
        reason = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
        raise OSError(e.errno, f"{host}:{port} {reason}; pick another with --port") from None
    return listening


def bounded_server(kg: MockKg) -> Any:
    """The uvicorn server `serve` runs (its `run(sockets=[...])` answers until interrupted): `kg`'s app behind
    BodyLimit, with bounded_protocol and the limits above."""
    import uvicorn

    # (log level "error": uvicorn warns once per connection refused over the limit, a log as long as the attack)
    config = uvicorn.Config(BodyLimit(create_app(kg)), log_level="error", access_log=False,
                            limit_concurrency=MAX_CONNECTIONS, timeout_graceful_shutdown=SHUTDOWN_SECONDS,
                            backlog=ACCEPTED_AT_ONCE)
    config.load()
    config.http_protocol_class = bounded_protocol(config.http_protocol_class)
    return uvicorn.Server(config)


def serve(kg: MockKg, listening: socket.socket) -> None:
    """Answer on `listening` (`bound_socket`) until interrupted (Ctrl-C or SIGTERM stops it cleanly)."""
    host, port = listening.getsockname()[:2]
    server = bounded_server(kg)
    print(f"CRAG mock API listening on http://{host}:{port} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    server.run(sockets=[listening])
