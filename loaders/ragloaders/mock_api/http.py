"""`ragloaders serve crag/mock_kg`: the official mock API server's endpoints over HTTP (FastAPI + uvicorn, the
official stack; the `[serve]` extra), answered by MockKg.

Same paths, request bodies (pydantic models with the official ones' field names, types and defaults: module
validation's, the very models the in-process client validates with), status codes (422 with
FastAPI's body for a malformed body) and JSON as the official server; `GET /` answers its "running" message.
Handlers are coroutines answering in the event loop, as the official server's are (no thread hop per call; a long
call delays the next, as there).
"""

from __future__ import annotations

import errno
import socket
import sys
from typing import Any

from .endpoints import ENDPOINTS, ROOT_MESSAGE, Endpoint, MockKg
from .validation import body_model, values_of


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
    """The FastAPI application answering every endpoint from `kg`."""
    from fastapi import FastAPI

    app = FastAPI(title="CRAG mock API (ragloaders)", description="CRAG's mock API answered from a crag/mock_kg build")

    @app.get("/")
    async def root():
        return ROOT_MESSAGE

    for endpoint in ENDPOINTS:
        app.post(endpoint.path, name=endpoint.client_method)(_route(kg, endpoint))
    return app


def check_port(host: str, port: int) -> None:
    """OSError with one clear line when `host:port` cannot be bound (in use, or not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            reason = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
            raise OSError(e.errno, f"{host}:{port} {reason}; pick another with --port") from None


def serve(kg: MockKg, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Answer on http://host:port until interrupted (Ctrl-C stops it cleanly)."""
    import uvicorn

    check_port(host, port)
    config = uvicorn.Config(create_app(kg), host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    print(f"CRAG mock API listening on http://{host}:{port} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    server.run()
