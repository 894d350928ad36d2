"""The `ragloaders` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

from . import __version__
from .api import catalogue_path, configs_of, normalized
from .benchmarks import BENCHMARKS
from .core import progress
from .core.errors import MissingSourceError, PageError, SourceError, UsageError
from .core.log import show_warnings_on_stderr, warn
from .core.plural import counted
from .core.preview import one_line
from .lookup import command as lookup_command
from .mock_api import command as mock_api_command

USERS_ERRORS = (UsageError, SourceError, MissingSourceError, PageError, OSError, ImportError)
"""Errors about the user's input, files or machine (ImportError: an extra not installed; PageError: a page past its
bounds), printed as one line; any other exception (a plain ValueError included) is a bug of ragloaders, printed with
the hint that --debug shows its traceback."""
BUG_MESSAGE_CHARS = 1_000
"""Characters of an unexpected exception's message the one line shows at most (--debug shows all of it)."""
SOURCE_HELP = ("a benchmark path (beir/scifact; with --data-dir or a download), a folder `ragloaders build` wrote "
               "(./scifact), or a hub dataset repository id in ragloaders' or mteb's layout (org/name; with "
               "HF_HUB_OFFLINE=1 its copy in the hub cache)")
AS_HELP = ("the benchmark path whose conventions score a folder or repository whose card does not name one (any "
           "repository ragloaders did not build), e.g. --as beir/scifact for mteb/scifact")
REVISION_HELP = ("a hub repository's commit, branch or tag to read (default its main branch); the commit read is "
                 "reported")
DATA_DIR_HELP = ("a folder holding the benchmark's files as it distributes them: the archive (e.g. nfcorpus.zip) or "
                 "its extracted files; default: download them")
EXAMPLES = {
    "list": ["ragloaders list"],
    "build": ["ragloaders build beir/scifact --out scifact",
              "ragloaders build crag/task_1_and_2 --data-dir ~/crag --out crag12",
              "ragloaders build beir-format --data-dir my_corpus/ --out my_corpus_hub --license cc-by-4.0"],
    "validate": ["ragloaders validate beir/arguana",
                 "ragloaders validate beir/cqadupstack      # a group: each of its 12 forums",
                 "ragloaders validate mmrag --data-dir ~/mmrag --json",
                 "ragloaders validate ./scifact            # a built folder",
                 "ragloaders validate mteb/scifact          # a hub repository (network)",
                 "ragloaders validate mteb/scifact --as beir/scifact   # scifact's declared defects apply",
                 "ragloaders validate my-org/scifact --revision v1     # a commit, branch or tag; the commit is named"],
    "push": ["ragloaders push beir/scifact --repo-id my-org/scifact --dry-run",
             "ragloaders push ./scifact --repo-id my-org/scifact    # a built folder, as it is"],
    "eval": ["ragloaders eval beir/scifact --run bm25.trec --metrics ndcg@10",
             "ragloaders eval ./scifact --run bm25.trec             # a built folder",
             "ragloaders eval mteb/scifact --as beir/scifact --run bm25.trec",
             "ragloaders eval mmrag --run bm25.trec               # the paper's ranx measures, then BEIR's",
             "ragloaders eval mmrag --routing routing.jsonl",
             "ragloaders eval crag/task_1_and_2 --predictions pred.jsonl --tokenizer tokenizer.json"],
    "bm25": ["ragloaders bm25 beir/scifact --out bm25.trec",
             "ragloaders bm25 beir/scifact --multifield --out bm25-mf.trec   # Pyserini's multifield condition",
             "ragloaders bm25 ./scifact --out bm25.trec"],
    "serve": mock_api_command.EXAMPLES,
    **lookup_command.EXAMPLES,
}
"""One or more command lines per subcommand, shown at the end of its --help."""


