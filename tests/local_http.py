"""What the tests' local HTTP servers (on 127.0.0.1) share: serving on a thread, answering a request with one whole
body, and waiting for a server started in a child process to accept connections."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def serve_in_thread(server) -> threading.Thread:
    """Start `server` (a socketserver, such as a local http.server on 127.0.0.1) on a daemon thread, polling for
    `shutdown` every 0.05 s: with socketserver's default of 0.5 s, each test's shutdown waited half a second."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def served(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", **attributes: Any
           ) -> Iterator[ThreadingHTTPServer]:
    """A ThreadingHTTPServer of `handler` on `host` (a free port), with `attributes` set on it, served on a thread
    (`serve_in_thread`) while the block runs, then shut down and closed."""
    server = ThreadingHTTPServer((host, 0), handler)
    for name, value in attributes.items():
        setattr(server, name, value)
    serve_in_thread(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def send_body(handler: BaseHTTPRequestHandler, body: bytes, *, status: int = 200,
              content_type: str = "application/json") -> None:
    """Answer `handler`'s request with `status` and `body`, its type and length in the headers."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    """Return once 127.0.0.1:`port` accepts a connection; fail the test with the child's output if `process` ends
    first, or once `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"nothing listened on 127.0.0.1:{port} within {seconds} s"
        time.sleep(0.1)
