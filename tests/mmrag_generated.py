"""Generated mmRAG chunk corpora (processed_documents.json has no real sample): chunk ids taken from the
real query files, text made up and labelled as such. Deterministic, so the committed demo file can be
checked against it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path

SPLITS = ("train", "dev", "test")
WORDS = ("river", "table", "season", "album", "Émile", "naïve", "“quoted”", "tab\there", "back\\slash", "line\nbreak",
         "北京", "emoji 🙂", "percent %", "<b>", "0.5", "1,234")


def judged_chunk_ids(folder: Path) -> list[str]:
    """Every chunk id judged in the query files of `folder`, in first-seen order (train, dev, test)."""
    seen: dict[str, None] = {}
    for split in SPLITS:
        for record in json.loads((folder / f"mmrag_{split}.json").read_text(encoding="utf-8")):
            seen.update(dict.fromkeys(record["relevant_chunks"]))
    return list(seen)


def chunk_text(chunk_id: str, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
    return f"[generated text, not mmRAG data] chunk {chunk_id}: {words}"


def generated_corpus(chunk_ids: Iterable[str], seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"id": chunk_id, "text": chunk_text(chunk_id, rng)} for chunk_id in chunk_ids]


def dump_array(records: list, indent: int | None) -> str:
    """As the query files were written: json.dump(..., indent=4, ensure_ascii=False); compact when indent is None."""
    if indent is None:
        return json.dumps(records, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(records, ensure_ascii=False, indent=indent)


def write_large_array(path: Path, target_bytes: int, indent: int | None, chunk_ids: list[str]) -> int:
    """A generated processed_documents.json of about `target_bytes` (json.dump's layout); its record count.

    Ids are the given real chunk ids with a counter appended to the chunk number (so they stay well formed).
    """
    body = json.dumps("Generated chunk text with “quotes”, a \\ backslash, a\nnew line and Émile. " * 20,
                      ensure_ascii=False)[1:-1]
    if indent:
        pad = " " * indent
        template = "\n" + pad + "{{\n" + 2 * pad + '"id": "{}",\n' + 2 * pad + '"text": "{} {}"\n' + pad + "}}"
    else:
        template = '{{"id":"{}","text":"{} {}"}}'
    count = written = 0
    with open(path, "wb") as f:
        f.write(b"[")
        while written < target_bytes:
            numbers = range(count, count + 4096)
            items = [template.format(f"{chunk_ids[n % len(chunk_ids)]}{n}", n, body) for n in numbers]
            written += f.write((b"," if count else b"") + ",".join(items).encode("utf-8"))
            count += len(items)
        f.write(b"\n]" if indent else b"]")
    return count


def demo_corpus_text(sample_folder: Path) -> str:
    """The content of tests/data/mmrag/processed_documents.json."""
    return dump_array(generated_corpus(judged_chunk_ids(sample_folder)), indent=4)


if __name__ == "__main__":
    folder = Path(__file__).parent / "data" / "mmrag"
    (folder / "processed_documents.json").write_text(demo_corpus_text(folder), encoding="utf-8")
