"""`ragloaders docs` and `ragloaders pairs` tried as an attacker and a careless user would: a kept index that is a
FIFO, a bare string given to `get_many`."""

from __future__ import annotations

import os
import shutil
import signal

import pytest
import ragloaders


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


def test_get_many_of_a_bare_string_is_a_type_error(nfcorpus_build):
    """`get_many("MED-10")` would ask for the ids 'M', 'E', 'D', ... and answer None for each, silently."""
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    with pytest.raises(TypeError, match="a list of ids"):
        store.get_many("MED-10")
    with pytest.raises(TypeError, match="a list of ids"):
        store.rows_of("MED-10")
    assert [row["_id"] for row in store.get_many(("MED-10",))] == ["MED-10"]
