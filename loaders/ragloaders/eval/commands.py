"""What `ragloaders eval` runs for its three kinds of input: a retrieval run (`--run`), an mmRAG routing run
(`--routing`) and CRAG answer predictions (`--predictions`). Each gives a report with `text()`, `as_json()`
and `warnings()`."""

from __future__ import annotations

import argparse
import os

from ..core.errors import UsageError
from ..core.output_target import check_output
from ..core.user_cache import user_cache_dir
from .crag_answers import AnswerReport, score_answers
from .judge import RETRIES, TIMEOUT_SECONDS, Judge, check_limits, limit_error, read_prompt
from .report import EvalReport, evaluate, evaluate_routing

ANSWER_OPTIONS = ("tokenizer", "judge_url", "judge_model", "judge_prompt", "judge_cache", "judge_timeout",
                  "judge_retries", "verdicts", "missing_as_idk")
"""Options that only apply to --predictions."""


def judge_from(args: argparse.Namespace) -> Judge | None:
    """The judge `--judge-url` and `--judge-model` ask for (both or neither)."""
    if bool(args.judge_url) != bool(args.judge_model):
        raise UsageError("--judge-url and --judge-model go together")
    if not args.judge_url:
        given = [f"--{name.replace('_', '-')}" for name in ("judge_prompt", "judge_timeout", "judge_retries")
                 if getattr(args, name)]
        if given:
            raise UsageError(f"{', '.join(given)} need(s) --judge-url and --judge-model")
        return None
    limits = judge_limits(args.judge_timeout, args.judge_retries)
    if args.judge_cache:  # a folder the user names follows the rules of every writer (never the data or cache dir)
        check_output(args.judge_cache, kind="folder", data_dir=args.data_dir, cache_dir=args.cache_dir,
                     option="--judge-cache", source=args.path)
    cache = os.path.expanduser(args.judge_cache) if args.judge_cache else user_cache_dir("judge")
    prompt = {"prompt": read_prompt(args.judge_prompt)} if args.judge_prompt else {}
    return Judge(args.judge_url, args.judge_model, cache, **prompt, **limits)


def judge_limits(timeout: str | None, retries: str | None) -> dict:
    """`Judge`'s `timeout` and `retries` from `--judge-timeout SECONDS` and `--judge-retries N` as typed (defaults
    TIMEOUT_SECONDS and RETRIES); a UsageError in one line for anything but a positive number of seconds and a
    whole number of retries, 0 or more."""
    try:
        seconds = float(timeout) if timeout is not None else TIMEOUT_SECONDS
    except ValueError:
        raise limit_error("--judge-timeout", timeout) from None
    try:
        count = int(retries) if retries is not None else RETRIES
    except ValueError:
        raise limit_error("--judge-retries", retries) from None
    check_limits(seconds, count, (timeout, retries))
    return {"timeout": seconds, "retries": count}


def run_eval(args: argparse.Namespace) -> EvalReport | AnswerReport:
    """The report `ragloaders eval` prints for the parsed arguments."""
    where = {"data_dir": args.data_dir, "cache_dir": args.cache_dir}
    if args.predictions_file is None:
        used = [f"--{name.replace('_', '-')}" for name in ANSWER_OPTIONS if getattr(args, name)]
        if used:
            raise UsageError(f"{', '.join(used)} apply to CRAG answers (--predictions) only")
    if args.predictions_file is not None and args.revision is not None:
        raise UsageError("--revision applies to --run and --routing; --predictions scores a benchmark path by its "
                         "authors' rules")
    if args.run_file is None and args.keep_identical_ids:
        raise UsageError("--keep-identical-ids applies to --run; --routing ranks datasets, --predictions scores "
                         "answers")
    if args.routing_file is not None:
        if args.metrics or args.relevance_level is not None:
            raise UsageError("--metrics and --relevance-level apply to --run; routing uses the authors' measures")
        return evaluate_routing(args.path, args.routing_file, split=args.split or "test", per_query=args.per_query,
                                benchmark=args.benchmark, revision=args.revision, **where)
    if args.predictions_file is not None:
        if args.metrics or args.relevance_level is not None or args.per_query:
            raise UsageError("--metrics, --relevance-level and --per-query apply to runs; answers are written per "
                             "record with --verdicts")
        if args.verdicts is not None:  # the rules every writer follows: a new file, never in the data or cache dir
            check_output(args.verdicts, kind="file", data_dir=args.data_dir, cache_dir=args.cache_dir,
                         option="--verdicts", source=args.path)
        report = score_answers(args.path, args.predictions_file, split=args.split, tokenizer=args.tokenizer,
                               judge=judge_from(args), missing_as_idk=args.missing_as_idk, **where)
        if args.verdicts is not None:
            report.write_verdicts(args.verdicts)
        return report
    return evaluate(args.path, args.run_file, split=args.split or "test", metrics=args.metrics,
                    relevance_level=args.relevance_level, per_query=args.per_query, benchmark=args.benchmark,
                    revision=args.revision, keep_identical_ids=args.keep_identical_ids, **where)