def cmd_list(args: argparse.Namespace) -> int:
    """`ragloaders list`: one line per path: path, configs (the one a built folder loads without a config name marked
    `(default)`), size, and `bring your own` for the datasets whose files a user must obtain. Returns 0.

    Example: `ragloaders list` prints `beir/nfcorpus  corpus queries qrels  3,633 docs; 2.4 MB download`."""
    from .api import default_config, group_members
    from .publish.listing import path_size, supplied_by_user

    groups_shown = set()
    for benchmark in BENCHMARKS:
        for path in benchmark.builders:
            group = path.rsplit("/", 1)[0]
            if group not in groups_shown and (members := group_members(group)):
                groups_shown.add(group)
                print(f"{group}\ta group of {len(members)} paths (validate, bm25 and eval take it; load and build "
                      "take one of them)")
            obtain = supplied_by_user(benchmark, path)
            mark = "\tbring your own: " + obtain if obtain else ""
            configs = " ".join(f"{c} (default)" if c == default_config(path) else c for c in configs_of(path))
            print(f"{path}\t{configs}\t{path_size(benchmark, path)}{mark}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """`ragloaders build PATH --out FOLDER`: every config of PATH as Parquet plus a README.md dataset card
    (`publish.build.build_folder`); prints each config's split sizes. Returns 0; errors are raised (SourceError,
    MissingSourceError, ValueError) and `main` prints them (exit 2).

    Example: `ragloaders build beir/scifact --out scifact`, then `datasets.load_dataset("scifact", "qrels")`."""
    from .publish.build import build_folder

    outputs = build_folder(args.path, args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
                           num_proc=args.num_proc, into_existing=args.into_existing, card=card_options(args),
                           load_as=args.out, config_kwargs=config_kwargs(args), configs=source_configs(args),
                           **derived_configs(args))
    for output in outputs:
        for split in output.splits.values():
            print(f"{output.name}\t{split.name}\t{counted(split.num_examples, 'row')}")
    print(f"wrote {args.out}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """`ragloaders validate TARGET`: the integrity report of a benchmark path (from its source files), or of a
    built folder or hub repository in BEIR / mteb layout (from its Parquet); `--json` for JSON; `--as PATH` names
    the benchmark of a folder or repository whose card does not (`publish.source_commands.validate_source`).
    Returns 0 when there is no structural error, 1 otherwise; `main` prints raised errors (unknown path with "did
    you mean", missing files) and returns 2.

    Example: `ragloaders validate crag/task_1_and_2 --data-dir ~/crag`; `ragloaders validate ./scifact`."""
    from .publish.source_commands import validate_source

    as_path = normalized(args.benchmark) if args.benchmark is not None else None
    return validate_source(args.path, data_dir=args.data_dir, cache_dir=args.cache_dir, as_json=args.json,
                           as_path=as_path, revision=args.revision)


def cmd_push(args: argparse.Namespace) -> int:
    """`ragloaders push SOURCE --repo-id ORG/NAME`: a benchmark path is built into a staging folder and what changed
    uploaded (`publish.push.push`); a folder ragloaders built is uploaded as it is once it verifies against its
    manifest (`publish.source_commands.push_folder`). The token and the hub are checked before any build.
    `--dry-run` stops before any request. The repository keeps `.ragloaders-manifest.json`, the files ragloaders
    published there: only those are replaced or deleted as stale; a push that would overwrite any other file stops
    before sending anything unless `--overwrite-foreign`. Returns 0; errors are raised and printed by `main`.

    Example: `ragloaders push beir/scifact --repo-id my-org/scifact --private`; `ragloaders push ./scifact ...`."""
    from .benchmarks import benchmark_of
    from .publish.cards import check_options
    from .publish.push import Derived, push
    from .publish.source_commands import is_folder_source, push_folder, require_token_and_hub

    if is_folder_source(args.path):
        if (args.data_dir or args.staging_dir or args.into_existing or args.license or args.pretty_name
                or args.with_configs):
            raise UsageError(f"{args.path}: --data-dir, --staging-dir, --into-existing, --license, --pretty-name and "
                             "--with are for a benchmark path; a built folder is pushed as it is")
        result = push_folder(args.path, args.repo_id, private=args.private, revision=args.revision,
                             commit_message=args.commit_message, dry_run=args.dry_run,
                             overwrite_foreign=args.overwrite_foreign)
    else:
        options = card_options(args)
        if options.given():  # refused before the token is asked for
            configs_of(args.path)  # (an unknown path is its one-line error, not a KeyError of benchmark_of)
            check_options(benchmark_of(args.path), args.path, options)
        wanted = derived_names(args)
        if not args.dry_run:
            require_token_and_hub(args.repo_id)
        result = push(args.path, args.repo_id, data_dir=args.data_dir, cache_dir=args.cache_dir,
                      num_proc=args.num_proc, private=args.private, revision=args.revision,
                      commit_message=args.commit_message, staging_dir=args.staging_dir, dry_run=args.dry_run,
                      into_existing=args.into_existing, overwrite_foreign=args.overwrite_foreign, card=options,
                      derived=Derived(wanted, lambda: derived_configs(args)) if wanted else None)
    if not args.dry_run:
        print(f"{args.repo_id}: {counted(len(result.uploaded), 'file')} uploaded, {len(result.unchanged)} already "
              f"there, {counted(len(result.deleted), 'stale file')} deleted, {counted(len(result.commits), 'commit')}")
    return 0


# --- eval and bm25 (ragloaders.eval, the `eval` extra) ----------------------------------------------------------


def cmd_eval(args: argparse.Namespace) -> int:
    """Score a run, a routing run (mmRAG) or answer predictions (CRAG); the report as text or JSON on stdout
    (warnings also on stderr)."""
    from .eval.commands import run_eval

    report = run_eval(args)
    if args.json:
        print(json.dumps(report.as_json(), indent=1, ensure_ascii=False))
        for warning in report.warnings():
            warn(warning)
    else:
        print(report.text())
    return 0


def cmd_bm25(args: argparse.Namespace) -> int:
    """Write the BM25 baseline run of a path."""
    from .eval import Bm25Settings, bm25

    result = bm25(args.path, out=args.out, split=args.split, top_k=args.top_k, data_dir=args.data_dir,
                  cache_dir=args.cache_dir, benchmark=args.benchmark, revision=args.revision,
                  settings=Bm25Settings(multifield=args.multifield))
    print(f"wrote {result.out}: {counted(result.lines, 'line')} for {result.queries} {result.split} "
          f"{'query' if result.queries == 1 else 'queries'}, "
          f"{result.unranked} of which got no document (no word in common with any) "
          f"({result.settings.describe()}, top {args.top_k})" + (f"; read {result.read}" if result.read else ""))
    return 0


def listed(names: str | None) -> list[str] | None:
    """`A,B` (`--configs`) as a list of names; None when the option is not given."""
    return None if names is None else [name.strip() for name in names.split(",") if name.strip()]


def source_configs(args: argparse.Namespace) -> list[str] | None:
    """The configs `build --configs A,B` asks for; one that `--with` makes (top_ranked, hard_negatives) is a one-line
    UsageError saying so, not "unknown config"."""
    names = listed(args.configs)
    if not names:
        return names
    from .eval import RERANKING_CONFIGS
    from .eval.data import conventions_of

    declared = configs_of(args.path)  # (CRAG has a `top_ranked` of its own, from its search results)
    made_by_with = [name for name in names if name in RERANKING_CONFIGS and name not in declared]
    conventions = conventions_of(args.path) if made_by_with else None
    if made_by_with and not (conventions.unlabelled or conventions.mean_over):  # else --with refuses the path too
        made = ",".join(made_by_with)
        raise UsageError(f"--configs: {made} {'is' if len(made_by_with) == 1 else 'are'} not built from the source of "
                         f"{args.path} but made by --with (`ragloaders build {args.path} --with {made}`; --configs "
                         "names the source's configs to build beside it)")
    return names


def card_options(args: argparse.Namespace):
    """What `--license` and `--pretty-name` state on the card of the user's own data (beir-format)."""
    from .publish.cards import CardOptions

    return CardOptions(license=args.license, pretty_name=args.pretty_name)


def builder_parameters() -> dict[str, list[str]]:
    """Every config parameter a path's builder takes (`load(path, config, release="v4")`) -> the paths taking it,
    as each benchmark declares them (no builder imported)."""
    found: dict[str, list[str]] = {}
    for benchmark in BENCHMARKS:
        for name in benchmark.builder_parameters:
            found.setdefault(name, []).extend(benchmark.builders)
    return found


def config_kwargs(args: argparse.Namespace) -> dict:
    """The config parameters given on the command line (`--release v4`), for the builders; one the path's builder
    does not take is a UsageError naming the option and the paths that do."""
    given = {}
    for name, paths in builder_parameters().items():
        if getattr(args, name, None) is not None:
            if normalized(args.path) not in paths:
                option = "--" + name.replace("_", "-")
                raise UsageError(f"{option} is a parameter of {', '.join(sorted(set(paths)))}; {args.path} takes "
                                 "none of that name")
            given[name] = getattr(args, name)
    return given


def derived_names(args: argparse.Namespace) -> list[str]:
    """The configs `--with top_ranked,hard_negatives` asks for; an unknown one is a ValueError."""
    wanted = [name.strip() for name in (args.with_configs or "").split(",") if name.strip()]
    if not wanted:
        return []
    from .eval import RERANKING_CONFIGS

    unknown = [name for name in wanted if name not in RERANKING_CONFIGS]
    if unknown:
        raise UsageError(f"--with: unknown config(s) {', '.join(unknown)}; choose from {', '.join(RERANKING_CONFIGS)}")
    return wanted


def derived_configs(args: argparse.Namespace) -> dict:
    """`build_folder`'s extra_tables and extra_notes for `build --with top_ranked,hard_negatives`."""
    wanted = derived_names(args)
    if not wanted:
        return {}
    from .eval import reranking_description, reranking_tables

    try:
        tables = reranking_tables(args.path, data_dir=args.data_dir, cache_dir=args.cache_dir)
    except ImportError as e:
        raise UsageError(str(e)) from None
    notes = reranking_description()
    return {"extra_tables": {name: tables[name] for name in wanted},
            "extra_notes": {name: notes[name] for name in wanted}}


def add_eval_commands(commands: argparse._SubParsersAction) -> None:
    """`ragloaders eval` and `ragloaders bm25`."""
    evaluate = commands.add_parser("eval", help="score a run against a path's qrels (mmRAG: also a routing run; "
                                                "CRAG: answer predictions)")
    evaluate.add_argument("path", metavar="SOURCE", help=SOURCE_HELP + "; beir/cqadupstack: the mean of its 12 forums")
    scored = evaluate.add_mutually_exclusive_group(required=True)
    scored.add_argument("--run", dest="run_file", metavar="RUN",
                        help="TREC run (qid Q0 docid rank score tag), or a .parquet / .jsonl table of query-id, "
                             "corpus-id, score")
    scored.add_argument("--routing", dest="routing_file", metavar="RUN",
                        help="mmRAG: a run ranking the five source datasets per query (TREC, or .parquet / .jsonl "
                             "of query-id, dataset, score)")
    scored.add_argument("--predictions", dest="predictions_file", metavar="PRED",
                        help="CRAG: answers as .jsonl, .csv or .parquet with interaction_id, prediction")
    evaluate.add_argument("--metrics", help="comma-separated, e.g. ndcg@10,recall@100 (default: BEIR's set)")
    evaluate.add_argument("--per-query", action="store_true", help="also print every query's values")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--keep-identical-ids", action="store_true",
                          help="BEIR and beir-format: score a retrieved document whose id is its query's (by default "
                               "dropped, as BEIR's EvaluateRetrieval and Pyserini's --remove-query do)")
    evaluate.add_argument("--relevance-level", type=int,
                          help="binary measures count grade >= this (default: the benchmark's, 1)")
    answers = evaluate.add_argument_group("CRAG answers (--predictions)")
    answers.add_argument("--tokenizer", metavar="JSON",
                         help="tokenizer.json of CRAG's Llama-2 tokenizer: predictions are cut to 75 tokens as CRAG "
                              "does (default: not cut, and the report says so)")
    answers.add_argument("--judge-url", help="OpenAI-compatible endpoint (e.g. https://api.openai.com/v1) that judges "
                                             "what no exact rule settles; key from RAGLOADERS_JUDGE_API_KEY or "
                                             "OPENAI_API_KEY")
    answers.add_argument("--judge-model", help="the judge's model name (with --judge-url)")
    answers.add_argument("--judge-prompt", help="the judge's system prompt: a text file, or CRAG's "
                                                "prompts/templates.py (its string constants, read, never run)")
    answers.add_argument("--judge-cache", help="folder of cached verdicts (default ~/.cache/ragloaders/judge)")
    answers.add_argument("--judge-timeout", metavar="SECONDS", help="how long one judge request may take, from "
                         "connecting to the reply's last byte (default 120)")
    answers.add_argument("--judge-retries", metavar="N", help="how many times a failed judge request is sent again "
                         "(default 3; 0: never)")
    answers.add_argument("--verdicts", metavar="FILE",
                         help="write every record's verdict and reason as JSONL to this new file")
    answers.add_argument("--missing-as-idk", action="store_true",
                         help="count records without a prediction as missing, and only report predictions for "
                              "unknown ids (default: both are errors)")
    evaluate.set_defaults(run=cmd_eval)
    baseline = commands.add_parser("bm25", help="write the BM25 baseline run (title + text) of a path")
    baseline.add_argument("path", metavar="SOURCE", help=SOURCE_HELP + "; beir/cqadupstack: each forum, ids "
                          "prefixed `<forum>/`")
    baseline.add_argument("--out", required=True, help="run file: TREC, or a table if it ends in .parquet / .jsonl")
    baseline.add_argument("--top-k", type=int, default=1000, help="documents per query (default 1000)")
    baseline.add_argument("--multifield", action="store_true",
                          help="Pyserini's multifield condition: title and text as two fields, each with its own BM25 "
                               "statistics, scores summed (default: flat, title + text as one field)")
    baseline.set_defaults(run=cmd_bm25)
    evaluate.add_argument("--split", help="split to score (default test; CRAG answers: every split)")
    baseline.add_argument("--split", default="test", help="queries split (default test)")
    for command in (evaluate, baseline):
        command.add_argument("--as", dest="benchmark", metavar="PATH", help=AS_HELP)
        command.add_argument("--data-dir", help=DATA_DIR_HELP)
        command.add_argument("--cache-dir", help="datasets cache folder")
        command.add_argument("--revision", help=REVISION_HELP)


