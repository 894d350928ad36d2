"""The `ragloaders docs` and `ragloaders pairs` subcommands."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys

import orjson

from ..core.errors import SourceError, UsageError
from ..core.log import warn
from ..core.plural import counted
from ..core.preview import invalid_utf8
from ..core.readers.lines import UTF8_BOM
from .docstore import docs
from .id_index import shown
from .pairs import DEFAULT_TOP, MISSING, pairs

SOURCE = ("a benchmark path (beir/scifact; with --data-dir or a download), a folder `ragloaders build` wrote, or a "
          "hub dataset repository id")
EXAMPLES = {
    "docs": ["ragloaders docs beir/nfcorpus MED-10 MED-14 --data-dir ~/beir",
             "ragloaders docs ./nfcorpus PLAIN-3 --config queries",
             "ragloaders docs my-org/nfcorpus MED-10 nope --missing skip"],
    "pairs": ["ragloaders pairs beir/nfcorpus --run bm25.trec --top 100 --out pairs.parquet",
              "ragloaders pairs ./nfcorpus --from-top-ranked --top 20 --out pairs.parquet",
              "ragloaders pairs ./nfcorpus --run old-corpus.trec --missing skip --out pairs.parquet"],
}
"""Command lines shown at the end of each subcommand's --help."""


PRINTED_AT_ONCE = 16
"""Rows made and printed at a time: memory holds that many rows (a CRAG page is up to ~2 MB of HTML and text), whatever
the number of ids asked."""


def cmd_docs(args: argparse.Namespace) -> int:
    """Print the row of each ID as one JSON line, in the order given. A missing id is an error naming it (exit 2,
    nothing printed) unless `--missing skip`, which prints the rows found and names the missing ids on stderr."""
    if args.ids_from is not None:
        args.ids = [*args.ids, *ids_in(args.ids_from)]
    if not args.ids:
        raise UsageError("docs takes the ids to print: as arguments, or --ids-from FILE (one per line; - reads them "
                         "from stdin)")
    store = docs(args.path, args.config, data_dir=args.data_dir, cache_dir=args.cache_dir, revision=args.revision)
    found = store.rows_of(args.ids) >= 0
    missing = [doc_id for doc_id, hit in zip(args.ids, found.tolist()) if not hit]
    if missing and args.missing == "error":
        print(f"ragloaders: error: {store.name} has no row with _id {shown(missing[0])}"
              + (f" ({len(missing)} of the {len(args.ids)} ids asked are missing)" if len(missing) > 1 else "")
              + "; ids are compared byte for byte (--missing skip prints the others)", file=sys.stderr)
        return 2
    for start in range(0, len(args.ids), PRINTED_AT_ONCE):
        for row in store.get_many(args.ids[start:start + PRINTED_AT_ONCE]):
            if row is not None:
                print(orjson.dumps(row, default=str).decode())
    if missing:
        print(f"ragloaders: warning: {len(missing)} id(s) not in {store.name}, skipped: "
              f"{', '.join(shown(doc_id) for doc_id in missing[:10])}", file=sys.stderr)
    return 0


MAX_ID_BYTES = 16 << 20
"""Bytes of one line of --ids-from at most (an id is an id: a line longer than this is refused, not read whole)."""


