"""Readers shared by every benchmark: JSON lines, TSV and JSON arrays into Arrow tables, in bounded batches.

A file is read in chunks of whole lines (`iter_line_chunks`). Each chunk is first parsed by pyarrow
from an in-memory buffer with an explicit schema (ids stay strings, no Python per row); when pyarrow
refuses the chunk, or a check of its result fails, the same chunk is read line by line in Python,
which either pinpoints the bad line in a SourceError or produces the rows itself. Both paths apply
the same rules (below), so a line gets the same verdict whichever path reads it.

pyarrow never gets a Python file object: its streaming readers read ahead on their own threads,
which call back into Python and abort the interpreter when a stream stopped early is finalized at
exit (`Fatal Python error: PyGILState_Release`). JSONL chunks are instead read on one Python thread
(`iter_ahead`) and parsed, each on one thread, by PARSE_THREADS Python threads (`map_ahead`) while the
caller writes the previous tables: pyarrow releases the GIL (stringzilla's line counts, a fraction of a
millisecond per chunk, keep it), so reading, parsing and writing overlap as in pyarrow's own reader, and
these threads are always joined when the reader stops.

Rules for bad input (each a SourceError naming the file and the line or record):
- JSON: invalid UTF-8, invalid JSON, an object with a duplicate key, and an unpaired surrogate
  escape (`"\ud800"`, `"\udce9"`: UTF-8, hence Parquet, cannot hold it) are refused; integers
  of any size are kept exactly (in JSON text columns too); a UTF-8 BOM is skipped at the start of
  a file only. An empty corpus or queries file is refused.
- qrels: a score is an optional `-` followed by ASCII digits that fits int32; a carriage return
  anywhere but just before the line end is refused.

Modules: `lines` (line chunking), `threads` (read-ahead and parse threads), `strict_json` (the JSON rules),
`values` (`conform`), `arrow_batches` (bounded tables, IPC files), `jsonl`, `qrels`, `json_array`.
"""