class OneLineErrors(argparse.ArgumentParser):
    """argparse, its errors as the command line's others: one line, `ragloaders: error: ...`, exit 2 (its usage
    block is what `--help` shows)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ragloaders: error: {one_line(message, BUG_MESSAGE_CHARS)} (`{self.prog} --help` shows the "
                     "usage)\n")


def parser() -> argparse.ArgumentParser:
    root = OneLineErrors(prog="ragloaders", description=__doc__)
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    root.add_argument("--debug", action="store_true", help="show the traceback of an error")
    root.add_argument("--quiet", action="store_true", help="no progress bars (they are off anyway when stderr is "
                                                          "not a terminal)")
    commands = root.add_subparsers(dest="command", required=True)

    commands.add_parser("list", help="every path with its configs").set_defaults(run=cmd_list)

    build = commands.add_parser("build", help="write a hub-ready folder (Parquet + README.md)")
    build.add_argument("path", help="e.g. beir/scifact, crag/task_1_and_2, mmrag")
    build.add_argument("--out", required=True, help="output folder: a new one, or one ragloaders built (only the files "
                       "it wrote are replaced; see --into-existing)")
    build.add_argument("--configs", metavar="A,B", help="build only these configs (comma-separated; default all), "
                       "reading only their files, e.g. crag/mock_kg --configs finance_price,finance_company")
    for name, paths in builder_parameters().items():
        build.add_argument(f"--{name.replace('_', '-')}", dest=name,
                           help=f"config parameter of {', '.join(paths)} (as `ragloaders.load(..., {name}=...)`)")
    build.set_defaults(run=cmd_build)

    validate = commands.add_parser(
        "validate", help="counts, dangling and shared ids, duplicates, score histogram; exit 1 on structural errors"
    )
    validate.add_argument("path", metavar="SOURCE", help=SOURCE_HELP + "; beir/cqadupstack: each of its forums")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.add_argument("--as", dest="benchmark", metavar="PATH",
                          help="the benchmark path whose declared defects and keys apply to a folder or repository "
                               "whose card does not name one, e.g. --as beir/scifact for mteb/scifact")
    validate.add_argument("--revision", help=REVISION_HELP)
    validate.set_defaults(run=cmd_validate)

    push = commands.add_parser("push", help="upload a built folder as it is, or build a path into a staging folder "
                                            "and upload that, to a hub dataset repo")
    push.add_argument("path", metavar="SOURCE", help="a benchmark path (beir/scifact), or a folder `ragloaders build` "
                                                     "wrote (uploaded as it is, after checking its manifest)")
    push.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repository")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--revision", help="branch to commit to (created if missing); default main")
    push.add_argument("--commit-message", help="message of the commits (numbered k/n)")
    push.add_argument("--staging-dir", help="where to build; default ~/.cache/ragloaders/staging/<repo>/<path>")
    push.add_argument("--dry-run", action="store_true", help="stop after staging; print what would be uploaded")
    push.add_argument("--overwrite-foreign", action="store_true",
                      help="replace files of the repository that ragloaders did not publish there (by default a "
                           "push that would overwrite one stops before sending anything)")
    push.set_defaults(run=cmd_push)

    add_eval_commands(commands)
    mock_api_command.add_serve_command(commands)
    lookup_command.add_lookup_commands(commands)

    for command in (build, validate, push):
        command.add_argument("--data-dir", help=DATA_DIR_HELP)
        command.add_argument("--cache-dir", help="datasets cache folder")
    for command in (build, push):
        command.add_argument("--with", dest="with_configs", metavar="CONFIGS",
                             help="also build top_ranked,hard_negatives (BM25 top 100; needs the eval extra)")
        command.add_argument("--num-proc", type=int, help="processes for large files")
        command.add_argument("--into-existing", action="store_true",
                             help="let the folder be an existing one that ragloaders did not write: the build is "
                                  "added beside its files, none of which is changed or deleted (a build that would "
                                  "write where one of them is stops)")
        command.add_argument("--license", help="beir-format only: the hub licence id of your data (e.g. cc-by-4.0); "
                                               "default unknown")
        command.add_argument("--pretty-name", help="beir-format only: the card's title (default: the folder's name)")
    for name, command in commands.choices.items():
        if name in EXAMPLES:
            command.epilog = "example:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])
            command.formatter_class = argparse.RawDescriptionHelpFormatter
    root.epilog = "examples:\n" + "\n".join(f"  {lines[0]}" for lines in EXAMPLES.values()) + (
        "\n\n`ragloaders COMMAND --help` shows each command's options and examples.")
    root.formatter_class = argparse.RawDescriptionHelpFormatter
    root.description = f"{__doc__.rstrip('.')}: {', '.join(commands.choices)}."
    for command in commands.choices.values():  # --debug and --quiet after the command too
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        command.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `ragloaders` command line (`argv`: the arguments, default `sys.argv[1:]`); returns the exit status:
    0 success, 1 `validate` found structural errors, 2 an error (printed as one line on stderr; with `--debug` its
    traceback first), 130 interrupted (Ctrl-C: one line too), 141 (128 + SIGPIPE, as a shell reports a command its
    reader stopped) when what reads its output closed it (`| head`), with nothing printed. `--help` and `--version`
    exit through SystemExit, as argparse does.

    Example: `main(["validate", "beir/nfcorpus", "--data-dir", "tests/data/beir"])` returns 0."""
    args = parser().parse_args(argv)
    if getattr(args, "path", None) is not None:
        args.path = catalogue_path(args.path)
    show_warnings_on_stderr()
    out_existed = args.command == "build" and os.path.lexists(args.out)
    try:
        with progress_bars(shown=not args.quiet and sys.stderr.isatty()), datasets_read_errors_hidden(not args.debug):
            return args.run(args)
    except Exception as e:  # one line a user can act on; the traceback only with --debug
        if isinstance(e, BrokenPipeError) and output_closed():
            return 141
        if args.debug:
            traceback.print_exc()
        if isinstance(e, USERS_ERRORS):
            message = str(e)
        else:  # a third party's words may hold a value of any size
            message = f"{type(e).__name__}: {one_line(e, BUG_MESSAGE_CHARS)}" + ("" if args.debug else
                                                                                " (--debug shows where)")
        print(f"ragloaders: error: {' '.join(message.splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print(f"ragloaders: interrupted{interrupted_note(args, out_existed)}", file=sys.stderr)
        return 130


def output_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll reports an error on it); if so, stdout is pointed at
    os.devnull, so that the interpreter's own flush at exit does not fail on it again."""
    import select

    try:
        descriptor = sys.stdout.fileno()
        watch = select.poll()
        watch.register(descriptor, select.POLLOUT)
        closed = any(events & select.POLLERR for _, events in watch.poll(0))
        if closed:
            os.dup2(os.open(os.devnull, os.O_WRONLY), descriptor)
        return closed
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture), no poll (Windows)
        return False


