"""`ragloaders docs` and `ragloaders pairs` tried as an attacker and a careless user would: a kept index that is a
FIFO, a bare string given to `get_many`, a `--out` inside the very folder being read, one very long id."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import assert_names
from ragloaders.core.output_target import OutputFolderError
from ragloaders.eval.baseline import bm25
from ragloaders.lookup.id_hash import string_hash, string_hashes
from ragloaders.lookup.pairs import top_ranked_rankings


class Waited(Exception):
    """docs blocked on the FIFO."""


@pytest.fixture
def own_copy(nfcorpus_build, tmp_path) -> tuple[str, str]:
    """A copy of the nfcorpus build and a cache of its own (the shared ones are never altered)."""
    folder = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, folder)
    return str(folder), str(tmp_path / "cache")


def test_a_kept_index_replaced_by_a_fifo_is_rebuilt_not_waited_on(own_copy):
    """Opening a FIFO for reading blocks until a writer comes: a docs open must not hang on one (it is not an
    index; it is replaced by a rebuilt one)."""
    folder, cache = own_copy
    kept = ragloaders.docs(folder, cache_dir=cache).kept_at
    os.unlink(kept)
    os.mkfifo(kept)
    def waited(signum, frame):
        raise Waited  # not an OSError: the open's own error handling must not take it for a missing index

    before = signal.signal(signal.SIGALRM, waited)
    signal.alarm(10)
    try:
        store = ragloaders.docs(folder, cache_dir=cache)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert store["MED-10"]["_id"] == "MED-10" and store.kept_at == kept
    assert os.path.isfile(kept) and not os.path.islink(kept)

def test_a_kept_index_replaced_by_a_symlink_to_a_users_file_leaves_that_file_as_it_was(own_copy, tmp_path):
    """The link is no index of this data: the rebuilt index replaces the link itself, never the file it names."""
    folder, cache = own_copy
    kept = ragloaders.docs(folder, cache_dir=cache).kept_at
    mine = tmp_path / "mine.bin"
    mine.write_bytes(b"the user's bytes")
    os.unlink(kept)
    os.symlink(mine, kept)
    store = ragloaders.docs(folder, cache_dir=cache)
    assert store["MED-10"]["_id"] == "MED-10" and mine.read_bytes() == b"the user's bytes"
    assert os.path.isfile(kept) and not os.path.islink(kept)


def test_get_many_of_a_bare_string_is_a_type_error(nfcorpus_build):
    """`get_many("MED-10")` would ask for the ids 'M', 'E', 'D', ... and answer None for each, silently."""
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    with pytest.raises(TypeError) as caught:
        store.get_many("MED-10")
    assert_names(caught.value, "list of ids", "'MED-10'")
    with pytest.raises(TypeError) as caught:
        store.rows_of("MED-10")
    assert_names(caught.value, "list of ids", "'MED-10'")
    assert [row["_id"] for row in store.get_many(("MED-10",))] == ["MED-10"]


def test_pairs_never_writes_into_the_folder_it_reads(own_copy, tmp_path):
    """A file named like the folder's data (`corpus/corpus-*.parquet`) would become part of the corpus: the next
    load of the folder fails. The source folder is protected as the data and cache dirs are."""
    folder, cache = own_copy
    run = tmp_path / "run.trec"
    run.write_text("PLAIN-3 Q0 MED-10 1 1.0 x\n")
    inside = Path(folder) / "corpus" / "corpus-pairs.parquet"
    with pytest.raises(OutputFolderError) as caught:
        ragloaders.pairs(folder, inside, run=run, cache_dir=cache)
    assert_names(caught.value, f"--out {inside}", f"source folder {folder}")
    assert not inside.exists() and sorted(p.name for p in inside.parent.iterdir()) == [
        "corpus-00000-of-00001.parquet"]
    out = Path(folder) / "queries" / "queries-run.parquet"
    with pytest.raises(OutputFolderError) as caught:  # bm25: same rule
        bm25(folder, out=out, cache_dir=cache)
    assert_names(caught.value, f"--out {out}", f"source folder {folder}")
    assert sorted(p.name for p in (Path(folder) / "queries").iterdir()) == ["queries-00000-of-00001.parquet"]
    written = ragloaders.pairs(folder, tmp_path / "pairs.parquet", run=run, cache_dir=cache)
    assert written.rows == 1 and pq.read_table(written.out).column("corpus-id").to_pylist() == ["MED-10"]


@pytest.mark.slow  # (seconds; CI runs it)
def test_one_very_long_id_is_hashed_in_numpys_time_per_byte(nfcorpus_build, tmp_path):
    """A run (a file: anyone's) naming one 1 MB id: hashing it took one numpy step per byte position (19 s for
    1 MB, minutes for 10 MB) before pairs could say the id is unknown; nine long ids of one length still took a
    step per byte until few were left. The hash is the same as the plain one."""
    long_id = "x" * (1 << 20)
    nine = [f"{n}" + "y" * (1 << 20) for n in range(9)]  # more than the few finished alone at the end: 5.6 s a MB
    values = [long_id, "MED-10", "", "é" * 3000, *nine, *(f"MED-{n}" for n in range(20))]
    before = signal.signal(signal.SIGALRM, _waited)
    signal.alarm(5)  # a bound of CPU, as the pickle tests set one: a hundred times what the hash takes
    try:
        hashes = string_hashes(pa.array(values))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert [int(h) for h in hashes] == [string_hash(value) for value in values]
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    assert store.get_many([long_id, "MED-10"])[0] is None and store.rows_of([long_id])[0] == -1


def _waited(signum, frame):
    raise Waited


def test_pairs_from_top_ranked_carry_its_bm25_scores(nfcorpus_with_reranking, cache_dir):
    """A BEIR build's top_ranked holds BM25 scores aligned with corpus-ids: the pairs keep them (they were null).
    The rankings `pairs` writes, read from the folder as `pairs --from-top-ranked` reads them."""
    rankings = top_ranked_rankings(str(nfcorpus_with_reranking), "test", 3, {"cache_dir": cache_dir})
    table = pq.read_table(nfcorpus_with_reranking / "top_ranked" / "test-00000-of-00001.parquet")
    for (query_id, doc_ids, scores, _), row in zip(rankings, table.slice(0, 50).to_pylist()):
        assert (query_id, doc_ids) == (row["query-id"], row["corpus-ids"][:3])
        assert scores == pytest.approx(row["scores"][:3], rel=1e-6) and None not in scores


@pytest.mark.parametrize("rows", [[-1], [3633], [0.5], [True, False]], ids=["negative", "past the end", "float",
                                                                          "a mask"])
def test_take_refuses_what_is_not_a_row_number(nfcorpus_build, rows):
    """`take` of a negative (it was counted from the end in a message: 'Index -3634'), a float (truncated to row 0,
    silently), a boolean mask (taken for rows 1 and 0, silently)."""
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    with pytest.raises(IndexError) as caught:
        store.take(np.array(rows))
    given = np.array(rows)
    assert_names(caught.value, "whole numbers", "3,632", given.dtype, given.min())  # the rows there are; what was given
    assert store.take(np.array([3632, 0])).column("_id").to_pylist() == [store.table.column("_id")[3632].as_py(),
                                                                         store.table.column("_id")[0].as_py()]


def colliding_ids(blocks: int) -> list[str]:
    """2**blocks ids that share one hash: each a sequence of `blocks` Thue-Morse blocks of 1,024 characters or their
    complements. A polynomial hash mod 2**64 gives both blocks one value whatever its base (the Thue-Morse
    attack on such hashes), so every id of equal length does too."""
    morse = [0]
    for _ in range(10):
        morse += [1 - bit for bit in morse]
    block = "".join("ab"[bit] for bit in morse)
    complement = block.translate(str.maketrans("ab", "ba"))
    return ["".join(block if bit == "1" else complement for bit in format(n, f"0{blocks}b")) for n in range(2**blocks)]


class Counted:
    """The index's id column and row reader, counting the id values read through either."""

    def __init__(self, index):
        self.ids, self.rows, self.read = index.ids, index.id_rows, 0
        index.ids = index.id_rows = self

    def __getitem__(self, row):
        self.read += 1
        return self.ids[row]

    def take(self, positions):
        self.read += len(positions)
        return self.rows.take(positions)


