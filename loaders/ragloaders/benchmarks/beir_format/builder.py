"""`beir-format`: the builder of BEIR's layout on a folder the user names; its layout is what the folder holds.

`data_dir` (required) is the folder holding corpus.jsonl, queries.jsonl and qrels/<split>.tsv, or a zip holding
them at its top or in one top folder. The qrels splits are the `.tsv` files found in qrels/ (train, dev, test first,
then the others by name); other files there are not read. `metadata` is always kept as JSON text (one `metadata`
column, null for a line without one): a user's folder declares no shape, and guessing one from the lines read would
give two builds of the same kind of data different columns.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...core.errors import MissingSourceError, SourceError
from ...core.formats.beir import BeirLayoutBuilder
from ...core.formats.beir_layout import CORPUS_FILE, JSON_TEXT, QRELS_FOLDER, QUERIES_FILE, BeirLayout
from ...core.source_files import SourceFiles, open_zip
from .facts import PATH, card_facts

SPLIT_NAME = re.compile(r"\w+(\.\w+)*")
"""What `datasets` accepts as a split name; `all` it reserves for every split together."""
SPLIT_ORDER = ("train", "dev", "test")
LAYOUT = "corpus.jsonl, queries.jsonl and qrels/<split>.tsv"


def _zip_root(location: str) -> str:
    """The folder of a zip that holds corpus.jsonl: its top (""), or its one top folder that does (MissingSourceError
    naming them when several do)."""
    with open_zip(location) as archive:
        names = archive.namelist()
    if CORPUS_FILE in names:
        return ""
    roots = sorted({name.split("/")[0] for name in names if name.count("/") == 1 and name.endswith("/" + CORPUS_FILE)})
    if len(roots) > 1:
        raise MissingSourceError(f"{location}: {len(roots)} top folders hold a {CORPUS_FILE} ({', '.join(roots)}); "
                                 "a zip holds one dataset: zip one folder, or pass the extracted folder")
    return roots[0] if roots else ""


def _refuse_irregular_qrels(files: SourceFiles) -> None:
    """SourceError naming an entry of a folder's qrels/ with a `.tsv` name that is not a regular file (a folder, a
    FIFO, a device, a socket, a dangling link): it would be no split, silently. (A zip holds only files and folders,
    and its folders are not files_in's.)"""
    folder = files.display(QRELS_FOLDER)
    if files.is_zip or not os.path.isdir(folder):
        return
    for name in sorted(os.listdir(folder)):
        if name.endswith(".tsv") and not os.path.isfile(os.path.join(folder, name)):
            raise SourceError(os.path.join(folder, name), f"not a regular file: each {QRELS_FOLDER}/<split>.tsv is a "
                                                          "regular file of qrels (or a link to one)")


UNKNOWN = BeirLayout(PATH, (), JSON_TEXT, JSON_TEXT)
"""The layout before any folder is named: the configs and their columns are known, the qrels splits are not."""


def find_layout(data_dir: str | None) -> tuple[BeirLayout, SourceFiles]:
    """The layout of the user's folder or zip and its files; MissingSourceError naming the first file missing."""
    if not data_dir:
        raise MissingSourceError(f"{PATH} reads your own files: pass data_dir (--data-dir), the folder (or zip) "
                                 f"holding {LAYOUT}")
    location = os.path.abspath(os.path.expanduser(data_dir))
    files = SourceFiles(location, root=_zip_root(location) if os.path.isfile(location) else "")
    where = data_dir
    for name in (CORPUS_FILE, QUERIES_FILE):
        if not files.exists(name):
            found = not files.is_zip and os.path.lexists(files.display(name))
            raise MissingSourceError(f"{where}: not in BEIR's layout: {name} is "
                                     f"{'not a regular file' if found else 'missing'} (expected {LAYOUT})")
    _refuse_irregular_qrels(files)
    found = [name[: -len(".tsv")] for name in files.files_in(QRELS_FOLDER) if name.endswith(".tsv")]
    if not found:
        raise MissingSourceError(f"{where}: not in BEIR's layout: no {QRELS_FOLDER}/<split>.tsv file (expected "
                                 f"{LAYOUT})")
    for split in found:
        if not SPLIT_NAME.fullmatch(split) or split == "all":
            raise SourceError(files.display(f"{QRELS_FOLDER}/{split}.tsv"), "a qrels file name is its split's name: "
                              "letters, digits and `_` (dots between them), and not `all`")
    splits = sorted(found, key=lambda s: (SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER), s))
    layout = BeirLayout(os.path.basename(location), tuple(splits), JSON_TEXT, JSON_TEXT, root=files.root)
    return layout, files


class BeirFormatBuilder(BeirLayoutBuilder):
    CARD_FACTS = staticmethod(card_facts)

    def layout_of(self, path: str, data_dir: str | None) -> BeirLayout:
        return find_layout(data_dir)[0] if data_dir else UNKNOWN

    def source_files_in(self, data_dir: str) -> SourceFiles:
        return find_layout(data_dir)[1]

    def source_files(self, dl_manager: Any) -> SourceFiles:
        return find_layout(self.config.data_dir)[1]

    def split_names(self) -> list[str] | None:
        return None if self.config.name == "qrels" and not self.config.data_dir else super().split_names()