DATASETS_PARQUET_LOGGER = "datasets.packaged_modules.parquet.parquet"


@contextlib.contextmanager
def datasets_read_errors_hidden(hidden: bool) -> Iterator[None]:
    """While a command runs (`hidden`: not with --debug), without the line datasets logs for a data file it fails
    to read ("Failed to read file ... with error ..."): the error it raises is the command's one line, which names
    the file (`hub_repository.unreadable_parquet`)."""
    if not hidden:
        yield
        return
    logger = logging.getLogger(DATASETS_PARQUET_LOGGER)

    def keep(record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR and record.getMessage().startswith("Failed to read file"))

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


@contextlib.contextmanager
def progress_bars(shown: bool) -> Iterator[None]:
    """While a command runs: none of datasets' bars (one per split, config and shard: "Generating train split"...),
    and, when `shown`, ragloaders' own line per build (`Building PATH`) and huggingface_hub's download bars, which
    share one switch, and a line while a large source file is read (core.progress); after it, all as they were.
    `shown` is False with --quiet and when stderr is not a terminal: a log or a pipe gets no bars to clutter it.
    A library the command imports only while it runs (most commands need neither at start) reads the same switches
    from its environment variables then, set for the command's duration."""
    import huggingface_hub.utils  # noqa: F401  (cheap; its switch, unlike its variable, can be turned back on after)

    sources_before = progress.show(shown)
    with library_bars("datasets", "HF_DATASETS_DISABLE_PROGRESS_BARS", True), \
            library_bars("huggingface_hub", "HF_HUB_DISABLE_PROGRESS_BARS", not shown):
        try:
            yield
        finally:
            progress.show(sources_before)