def test_ids_made_to_share_one_hash_are_each_read_once_not_once_per_lookup():
    """512 ids of one hash: every lookup compared the id asked for with each id of the group, so looking all of them
    up read 512 x 512 values (quadratic: 14 s for 2,048 ids of 23 MB, against 0.5 s for as many ordinary ids). Now
    a group's ids are read once into a dict, by `rows_of` and by `row_of` alike."""
    from ragloaders.lookup.id_index import IdIndex

    ids = colliding_ids(9)
    column = pa.chunked_array([pa.array(ids)])
    assert len(set(string_hashes(column).tolist())) == 1 and string_hash(ids[0]) == string_hash(ids[-1])
    for lookup in ("rows_of", "row_of"):
        index = IdIndex.build(column, "corpus")
        counted = Counted(index)
        asked = [*reversed(ids), ids[0] + "x", ids[0][:-1]]  # and two ids of the group's length or hash it lacks
        found = index.rows_of(asked) if lookup == "rows_of" else [index.row_of(doc_id) for doc_id in asked]
        assert list(found) == [*range(len(ids) - 1, -1, -1), -1, -1], lookup
        assert counted.read <= len(ids), (lookup, counted.read)


def test_an_id_that_is_not_a_string_is_shown_bounded(nfcorpus_build):
    """`shown` made str() of anything not a string before cutting it: a list of 10 references to a list of 10 ...
    (8 levels: 10**8 items of text) took minutes and gigabytes to say it is not an id."""
    store = ragloaders.docs(str(nfcorpus_build.out), cache_dir=nfcorpus_build.cache_dir)
    nested: list = ["x"]
    for _ in range(8):
        nested = [nested] * 10
    for call in (lambda: store.get(nested), lambda: store.get_many(["MED-10", nested])):
        with pytest.raises(TypeError) as caught:
            call()
        assert len(str(caught.value)) < 300, str(caught.value)[:300]


