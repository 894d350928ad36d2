"""What the tests' local HTTP servers (on 127.0.0.1) share: answering a request with one whole body."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def send_body(handler: BaseHTTPRequestHandler, body: bytes, *, status: int = 200,
              content_type: str = "application/json") -> None:
    """Answer `handler`'s request with `status` and `body`, its type and length in the headers."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
