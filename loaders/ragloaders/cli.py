"""The `ragloaders` command: list, build, validate, push."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .api import configs_of, registry
from .core.errors import MissingSourceError, SourceError


def cmd_list(args: argparse.Namespace) -> int:
    for path in registry():
        print(f"{path}\t{' '.join(configs_of(path))}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from .publish.build import build_folder

    outputs = build_folder(args.path, args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
                           num_proc=args.num_proc)
    for output in outputs:
        for split in output.splits.values():
            print(f"{output.name}\t{split.name}\t{split.num_examples} rows")
    print(f"wrote {args.out}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .publish.validate import run

    return run(args.path, data_dir=args.data_dir, cache_dir=args.cache_dir, as_json=args.json)


def cmd_push(args: argparse.Namespace) -> int:
    from .publish.push import push

    result = push(args.path, args.repo_id, data_dir=args.data_dir, cache_dir=args.cache_dir, num_proc=args.num_proc,
                  private=args.private, revision=args.revision, commit_message=args.commit_message,
                  staging_dir=args.staging_dir, dry_run=args.dry_run)
    if not args.dry_run:
        print(f"{args.repo_id}: {len(result.uploaded)} files uploaded, {len(result.unchanged)} already there, "
              f"{len(result.deleted)} stale files deleted, {len(result.commits)} commits")
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ragloaders", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    commands.add_parser("list", help="every path with its configs").set_defaults(run=cmd_list)

    build = commands.add_parser("build", help="write a hub-ready folder (Parquet + README.md)")
    build.add_argument("path", help="e.g. beir/scifact, crag/task_1_and_2, mmrag")
    build.add_argument("--out", required=True, help="output folder")
    build.set_defaults(run=cmd_build)

    validate = commands.add_parser(
        "validate", help="counts, dangling and shared ids, duplicates, score histogram; exit 1 on structural errors"
    )
    validate.add_argument("path", help="e.g. beir/arguana")
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

    for command in (build, validate, push):
        command.add_argument("--data-dir", help="local files as the benchmark distributes them")
        command.add_argument("--cache-dir", help="datasets cache folder")
    for command in (build, push):
        command.add_argument("--num-proc", type=int, help="processes for large files")
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (SourceError, MissingSourceError, ValueError) as e:
        print(f"ragloaders: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