@pytest.mark.parametrize("damage, said", [
    ("null id", "record 2: query {query}: corpus-ids holds a null at position 3"),
    ("null query", "record 2: query-id is null"),
])
def test_top_ranked_rows_with_a_null_are_refused_naming_the_row(
        damage, said, nfcorpus_with_reranking, cache_dir, tmp_path, capsys):
    """A null in a row of a built folder's top_ranked was a TypeError ('ids are strings'), the command line's form
    for a bug. (A document listed twice stays two pairs: CRAG's search results list some pages twice.)"""
    from ragloaders import cli

    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_with_reranking, folder)
    [path] = (folder / "top_ranked").glob("test-*.parquet")
    table = pq.read_table(path)
    rows = table.to_pylist()
    ids = rows[1]["corpus-ids"]
    if damage == "null id":
        ids[2] = None
    else:
        rows[1]["query-id"] = None
    said = said.format(query=repr(rows[1]["query-id"]))
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    code = cli.main(["pairs", str(folder), "--from-top-ranked", "--out", str(tmp_path / "p.parquet"), "--cache-dir",
                     str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{folder} top_ranked test, {said}" in err, err
    assert not (tmp_path / "p.parquet").exists()


@pytest.mark.parametrize("number", [-1, 3633, True, 1.0])
def test_a_row_number_out_of_range_is_refused_not_counted_from_the_end(number, nfcorpus_build):
    """`take` refuses a negative row; `row(-1)` gave the last row."""
    store = ragloaders.docs(str(nfcorpus_build.out), cache_dir=nfcorpus_build.cache_dir)
    with pytest.raises(IndexError, match="rows are 0 to 3,632"):
        store.row(number)
    assert store.row(3632)["_id"] == store.table.column("_id")[3632].as_py()


def test_a_killed_saves_partial_index_is_removed_by_the_next_save_and_nothing_else(own_copy):
    """A kill while the id index is saved left `NAME.XXXXXXXX.partial` in the cache for good. The next save
    removes such files when unchanged for a minute and not locked by a save in progress; a younger or locked one,
    and any other name, stay."""
    import fcntl
    import time

    folder, cache = own_copy
    kept = Path(ragloaders.docs(folder, cache_dir=cache).kept_at)
    abandoned, locked, young = (kept.with_name(f"{kept.name}.{tag}.partial") for tag in
                                ("aaaa1111", "bbbb2222", "cccc3333"))
    others = [kept.with_name(f"{kept.name}.notmine.partial"), kept.with_name("notes.txt")]
    for path in (abandoned, locked, young, *others):
        path.write_bytes(b"half")
    an_hour_ago = time.time() - 3600
    for path in (abandoned, locked, *others):
        os.utime(path, (an_hour_ago, an_hour_ago))
    holder = os.open(locked, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # a save in progress elsewhere
    try:
        kept.unlink()  # the next open builds and saves the index again
        ragloaders.docs(folder, cache_dir=cache)
    finally:
        os.close(holder)
    assert kept.exists() and not abandoned.exists()
    assert all(path.read_bytes() == b"half" for path in (locked, young, *others))
