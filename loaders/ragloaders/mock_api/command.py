"""The `ragloaders serve` subcommand."""

from __future__ import annotations

import argparse
import sys

from ..api import normalized
from ..core.errors import UsageError
from ..core.preview import preview
from ..publish.swap import sigterm_as_interrupt

PATH = "crag/mock_kg"
EXAMPLES = ["ragloaders serve crag/mock_kg --from ./crag_mock_kg --port 8000",
            "ragloaders serve crag/mock_kg --data-dir ~/CRAG/mock_api/cragkg   # built first into the cache"]


def cmd_serve(args: argparse.Namespace) -> int:
    """Open the build (or build `--data-dir` first), then answer on http://HOST:PORT until Ctrl-C. Errors are
    raised (SourceError, ValueError, OSError for a port in use) and `main` prints them in one line."""
    if normalized(args.path) != PATH:
        raise UsageError(f"ragloaders serve answers CRAG's mock API, path {PATH}; got {preview(args.path)}")
    from .http import bound_socket, missing_stack, serve

    hint = missing_stack()
    if hint:
        raise UsageError(hint)
    with bound_socket(args.host, args.port) as listening:  # before the tables are opened: a port in use fails at once
        from .client import CragMockAPI

        api = CragMockAPI(args.source, data_dir=args.data_dir, cache_dir=args.cache_dir, revision=args.revision)
        if api.commit:
            print(f"ragloaders serve: {args.source} at commit {api.commit}", file=sys.stderr, flush=True)
        try:
            with sigterm_as_interrupt():  # (uvicorn shuts down on either, then raises the signal again)
                serve(api.kg, listening)
        except KeyboardInterrupt:
            pass
    print("ragloaders serve: stopped", file=sys.stderr)
    return 0


def add_serve_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`ragloaders serve crag/mock_kg (--from FOLDER_OR_REPO | --data-dir CRAGKG) [--host] [--port]`."""
    serve = commands.add_parser("serve", help="answer CRAG's mock API (the official server's endpoints) over HTTP "
                                              "from a crag/mock_kg build")
    serve.add_argument("path", help=PATH)
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", metavar="FOLDER_OR_REPO",
                        help="a folder built by `ragloaders build crag/mock_kg`, or a hub repository id holding one")
    source.add_argument("--data-dir", help="CRAG's cragkg folder of mock KG files: built first into the cache")
    serve.add_argument("--revision", help="with --from a hub repository id: its commit, branch or tag (default its "
                                          "main branch); the commit read is printed")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                          "only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000, as the official server)")
    serve.add_argument("--cache-dir", help="where builds, downloads and memory-mapped tables go "
                                           "(default ~/.cache/ragloaders)")
    serve.set_defaults(run=cmd_serve)
    return serve
