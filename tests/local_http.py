"""What the tests' local HTTP servers (on 127.0.0.1) share: serving on a thread, answering a request with one whole
body, and waiting for a server started in a child process to accept connections."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler


def serve_in_thread(server) -> threading.Thread:
    """Start `server` (a socketserver, such as a local http.server on 127.0.0.1) on a daemon thread, polling for
    `shutdown` every 0.05 s: with socketserver's default of 0.5 s, each test's shutdown waited half a second."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


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
