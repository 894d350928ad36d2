"""The `ragloaders` command: list, build, validate, push, eval, bm25, serve."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import __version__
from .api import configs_of, registry
from .core.errors import MissingSourceError, SourceError
from .mock_api import command as mock_api_command

DATA_DIR_HELP = ("a folder holding the benchmark's files as it distributes them: the archive (e.g. nfcorpus.zip) or "
                 "its extracted files; default: download them")
EXAMPLES = {
    "list": ["ragloaders list"],
    "build": ["ragloaders build beir/scifact --out scifact",
              "ragloaders build crag/task_1_and_2 --data-dir ~/crag --out crag12"],
    "validate": ["ragloaders validate beir/arguana",
                 "ragloaders validate mmrag --data-dir ~/mmrag --json",
                 "ragloaders validate ./scifact            # a built folder",
                 "ragloaders validate mteb/scifact          # a hub repository (network)"],
    "push": ["ragloaders push beir/scifact --repo-id my-org/scifact --dry-run"],
    "eval": ["ragloaders eval beir/scifact --run bm25.trec --metrics ndcg@10"],
    "bm25": ["ragloaders bm25 beir/scifact --out bm25.trec"],
    "serve": mock_api_command.EXAMPLES,
}
"""One or more command lines per subcommand, shown at the end of its --help."""


def cmd_list(args: argparse.Namespace) -> int:
    """`ragloaders list`: one line per path: path, configs (the one a built folder loads without a config name marked
    `(default)`), size, and `bring your own` for the datasets whose files a user must obtain. Returns 0.

    Example: `ragloaders list` prints `beir/nfcorpus  corpus queries qrels  3,633 docs; 2.4 MB download`."""
    from .publish.cards import DEFAULT_CONFIG
    from .publish.listing import path_size, supplied_by_user

    for path in registry():
        mark = "\tbring your own: " + supplied_by_user(path) if supplied_by_user(path) else ""
        configs = " ".join(f"{c} (default)" if c == DEFAULT_CONFIG else c for c in configs_of(path))
        print(f"{path}\t{configs}\t{path_size(path)}{mark}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """`ragloaders build PATH --out FOLDER`: every config of PATH as Parquet plus a README.md dataset card
    (`publish.build.build_folder`); prints each config's split sizes. Returns 0; errors are raised (SourceError,
    MissingSourceError, ValueError) and `main` prints them (exit 2).

    Example: `ragloaders build beir/scifact --out scifact`, then `datasets.load_dataset("scifact", "qrels")`."""
    from .publish.build import build_folder

    outputs = build_folder(args.path, args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
                           num_proc=args.num_proc, into_existing=args.into_existing, **derived_configs(args))
    for output in outputs:
        for split in output.splits.values():
            print(f"{output.name}\t{split.name}\t{split.num_examples} rows")
    print(f"wrote {args.out}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """`ragloaders validate TARGET`: the integrity report of a benchmark path (from its source files), or of a
    built folder or hub repository in BEIR / mteb layout (from its Parquet); `--json` for JSON
    (`publish.validate.run`). Returns 0 when there is no structural error, 1 otherwise; `main` prints raised errors
    (unknown path with "did you mean", missing files) and returns 2.

    Example: `ragloaders validate crag/task_1_and_2 --data-dir ~/crag`; `ragloaders validate ./scifact`."""
    from .publish.validate import run

    return run(args.path, data_dir=args.data_dir, cache_dir=args.cache_dir, as_json=args.json)


def cmd_push(args: argparse.Namespace) -> int:
    """`ragloaders push PATH --repo-id ORG/NAME`: build into a staging folder and upload what changed
    (`publish.push.push`); `--dry-run` stops after staging. Returns 0; errors are raised and printed by `main`.

    Example: `ragloaders push beir/scifact --repo-id my-org/scifact --private`."""
    from .publish.push import push

    result = push(args.path, args.repo_id, data_dir=args.data_dir, cache_dir=args.cache_dir, num_proc=args.num_proc,
                  private=args.private, revision=args.revision, commit_message=args.commit_message,
                  staging_dir=args.staging_dir, dry_run=args.dry_run, into_existing=args.into_existing)
    if not args.dry_run:
        print(f"{args.repo_id}: {len(result.uploaded)} files uploaded, {len(result.unchanged)} already there, "
              f"{len(result.deleted)} stale files deleted, {len(result.commits)} commits")
    return 0


# --- eval and bm25 (ragloaders.eval, the `eval` extra) ----------------------------------------------------------


def cmd_eval(args: argparse.Namespace) -> int:
    """Score a run against a path's qrels; the report as text or JSON on stdout (warnings also on stderr)."""
    from .eval import evaluate

    try:
        report = evaluate(args.path, args.run_file, split=args.split, metrics=args.metrics,
                          relevance_level=args.relevance_level, per_query=args.per_query, data_dir=args.data_dir,
                          cache_dir=args.cache_dir)
    except (ImportError, OSError) as e:  # the extra is missing; the run file or --out folder is not there
        print(f"ragloaders: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), indent=1, ensure_ascii=False))
        for warning in report.warnings():
            print(f"ragloaders: warning: {warning}", file=sys.stderr)
    else:
        print(report.text())
    return 0


def cmd_bm25(args: argparse.Namespace) -> int:
    """Write the BM25 baseline run of a path."""
    from .eval import bm25

    try:
        result = bm25(args.path, out=args.out, split=args.split, top_k=args.top_k, data_dir=args.data_dir,
                      cache_dir=args.cache_dir)
    except (ImportError, OSError) as e:  # the extra is missing; the run file or --out folder is not there
        print(f"ragloaders: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {result.out}: {result.lines} lines for {result.queries} {result.split} queries "
          f"({result.settings.describe()}, top {args.top_k})")
    return 0


def derived_configs(args: argparse.Namespace) -> dict:
    """`build_folder`'s extra_tables and extra_notes for `build --with top_ranked,hard_negatives`."""
    wanted = [name.strip() for name in (args.with_configs or "").split(",") if name.strip()]
    if not wanted:
        return {}
    from .eval import RERANKING_CONFIGS, reranking_description, reranking_tables

    unknown = [name for name in wanted if name not in RERANKING_CONFIGS]
    if unknown:
        raise ValueError(f"--with: unknown config(s) {', '.join(unknown)}; choose from {', '.join(RERANKING_CONFIGS)}")
    try:
        tables = reranking_tables(args.path, data_dir=args.data_dir, cache_dir=args.cache_dir)
    except ImportError as e:
        raise ValueError(str(e)) from None
    notes = reranking_description()
    return {"extra_tables": {name: tables[name] for name in wanted},
            "extra_notes": {name: notes[name] for name in wanted}}


def add_eval_commands(commands: argparse._SubParsersAction) -> None:
    """`ragloaders eval` and `ragloaders bm25`."""
    evaluate = commands.add_parser("eval", help="score a run (TREC, .parquet or .jsonl) against a path's qrels")
    evaluate.add_argument("path", help="e.g. beir/scifact, beir/cqadupstack (mean of its 12 forums), mmrag")
    evaluate.add_argument("--run", required=True, dest="run_file",
                          help="TREC run (qid Q0 docid rank score tag), or a .parquet / .jsonl table of query-id, "
                               "corpus-id, score")
    evaluate.add_argument("--metrics", help="comma-separated, e.g. ndcg@10,recall@100 (default: BEIR's set)")
    evaluate.add_argument("--per-query", action="store_true", help="also print every query's values")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--relevance-level", type=int,
                          help="binary measures count grade >= this (default: the benchmark's, 1)")
    evaluate.set_defaults(run=cmd_eval)
    baseline = commands.add_parser("bm25", help="write the BM25 baseline run (title + text) of a path")
    baseline.add_argument("path", help="e.g. beir/nfcorpus, beir/cqadupstack, mmrag, crag/task_1_and_2")
    baseline.add_argument("--out", required=True, help="run file: TREC, or a table if it ends in .parquet / .jsonl")
    baseline.add_argument("--top-k", type=int, default=1000, help="documents per query (default 1000)")
    baseline.set_defaults(run=cmd_bm25)
    for command in (evaluate, baseline):
        command.add_argument("--split", default="test", help="qrels (or queries) split (default test)")
        command.add_argument("--data-dir", help=DATA_DIR_HELP)
        command.add_argument("--cache-dir", help="datasets cache folder")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ragloaders", description=__doc__)
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    root.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = root.add_subparsers(dest="command", required=True)

    commands.add_parser("list", help="every path with its configs").set_defaults(run=cmd_list)

    build = commands.add_parser("build", help="write a hub-ready folder (Parquet + README.md)")
    build.add_argument("path", help="e.g. beir/scifact, crag/task_1_and_2, mmrag")
    build.add_argument("--out", required=True, help="output folder: a new one, or one ragloaders built (only the files "
                       "it wrote are replaced; see --into-existing)")
    build.add_argument("--with", dest="with_configs", metavar="CONFIGS",
                       help="also build top_ranked,hard_negatives (BM25 top 100; needs the eval extra)")
    build.set_defaults(run=cmd_build)

    validate = commands.add_parser(
        "validate", help="counts, dangling and shared ids, duplicates, score histogram; exit 1 on structural errors"
    )
    validate.add_argument("path", help="a benchmark path (beir/arguana), a built folder (README.md + Parquet), or a "
                                       "hub repo id org/name (network): any repository in BEIR / mteb layout")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.set_defaults(run=cmd_validate)

    push = commands.add_parser("push", help="build into a staging folder and upload it to a hub dataset repo")
    push.add_argument("path", help="e.g. beir/scifact")
    push.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repository")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--revision", help="branch to commit to (created if missing); default main")
    push.add_argument("--commit-message", help="message of the commits (numbered k/n)")
    push.add_argument("--staging-dir", help="where to build; default ~/.cache/ragloaders/staging/<repo>/<path>")
    push.add_argument("--dry-run", action="store_true", help="stop after staging; print what would be uploaded")
    push.set_defaults(run=cmd_push)

    add_eval_commands(commands)
    mock_api_command.add_serve_command(commands)

    for command in (build, validate, push):
        command.add_argument("--data-dir", help=DATA_DIR_HELP)
        command.add_argument("--cache-dir", help="datasets cache folder")
    for command in (build, push):
        command.add_argument("--num-proc", type=int, help="processes for large files")
        command.add_argument("--into-existing", action="store_true",
                             help="let the folder be an existing one that ragloaders did not write: the build is "
                                  "added beside its files, none of which is changed or deleted (a build that would "
                                  "write where one of them is stops)")
    for name, command in commands.choices.items():
        if name in EXAMPLES:
            command.epilog = "example:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])
            command.formatter_class = argparse.RawDescriptionHelpFormatter
    root.epilog = "examples:\n" + "\n".join(f"  {lines[0]}" for lines in EXAMPLES.values()) + (
        "\n\n`ragloaders COMMAND --help` shows each command's options and examples.")
    root.formatter_class = argparse.RawDescriptionHelpFormatter
    for command in commands.choices.values():  # --debug after the command too
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `ragloaders` command line (`argv`: the arguments, default `sys.argv[1:]`); returns the exit status:
    0 success, 1 `validate` found structural errors, 2 an error (printed as one line on stderr), 130 interrupted
    (Ctrl-C: one line too). `--help` and `--version` exit through SystemExit, as argparse does.

    Example: `main(["validate", "beir/nfcorpus", "--data-dir", "tests/data/beir"])` returns 0."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except Exception as e:  # one line a user can act on; the traceback only with --debug
        if args.debug:
            raise
        known = isinstance(e, (SourceError, MissingSourceError, ValueError, OSError))
        message = str(e) if known else f"{type(e).__name__}: {e} (--debug shows where)"
        print(f"ragloaders: error: {' '.join(message.splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("ragloaders: interrupted; an output folder keeps its previous complete build, and a rerun resumes "
              "from what was finished", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
