"""Hub revisions given as a careless user would: an empty `--revision` is refused in one line before the hub or its
cache is asked (it was taken for the main branch in one message and blamed on the hub in another)."""

from __future__ import annotations

import contextlib
import io

import huggingface_hub.constants
import pytest
import ragloaders
from conftest import assert_names
from ragloaders import cli


@pytest.mark.parametrize("revision", ["", "  "])
def test_an_empty_revision_is_one_line_naming_it(revision, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network in tests: the cache is asked
    with pytest.raises(ValueError) as caught:
        ragloaders.load("org/nf", "qrels", revision=revision)
    assert_names(caught.value, "org/nf", "revision", "empty", repr(revision))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["docs", "org/nf", "MED-10", "--revision", revision])
    assert code == 2 and err.getvalue().splitlines() == [
        f"ragloaders: error: org/nf: the revision asked for is empty ({revision!r}); give a commit id, branch or tag, "
        "or no revision for the main branch"]
