"""`config` left out of `builder` for a built folder, as `load` allows it: the folder's default config (it was
"has no config None")."""

from __future__ import annotations

import pytest
import ragloaders
from conftest import assert_names


def test_builder_of_a_built_folder_without_a_config_is_its_default(crag_build, nfcorpus_build):
    chosen = ragloaders.builder(str(crag_build.out), cache_dir=crag_build.cache_dir)
    assert chosen.config.name == "records"
    with pytest.raises(ValueError) as error:
        ragloaders.builder(str(nfcorpus_build.out))
    assert_names(error.value, "beir--nfcorpus", "default config", "corpus, qrels, queries")