@contextlib.contextmanager
def library_bars(library: str, variable: str, disabled: bool) -> Iterator[None]:
    """While the block runs, `library`'s progress bars (datasets' or huggingface_hub's) off when `disabled`: through
    its own switch, restored after the block, when it is imported already; else through `variable`, the
    environment variable it reads when it is imported, set for the block only (the library then keeps its bars
    off, as that variable has priority over its switch). A variable the user set is left as it is: it has the
    last word either way."""
    if not disabled or (library not in sys.modules and variable in os.environ):
        yield
        return
    if library not in sys.modules:
        os.environ[variable] = "1"
        try:
            yield
        finally:
            del os.environ[variable]
        return
    switch_bars, enabled_before = bar_switch(library)
    switch_bars(False)
    try:
        yield
    finally:
        if enabled_before:
            switch_bars(True)


def bar_switch(library: str) -> tuple[Callable[[bool], None], bool]:
    """(a function turning `library`'s progress bars on (True) or off, whether they are on now), for datasets or
    huggingface_hub, both imported already."""
    if library == "datasets":
        import datasets.utils.logging as datasets_logging

        return (lambda on: datasets_logging.enable_progress_bar() if on else datasets_logging.disable_progress_bar(),
                datasets_logging.is_progress_bar_enabled())
    import huggingface_hub.utils as hub_utils

    return (lambda on: hub_utils.enable_progress_bars() if on else hub_utils.disable_progress_bars(),
            not hub_utils.are_progress_bars_disabled())


