"""Folders in BEIR's layout written for tests: corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""

from __future__ import annotations

import json
from pathlib import Path


def _record(entry: dict | tuple[str, str], title: bool) -> dict:
    """A record as given, or an (id, text) pair as BEIR writes it (a corpus record with an empty title)."""
    if isinstance(entry, dict):
        return entry
    record_id, text = entry
    return {"_id": record_id, "title": "", "text": text} if title else {"_id": record_id, "text": text}


def write_beir(folder: Path, corpus: list, queries: list, qrels: dict[str, list[tuple]], *,
               raw: dict[str, bytes] | None = None) -> Path:
    """Write a BEIR folder and return it. corpus and queries: records (dicts) or (id, text) pairs; qrels:
    {split: [(query id, corpus id, score)]}; `raw` maps a relative path to exact bytes (overriding a written file)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_bytes(b"".join(json.dumps(_record(d, True)).encode() + b"\n" for d in corpus))
    (folder / "queries.jsonl").write_bytes(b"".join(json.dumps(_record(q, False)).encode() + b"\n" for q in queries))
    for split, lines in qrels.items():
        body = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in lines)
        (folder / "qrels" / f"{split}.tsv").write_text(body, encoding="utf-8")
    for relpath, data in (raw or {}).items():
        (folder / relpath).write_bytes(data)
    return folder
