"""`config` left out of `builder` for a built folder, as `load` allows it: the folder's default config (it was
"has no config None")."""

from __future__ import annotations

import pytest
import ragloaders


def test_builder_of_a_built_folder_without_a_config_is_its_default(crag_build, nfcorpus_build):
    chosen = ragloaders.builder(str(crag_build.out), cache_dir=crag_build.cache_dir)
    assert chosen.config.name == "records"
    with pytest.raises(ValueError, match=r"beir--nfcorpus .*default config.*corpus, qrels, queries$"):
        ragloaders.builder(str(nfcorpus_build.out))
