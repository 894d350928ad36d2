"""CRAG answer scoring, in the order of CRAG's `local_evaluation.py` (facebookresearch/CRAG; the KDD Cup starter
kit's variant):

1. the prediction is cut to its first 75 tokens of CRAG's Llama-2 tokenizer (`tokenizer.json` given with
   `--tokenizer`; ids of `encode` without special tokens, `[:75]`, decoded without skipping any, which is what
   `tokenizer.encode(p)[1:76]` after the BOS token gives), then stripped;
2. a prediction whose lower-cased text contains "i don't know" is **missing** (reason `idk`);
3. equal, lower-cased, to the stripped answer or to any stripped alternative answer (`alt_ans`): **correct**
   (`exact`);
4. "invalid" in both the prediction and a ground truth (CRAG's false-premise answer is "invalid question"):
   **correct** (`invalid`); "invalid" on one side only: that ground truth is not judged (counted wrong, as the
   script does);
5. otherwise the judge decides for each remaining ground truth until one is judged correct (`judge`); with no
   judge the record is **hallucinated** (`no-judge`), so accuracy is then a lower and hallucination an upper bound.

accuracy = correct / n, missing = missing / n, hallucination = the rest / n, score = accuracy - hallucination.
A prediction for an id the records do not have, or a record without a prediction, is an error; with
`missing_as_idk` the first are reported and not scored and the second count as missing (`no-prediction`). Without
it, predictions none of which is for a record of the splits scored (another split's) are refused, not scored zero.

Read against facebookresearch/CRAG `local_evaluation.py` at ad1518887dd4 and the KDD Cup 2024 starter kit's. Where
they are broken or silent, the choices here:

- CRAG's script reads `prediction_lowercase` before it sets it (a NameError on the first record) and strips the
  `answer` string and then loops over its characters, though its docstring takes a list of ground truths per
  query; here the ground truths are `answer` and each `alt_ans`, each stripped as the starter kit strips its one
  answer. The starter kit has no false-premise rule and no `alt_ans`.
- CRAG's script takes the ground truths one at a time (exact, then "invalid", then the judge); every path to
  correct stops the loop, so checking all of them exactly before any judge gives the same outcome with fewer
  judge requests.
- Both scripts count a judge request that fails after their retries as not correct, i.e. hallucinated; here it
  stops the run with an error, so an outage never shows as hallucination.
- Both lower-case with Python's `str.lower` and test "i don't know" with the ASCII apostrophe, as here.
- CRAG's script stops on a record whose `answer` is null (an AttributeError: it strips it); here that is a
  SourceError naming the record, as no score of it would be CRAG's.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ..api import load, normalized
from ..core.errors import SourceError, UsageError
from ..core.output_target import refuse_existing, write_new_file
from ..core.plural import counted
from ..core.preview import invalid_utf8, one_line, preview
from ..core.readers.jsonl import Shard, iter_json_records
from ..core.readers.lines import MAX_LINE_BYTES, first_invalid_utf8
from ..core.source_files import SourceFiles
from ..core.user_cache import read_small_file
from .identity import answers_identity, answers_identity_lines, source_identity
from .judge import Judge, JudgeError
from .runs import require_run_file

MAX_PREDICTION_TOKENS = 75
IDK = "i don't know"
INVALID = "invalid"
OUTCOMES = ("correct", "missing", "hallucinated")
REASONS = ("exact", "idk", "invalid", "judge", "no-judge", "no-prediction")
BREAKDOWN = ("domain", "question_type", "static_or_dynamic", "popularity")
"""Record fields the figures are broken down by (as CRAG's paper does); popularity only where a release has it."""
PREDICTION_COLUMNS = ("interaction_id", "prediction")
INSTALL_TOKENIZERS = "pip install 'ragloaders[eval]'"
EXAMPLES = 5


@dataclass(frozen=True)
class Verdict:
    """What one record's prediction was judged, and why."""

    interaction_id: str
    outcome: str
    """correct, missing or hallucinated."""
    reason: str
    """exact, idk, invalid, judge, no-judge or no-prediction."""
    prediction: str | None
    """The prediction as scored (after the trim and strip); None when there was none."""
    judge_explanation: str = ""
    unparseable: int = 0
    """Judge replies for this record that held no score of 0 or 1 (each counted not correct)."""


@dataclass(frozen=True)
class Record:
    interaction_id: str
    question: str
    ground_truths: tuple[str, ...]
    labels: dict[str, str | None]


# --- predictions ------------------------------------------------------------------------------------------------


def read_predictions(path: str | os.PathLike) -> dict[str, str]:
    """{interaction_id: prediction} from a JSONL, CSV or Parquet file (by suffix) with (at least) the columns
    `interaction_id` and `prediction`, both strings; an id given twice, a null, or a non-string is a SourceError
    naming the line or record."""
    path = os.fspath(path)
    require_run_file(path, "predictions table")
    suffix = os.path.splitext(path)[1].lower()
    readers: dict[str, Callable[[str], Iterator[tuple[dict, dict]]]] = {
        ".jsonl": _jsonl_predictions, ".csv": _csv_predictions, ".parquet": _parquet_predictions,
    }
    if suffix not in readers:
        raise UsageError(f"{path}: predictions are read from .jsonl, .csv or .parquet, not {suffix or 'no suffix'}")
    predictions: dict[str, str] = {}
    for where, row in readers[suffix](path):
        for name in PREDICTION_COLUMNS:
            if not isinstance(row.get(name), str):
                got = "missing" if name not in row else preview(row[name])
                raise SourceError(path, f"`{name}` must be a string, got {got}", **where)
        if row["interaction_id"] in predictions:
            raise SourceError(path, f"interaction_id {preview(row['interaction_id'])} has a second prediction", **where)
        predictions[row["interaction_id"]] = row["prediction"]
    return predictions


def _jsonl_predictions(path: str) -> Iterator[tuple[dict, dict]]:
    folder, name = os.path.split(os.path.abspath(path))
    for number, _, record in iter_json_records(Shard(SourceFiles(folder), name)):
        if not isinstance(record, dict):
            raise SourceError(path, f"expected a JSON object with {', '.join(PREDICTION_COLUMNS)}", line=number)
        yield {"line": number}, record


def _first_repeated(names: list[str]) -> str | None:
    """The first name of `names` that an earlier one equals, or None."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _csv_predictions(path: str) -> Iterator[tuple[dict, dict]]:
    reader = None
    # a field as long as a JSONL line may be (the csv module's default stops at 131,072 characters); the limit is
    # the process's, so it is given back when the file is read
    field_limit = csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:  # a spreadsheet's BOM is not part of the header
            reader = csv.DictReader(f)
            names = reader.fieldnames or []
            missing = [name for name in PREDICTION_COLUMNS if name not in names]
            if missing:
                raise SourceError(path, f"the header has no column {', '.join(missing)}", line=1)
            repeated = _first_repeated(list(names))
            if repeated is not None:  # DictReader would keep the last one's values
                raise SourceError(path, f"the header names the column {preview(repeated)} twice", line=reader.line_num)
            for row in reader:
                if None in row:
                    extra = row[None]
                    raise SourceError(path, f"more fields than the header names: {counted(len(extra), 'field')} "
                                      f"after its {len(reader.fieldnames or [])} ({preview(extra)})",
                                      line=reader.line_num)
                yield {"line": reader.line_num}, row
    except UnicodeDecodeError as e:
        with open(path, "rb") as f:
            found = first_invalid_utf8(f)
        if found is None:  # the file changed since
            raise SourceError(path, f"invalid UTF-8 ({e.reason})") from None
        at, line, error = found
        raise SourceError(path, invalid_utf8(error.object, error.start, at=at), line=line) from None
    except csv.Error as e:
        # (DictReader's own line_num is set after a row is read whole, so it lags on an error)
        raise SourceError(path, f"not readable as CSV ({e})", line=reader.reader.line_num if reader else None
                          ) from None
    finally:
        csv.field_size_limit(field_limit)


def _parquet_predictions(path: str) -> Iterator[tuple[dict, dict]]:
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError(path, f"not a readable Parquet file ({e})") from None
    missing = [name for name in PREDICTION_COLUMNS if name not in parquet.schema_arrow.names]
    if missing:
        raise SourceError(path, f"no column {', '.join(missing)}")
    repeated = _first_repeated(parquet.schema_arrow.names)
    if repeated is not None:  # pyarrow would read one of them
        raise SourceError(path, f"two columns are named {preview(repeated)}")
    index = 0
    for batch in parquet.iter_batches(batch_size=10_000, columns=list(PREDICTION_COLUMNS)):
        for row in batch.to_pylist():
            index += 1
            yield {"record": index}, row


# --- the rules --------------------------------------------------------------------------------------------------


class Trimmer:
    """A prediction cut to its first MAX_PREDICTION_TOKENS tokens of a `tokenizer.json` (the `tokenizers` library),
    at a cost set by the part kept, not by the prediction's length.

    Only a prefix of the prediction is tokenized, FIRST_WINDOW characters and twice as many each time that is not
    enough, until its first MAX_PREDICTION_TOKENS tokens are known to be the whole text's:
    - with a tokenizer built like CRAG's Llama-2 one (BPE over the whole text, no pre-tokenizer, the normalizer
      `Prepend("▁")` then `Replace(" ", "▁")`, no vocabulary entry or added token with "▁" or " " after another
      character), no token spans a space that follows a non-space, so the text before such a space tokenizes the
      same alone as within any longer text: kept tokens that end before such a space of the prefix are exact;
    - otherwise (any tokenizer, a text without such a space) the kept tokens must end in the prefix's first half, at
      least FIRST_WINDOW / 2 characters before the cut: a cut changes only tokens near it (a BPE merge, WordPiece or
      Unigram piece is decided by neighbouring characters; with BPE a change reaches back through merges of ever
      later rank, a few tokens in practice), as tested against tokenizing whole texts.
    A prediction no longer than the prefix is tokenized whole."""

    FIRST_WINDOW = 4096
    MAX_FILE_BYTES = 64 << 20
    """Largest tokenizer.json read (CRAG's Llama-2 one is 1.8 MB)."""

    def __init__(self, path: str | os.PathLike):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ImportError(f"--tokenizer needs the tokenizers library: {INSTALL_TOKENIZERS}") from None
        self.path = os.fspath(path)
        try:
            data = read_small_file(self.path, self.MAX_FILE_BYTES)
        except OSError as e:  # (no errno: a FIFO, device or folder, refused without waiting on it)
            problem = "a folder" if os.path.isdir(self.path) else e.strerror or "not a regular file"
            raise SourceError(self.path, f"cannot be read as --tokenizer's tokenizer.json ({problem})") from None
        if data is None:
            raise SourceError(self.path, f"larger than {self.MAX_FILE_BYTES:,} bytes, the most a tokenizer.json read "
                              "by --tokenizer may hold")
        try:
            self.tokenizer = Tokenizer.from_buffer(data)
        except Exception as e:  # the library raises a bare Exception for data it cannot read
            raise SourceError(self.path, f"not a tokenizer.json the tokenizers library reads ({one_line(e)})"
                              ) from None
        self.cut_at_spaces = _words_never_join_leftwards(orjson.loads(self.tokenizer.to_str()))

    def __call__(self, prediction: str) -> str:
        window = self.FIRST_WINDOW
        while window < len(prediction):
            encoding = self.tokenizer.encode(prediction[:window], add_special_tokens=False)
            if len(encoding.ids) >= MAX_PREDICTION_TOKENS:
                end = encoding.offsets[MAX_PREDICTION_TOKENS - 1][1]
                if end <= window // 2 or (self.cut_at_spaces and _space_after_word(prediction, end, window)):
                    return self._decoded(encoding.ids)
            window *= 2
        return self._decoded(self.tokenizer.encode(prediction, add_special_tokens=False).ids)

    def _decoded(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids[:MAX_PREDICTION_TOKENS], skip_special_tokens=False)


_SPACE_AFTER_WORD = re.compile(r"(?<! ) ")
LLAMA_NORMALIZER = [{"type": "Prepend", "prepend": "\u2581"},
                    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]


def _words_never_join_leftwards(spec: dict) -> bool:
    """Whether a tokenizer.json (as data) is built so that no token spans a space after a non-space (Trimmer)."""
    normalizer = spec.get("normalizer") or {}
    model = spec.get("model") or {}
    if (model.get("type") != "BPE" or spec.get("pre_tokenizer") is not None or model.get("dropout")
            or normalizer.get("type") != "Sequence" or normalizer.get("normalizers") != LLAMA_NORMALIZER):
        return False
    pieces = list(model.get("vocab") or {}) + [t.get("content", "") for t in spec.get("added_tokens") or []]
    return not any("\u2581" in piece.lstrip("\u2581") or " " in piece for piece in pieces)


def _space_after_word(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] holds a space that follows a non-space."""
    return _SPACE_AFTER_WORD.search(text, max(start, 1), end) is not None


def settled_by_rules(prediction: str, ground_truths: tuple[str, ...]) -> tuple[str | None, str, list[str]]:
    """(outcome or None, reason, the ground truths left for a judge) of a trimmed, stripped prediction by rules
    2-4; outcome None means the judge decides on the ground truths returned."""
    lowered = prediction.lower()
    if IDK in lowered:
        return "missing", "idk", []
    truths = [truth.strip().lower() for truth in ground_truths]
    if lowered in truths:
        return "correct", "exact", []
    if INVALID in lowered and any(INVALID in truth for truth in truths):
        return "correct", "invalid", []
    left = [truth for truth, low in zip(ground_truths, truths) if INVALID not in low and INVALID not in lowered]
    if not left:
        return "hallucinated", "invalid", []
    return None, "judge", left


def verdict_of(record: Record, prediction: str, trim: Callable[[str], str] | None, judge: Judge | None) -> Verdict:
    """One record's verdict under rules 1-5."""
    scored = (trim(prediction) if trim else prediction).strip()
    outcome, reason, left = settled_by_rules(scored, record.ground_truths)
    if outcome is not None:
        return Verdict(record.interaction_id, outcome, reason, scored)
    if judge is None:
        return Verdict(record.interaction_id, "hallucinated", "no-judge", scored)
    unparseable, explanation = 0, ""
    for truth in left:
        answer = judge.verdict(record.question, truth, scored)
        explanation = answer.explanation
        if answer.correct is None:
            unparseable += 1
        elif answer.correct:
            return Verdict(record.interaction_id, "correct", "judge", scored, explanation, unparseable)
    return Verdict(record.interaction_id, "hallucinated", "judge", scored, explanation, unparseable)


# --- the report -------------------------------------------------------------------------------------------------


def figures(verdicts: list[Verdict]) -> dict[str, float | int]:
    """CRAG's figures of a set of verdicts."""
    n = len(verdicts)
    counts = {outcome: sum(1 for v in verdicts if v.outcome == outcome) for outcome in OUTCOMES}
    share = {outcome: counts[outcome] / n if n else 0.0 for outcome in OUTCOMES}
    return {"score": share["correct"] - share["hallucinated"], "accuracy": share["correct"],
            "hallucination": share["hallucinated"], "missing": share["missing"], "n": n,
            "n_correct": counts["correct"], "n_hallucinated": counts["hallucinated"], "n_missing": counts["missing"]}


@dataclass
class AnswerReport:
    """CRAG's figures for one predictions file, broken down by the record labels, with every record's verdict."""

    path: str
    splits: list[str]
    overall: dict[str, float | int]
    breakdown: dict[str, dict[str, dict[str, float | int]]]
    verdicts: list[Verdict] = field(repr=False)
    conventions: list[str] = field(default_factory=list)
    unknown_predictions: list[str] = field(default_factory=list)
    """Predictions whose interaction_id is in no record of the path (only reported with missing_as_idk)."""
    other_split_predictions: int = 0
    """Predictions for records of a split not scored (not scored)."""
    absent_predictions: list[str] = field(default_factory=list)
    """Records without a prediction (counted missing: only with missing_as_idk)."""
    unparseable_judgements: int = 0
    judge_requests: int = 0
    judge_cached: int = 0
    identity: dict[str, Any] | None = None
    """What was scored (`identity.answers_identity`); None for predictions scored without `score_answers`."""

    def warnings(self) -> list[str]:
        lines = []
        for ids, one, many in ((self.unknown_predictions, f"prediction is for an id not in {self.path} (not scored)",
                                f"predictions are for ids not in {self.path} (not scored)"),
                               (self.absent_predictions, "record has no prediction (counted missing)",
                                "records have no prediction (counted missing)")):
            if ids:
                lines.append(f"{counted(len(ids), one, many)}, e.g. {', '.join(map(preview, ids[:EXAMPLES]))}")
        if self.unparseable_judgements:
            lines.append(f"{counted(self.unparseable_judgements, 'judge reply', 'judge replies')} held no score of 0 "
                         "or 1 (counted not correct)")
        return lines

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (without the per-record verdicts: see write_verdicts)."""
        return {
            "path": self.path, "task": "answers", "splits": self.splits, "authors_metrics": {
                "title": "CRAG's answer scores (local_evaluation.py's rules)", "metrics": self.overall},
            "breakdown": self.breakdown,
            "reasons": {reason: sum(1 for v in self.verdicts if v.reason == reason) for reason in REASONS},
            "unknown_predictions": {"count": len(self.unknown_predictions),
                                    "examples": self.unknown_predictions[:EXAMPLES]},
            "absent_predictions": {"count": len(self.absent_predictions),
                                   "examples": self.absent_predictions[:EXAMPLES]},
            "other_split_predictions": self.other_split_predictions,
            "judge": {"requests": self.judge_requests, "cached": self.judge_cached,
                      "unparseable": self.unparseable_judgements},
            "conventions": self.conventions,
            **({"identity": self.identity} if self.identity is not None else {}),
        }

    def text(self) -> str:
        o = self.overall
        lines = [f"{self.path} {'+'.join(self.splits)}: {counted(o['n'], 'record')}; CRAG's answer scores "
                 "(local_evaluation.py's rules):"]
        lines += [f"  {name:<14}{o[name]:.5f}" for name in ("score", "accuracy", "hallucination", "missing")]
        lines.append(f"  counts        correct {o['n_correct']}, hallucinated {o['n_hallucinated']}, "
                     f"missing {o['n_missing']}")
        for label, groups in self.breakdown.items():
            lines.append(f"by {label}:")
            lines += [f"  {value:<22}n {g['n']:>5}  score {g['score']:+.4f}  accuracy {g['accuracy']:.4f}  "
                      f"hallucination {g['hallucination']:.4f}  missing {g['missing']:.4f}"
                      for value, g in groups.items()]
        reasons = {reason: sum(1 for v in self.verdicts if v.reason == reason) for reason in REASONS}
        lines.append("reasons: " + ", ".join(f"{reason} {count}" for reason, count in reasons.items() if count))
        if self.other_split_predictions:
            one = self.other_split_predictions == 1
            lines.append(f"note: {counted(self.other_split_predictions, 'prediction')} {'is' if one else 'are'} for "
                         "records of other splits (not scored)")
        lines += [f"convention: {convention}" for convention in self.conventions]
        lines += [f"warning: {warning}" for warning in self.warnings()]
        if self.identity is not None:
            lines += answers_identity_lines(self.identity)
        return "\n".join(lines)

    def write_verdicts(self, target: str | os.PathLike) -> None:
        """Every record's verdict as JSONL to a new file `target`; an existing file is never replaced (FileExistsError)
        and the file appears only when complete."""
        target = os.fspath(target)
        refuse_existing(target, "--verdicts")

        def write(partial: str) -> None:
            with open(partial, "wb") as f:
                for v in self.verdicts:
                    f.write(orjson.dumps({
                        "interaction_id": v.interaction_id, "outcome": v.outcome, "reason": v.reason,
                        "prediction": v.prediction, "judge_explanation": v.judge_explanation,
                        "unparseable_judgements": v.unparseable,
                    }) + b"\n")

        write_new_file(target, write)  # never over a target that appeared meanwhile


def load_records(path: str, splits: list[str] | None, where: dict) -> tuple[list[Record], set[str], list[str]]:
    """(records of the chosen splits, ids of every record of the path, the splits scored) from the `queries`
    config, which carries answer, alt_ans and the labels."""
    loaded = load(path, "queries", **where)
    if splits is None:
        splits = list(loaded)
    unknown = [split for split in splits if split not in loaded]
    if unknown:
        raise UsageError(f"{path} has no split {preview(unknown[0])}; its splits are {', '.join(loaded)}")
    every: dict[str, str] = {}
    """Each record's id -> its split."""
    chosen: list[Record] = []
    for split, dataset in loaded.items():
        rows = dataset.data.table.to_pylist()
        for row in rows:
            if row["_id"] in every:  # (a prediction is keyed by the id: it would be scored against both)
                raise SourceError(path, f"interaction_id {preview(row['_id'])} names two records (of the "
                                  f"{every[row['_id']]} and {split} splits): a prediction, keyed by it, cannot tell "
                                  "which it answers (`ragloaders validate` lists every repeated id)")
            every[row["_id"]] = split
        if split in splits:
            for row in rows:
                if row["answer"] is None:  # (CRAG's script stops on it: it strips the answer)
                    raise SourceError(path, f"record {preview(row['_id'])} of the {split} split has no answer (null): "
                                      "nothing to score its prediction against")
                chosen.append(Record(row["_id"], row["text"], (row["answer"], *(row["alt_ans"] or ())),
                                     {label: row.get(label) for label in BREAKDOWN}))
    return chosen, set(every), splits


def score_answers(
    path: str,
    predictions: dict[str, str] | str | os.PathLike,
    *,
    split: str | None = None,
    tokenizer: str | None = None,
    judge: Judge | None = None,
    missing_as_idk: bool = False,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> AnswerReport:
    """Score CRAG predictions (a file, or {interaction_id: prediction}) against the records of `path` (every split,
    or `split`) by the rules of the module docstring."""
    path = normalized(path)
    if path != "crag/task_1_and_2" and path != "crag/task_3":
        raise UsageError(f"{path}: answer predictions are scored on crag/task_1_and_2 or crag/task_3")
    given = predictions
    if not isinstance(predictions, dict):
        predictions = read_predictions(predictions)
    trim = Trimmer(tokenizer) if tokenizer else None
    records, every, splits = load_records(path, None if split is None else [split], {
        "data_dir": data_dir, "cache_dir": cache_dir})
    unknown = [i for i in predictions if i not in every]
    absent = [r.interaction_id for r in records if r.interaction_id not in predictions]
    scored_ids = {r.interaction_id for r in records}
    name = "" if isinstance(given, dict) else f"{os.fspath(given)}: "
    if not missing_as_idk:
        require_a_scored_record(name, path, splits, predictions, scored_ids, len(unknown))
    if (unknown or absent) and not missing_as_idk:
        problems = []
        if unknown:
            problems.append(f"{counted(len(unknown), 'prediction')} for ids not in {path} (e.g. {preview(unknown[0])})")
        if absent:
            problems.append(f"{counted(len(absent), 'record')} without a prediction (e.g. {preview(absent[0])})")
        raise UsageError(name + "; ".join(problems) + "; --missing-as-idk reports the first and counts the second "
                         "missing")
    verdicts: list[Verdict] = []
    try:
        for record in records:
            if record.interaction_id not in predictions:
                verdicts.append(Verdict(record.interaction_id, "missing", "no-prediction", None))
                continue
            verdicts.append(verdict_of(record, predictions[record.interaction_id], trim, judge))
    except JudgeError as e:
        raise UsageError(f"{e}; {len(verdicts)} of {len(records)} records were scored before it") from None
    labels = {r.interaction_id: r.labels for r in records}
    breakdown = {}
    for label in BREAKDOWN:
        values = [labels[v.interaction_id][label] for v in verdicts]
        if all(value is None for value in values):
            continue
        groups: dict[str, list[Verdict]] = {}
        for v, value in zip(verdicts, values):
            groups.setdefault("(none)" if value is None else value, []).append(v)
        breakdown[label] = {value: figures(group) for value, group in sorted(groups.items())}
    return AnswerReport(
        path, splits, figures(verdicts), breakdown, verdicts,
        conventions=conventions(trim, judge),
        unknown_predictions=unknown,
        other_split_predictions=sum(1 for i in predictions if i in every and i not in scored_ids),
        absent_predictions=absent,
        unparseable_judgements=sum(v.unparseable for v in verdicts),
        judge_requests=judge.requests if judge else 0,
        judge_cached=judge.cache_hits if judge else 0,
        identity=answers_identity(source_identity(path, (path,), None, data_dir=data_dir, cache_dir=cache_dir),
                                  splits, given, tokenizer=tokenizer, judge=judge.describe() if judge else None),
    )


def require_a_scored_record(name: str, path: str, splits: list[str], predictions: dict[str, str],
                            scored_ids: set[str], unknown: int) -> None:
    """Refuse predictions none of which is for a record of the splits scored (`scored_ids`): the report would be
    zeros, or every record missing, which looks like a result of predictions that are empty or of another split.
    `name` is the predictions file's "path: " (or ""), `unknown` the number of predictions for no record of `path`."""
    if any(interaction_id in scored_ids for interaction_id in predictions):
        return
    if not predictions:
        raise UsageError(f"{name}the predictions hold no prediction: nothing to score")
    others = [f"{counted(unknown, 'is', 'are')} not in {path}"] if unknown else []
    if len(predictions) > unknown:
        others.append(f"{counted(len(predictions) - unknown, 'is', 'are')} for records of other splits")
    raise UsageError(f"{name}no prediction ({counted(len(predictions), 'prediction')}, e.g. "
                     f"{preview(next(iter(predictions)))}; {', '.join(others)}) is for a record of {path}'s "
                     f"{'+'.join(splits)} {'split' if len(splits) == 1 else 'splits'} "
                     f"({counted(len(scored_ids), 'record')}): predictions of another split? (--split chooses the "
                     "split)")


def conventions(trim: Trimmer | None, judge: Judge | None) -> list[str]:
    """What the report says about how the figures were made."""
    lines = [f"predictions cut to {MAX_PREDICTION_TOKENS} tokens of {trim.path}" if trim else
             f"predictions not cut to {MAX_PREDICTION_TOKENS} tokens (no --tokenizer; CRAG cuts with its Llama-2 "
             "tokenizer, so a long prediction may score differently here)",
             "rules in CRAG's order: \"i don't know\" in the prediction -> missing; equal (case-insensitive) to the "
             "answer or an alt_ans -> correct; \"invalid\" in both -> correct; score = accuracy - hallucination"]
    if judge:
        lines.append(f"other predictions judged by {judge.describe()} at temperature 0 (cached verdicts reused); "
                     "a request still failing after the retries stops the run (CRAG's script counts it hallucinated)")
    else:
        lines.append("no judge: every prediction not settled by the rules counts as hallucinated, so accuracy and "
                     "score are lower bounds and hallucination an upper bound (exact-match only)")
    return lines