def interrupted_note(args: argparse.Namespace, out_existed: bool) -> str:
    """What a Ctrl-C left behind, as the rest of the `interrupted` line: a build's output folder is swapped in whole
    (publish.output_folder), so it holds the previous complete build, or the new one, or, for a first build, does
    not exist yet; the configs prepared in a `--cache-dir` stay there for a rerun, while a build without one
    prepares in a private folder that goes with it (publish.build_cache)."""
    rerun = ("a rerun resumes from the configs already prepared" if getattr(args, "cache_dir", None)
             else "a rerun prepares the configs again (with --cache-dir a rerun resumes from those prepared)")
    if args.command == "build" and not out_existed and os.path.lexists(args.out):  # only a complete one appears
        return f"; {args.out} holds the new build, complete: it was swapped in before the interrupt"
    if args.command == "build" and out_existed:
        return (f"; {args.out} holds a complete build (its previous one, or the new one if it was already swapped "
                f"in), and {rerun}")
    if args.command == "build":
        return f"; {args.out} was not created (a build appears there only once complete), and {rerun}"
    if args.command == "push":
        return ("; the staging folder holds a complete build or none yet (a build appears there only once complete), "
                "and a rerun uploads only the files the repository does not hold yet")
    return ""


if __name__ == "__main__":
    sys.exit(main())