def ids_in(path: str) -> list[str]:
    """The ids of a file (`-`: stdin), one per line: its bytes between line ends, decoded as UTF-8 (a CRLF line end
    is a line end, a UTF-8 BOM at the start is skipped; an empty line, a line over MAX_ID_BYTES or invalid UTF-8 is
    an error naming the line, and so is a file without any id). A command line cannot hold a NUL byte or millions of
    ids; such a file can, and so can a pipe (`--ids-from <(cut -f3 run.trec)`)."""
    name = "<stdin>" if path == "-" else path
    if os.path.isdir(path):
        raise UsageError(f"--ids-from {path}: a folder; give a file of ids, one per line, or - to read them from stdin")
    ids = []
    with (contextlib.nullcontext(sys.stdin.buffer) if path == "-" else open(path, "rb")) as stream:
        for number in itertools.count(1):
            line = stream.readline(MAX_ID_BYTES + 3)
            if not line:
                break
            if number == 1:
                line = line.removeprefix(UTF8_BOM)
            if len(line) > MAX_ID_BYTES + 2 or (len(line) > MAX_ID_BYTES and not line.endswith(b"\n")):
                raise SourceError(name, f"a line longer than {MAX_ID_BYTES:,} bytes: one id per line", line=number)
            line = line.removesuffix(b"\n").removesuffix(b"\r")
            if not line:
                raise SourceError(name, "an empty line: one id per line, and no id is empty", line=number)
            try:
                ids.append(line.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise SourceError(name, invalid_utf8(line, e.start, " of the line"), line=number) from None
    if not ids:
        raise SourceError(name, "holds no id (one per line)")
    return ids


def cmd_pairs(args: argparse.Namespace) -> int:
    """Write the reranker's input of a run (or of `--from-top-ranked`) to a new Parquet file."""
    written = pairs(args.path, args.out, run=args.run_file, from_top_ranked=args.from_top_ranked, top=args.top,
                    split=args.split, data_dir=args.data_dir, cache_dir=args.cache_dir, revision=args.revision,
                    missing=args.missing)
    labels = f"labels from {written.labels_from}" if written.labels_from else "no qrels: every label is null"
    print(f"wrote {written.out}: {counted(written.rows, 'pair')} for {counted(written.queries, 'query', 'queries')} "
          f"({labels})")
    if written.skipped_queries or written.skipped_documents:
        skipped = []
        if written.skipped_queries:
            skipped.append(f"{counted(written.skipped_queries, 'query', 'queries', grouped=True)} not in the queries "
                           f"(all their pairs; first {shown(written.first_skipped_query)})")
        if written.skipped_documents:
            skipped.append(f"{counted(written.skipped_documents, 'pair', grouped=True)} whose document is not in the "
                           f"corpus (first {shown(written.first_skipped_document)})")
        warn(f"--missing skip: skipped {' and '.join(skipped)}")
    return 0


def add_lookup_commands(commands: argparse._SubParsersAction) -> None:
    """`ragloaders docs SOURCE ID...` and `ragloaders pairs SOURCE (--run RUN | --from-top-ranked) --top K --out F`."""
    lookup = commands.add_parser("docs", help="print rows of a corpus or queries by id, one JSON line each")
    lookup.add_argument("path", metavar="SOURCE", help=SOURCE)
    lookup.add_argument("ids", metavar="ID", nargs="*", help="ids, compared byte for byte")
    lookup.add_argument("--ids-from", metavar="FILE",
                        help="also the ids of FILE, one per line (UTF-8; a CRLF line end is a line end), after those "
                             "given as arguments; - reads them from stdin")
    lookup.add_argument("--config", default="corpus", help="a config keyed by _id: corpus (default) or queries")
    lookup.add_argument("--missing", choices=("error", "skip"), default="error",
                        help="a missing id: an error, exit 2 (default), or skipped and named on stderr")
    lookup.set_defaults(run=cmd_docs)
    reranking = commands.add_parser("pairs", help="write a run's top-K (query, document) pairs with their texts and "
                                                  "qrels labels as Parquet: a reranker's input")
    reranking.add_argument("path", metavar="SOURCE", help=SOURCE)
    given = reranking.add_mutually_exclusive_group(required=True)
    given.add_argument("--run", dest="run_file", metavar="RUN",
                       help="TREC run, or a .parquet / .jsonl table of query-id, corpus-id, score")
    given.add_argument("--from-top-ranked", action="store_true",
                       help="the source's top_ranked config (e.g. a folder built with --with top_ranked)")
    reranking.add_argument("--top", type=int, default=DEFAULT_TOP,
                           help=f"documents per query (default {DEFAULT_TOP})")
    reranking.add_argument("--out", required=True, help="a new .parquet file")
    reranking.add_argument("--split", default=None,
                           help="the qrels split of the labels, and of top_ranked (default test, as eval)")
    reranking.add_argument("--missing", choices=MISSING, default="error",
                           help="a query or document of the run the source lacks: an error naming it and its line, "
                                "exit 2 (default), or skipped (its pairs left out) and counted on stderr")
    reranking.set_defaults(run=cmd_pairs)
    for command in (lookup, reranking):
        command.add_argument("--data-dir", help="a folder holding the benchmark's files as it distributes them")
        command.add_argument("--cache-dir", help="datasets cache folder (the id index is kept beside its data)")
        command.add_argument("--revision", help="a hub repository's commit, branch or tag")
