"""The BEIR family as data: every dataset's splits, metadata shape, checksum, licence and published counts."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ...core.formats.beir_layout import JSON_TEXT, BeirLayout
from ...core.source_files import Download, mirror_base
from .citations import SOURCE_CITATIONS

BASE_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
BASE_URL_ENV = "RAGLOADERS_BEIR_BASE_URL"
"""Set to a mirror holding the same `<name>.zip` files (the md5 is still checked)."""

STRING, INT, STRINGS = pa.string(), pa.int64(), pa.list_(pa.string())

URL = (pa.field("url", STRING),)
CORD = (pa.field("url", STRING), pa.field("pubmed_id", STRING))
TOUCHE_DOC = (pa.field("stance", STRING), pa.field("url", STRING))
SCI = (
    pa.field("authors", STRINGS), pa.field("year", INT), pa.field("cited_by", STRINGS), pa.field("references", STRINGS)
)
TAGS = (pa.field("tags", STRINGS),)
COVID_QUERY = (pa.field("query", STRING), pa.field("narrative", STRING))
TOUCHE_QUERY = (pa.field("description", STRING), pa.field("narrative", STRING))
ANY_JSON = JSON_TEXT
"""Metadata whose keys vary per row (or whose shape is not published): kept as one JSON text column."""

@dataclass(frozen=True)
class BeirDataset:
    """Facts about one BEIR dataset, as published (BEIR paper table, official zips, ir_datasets)."""

    name: str
    splits: tuple[str, ...]
    doc_metadata: tuple[pa.Field, ...] | None = ()
    query_metadata: tuple[pa.Field, ...] | None = ()
    md5: str | None = None
    zip_bytes: int | None = None
    license: str = "unknown"
    test_queries: int | None = None
    corpus_docs: int | None = None
    zip_name: str = ""
    """The zip (without .zip) that holds this dataset, when it is not `<name>.zip` (cqadupstack forums)."""
    obtain: str = ""
    """Where to get the files when they may not be redistributed."""
    license_id: str = "unknown"
    """The hub's id for `license` (`cc-by-sa-3.0`, ...); `other` with `license_link` when it has none."""
    license_link: str = ""
    citation: str = ""
    """BibTeX of the source dataset (BEIR's own is BEIR_CITATION)."""

    @property
    def path(self) -> str:
        return f"beir/{self.name}"

    @property
    def archive(self) -> str:
        return self.zip_name or self.name

    @property
    def root(self) -> str:
        """The dataset's folder inside its zip: `<name>` or `cqadupstack/<forum>`."""
        return self.name

    @property
    def download(self) -> Download | None:
        if self.md5 is None:
            return None
        base = mirror_base(BASE_URL, BASE_URL_ENV)
        return Download(f"{base}/{self.archive}.zip", md5=self.md5, size=self.zip_bytes, mirror_env=BASE_URL_ENV)

    @property
    def layout(self) -> BeirLayout:
        """Where the dataset's files are and what their lines hold, for the builder of BEIR's layout."""
        return BeirLayout(self.name, self.splits, self.doc_metadata, self.query_metadata, root=self.root,
                          archive=self.archive, md5=self.md5, download=self.download, obtain=self.obtain)


def _bring_your_own(where: str) -> str:
    return f"not redistributable; obtain it as described at {where} and pass data_dir"


BEIR_DATASETS: tuple[BeirDataset, ...] = (
    BeirDataset("msmarco", ("train", "dev", "test"), md5="444067daf65d982533ea17ebd59501e4", zip_bytes=1_082_258_632,
                license="MS MARCO terms: non-commercial research use", test_queries=6_980, corpus_docs=8_841_823,
                license_id="other", citation=SOURCE_CITATIONS["msmarco"],
                license_link="https://microsoft.github.io/msmarco/"),
    BeirDataset("trec-covid", ("test",), CORD, COVID_QUERY, md5="ce62140cb23feb9becf6270d0d1fe6d1",
                zip_bytes=73_876_720, license="CORD-19 dataset license", test_queries=50, corpus_docs=171_332,
                license_id="other", citation=SOURCE_CITATIONS["trec-covid"],
                license_link="https://github.com/allenai/cord19"),
    BeirDataset("nfcorpus", ("train", "dev", "test"), URL, URL, md5="a89dba18a62ef92f7d323ec890a0d38d",
                zip_bytes=2_448_432, license="free for academic / non-commercial use (NFCorpus)",
                test_queries=323, corpus_docs=3_633,
                license_id="other", citation=SOURCE_CITATIONS["nfcorpus"],
                license_link="https://www.cl.uni-heidelberg.de/statnlpgroup/nfcorpus/"),
    BeirDataset("bioasq", ("train", "test"), ANY_JSON, ANY_JSON, license="CC BY 2.5 (BioASQ, registration required)",
                test_queries=500, corpus_docs=14_914_603,
                obtain=_bring_your_own("https://github.com/beir-cellar/beir/wiki/Datasets-available"),
                license_id="cc-by-2.5", citation=SOURCE_CITATIONS["bioasq"]),
    BeirDataset("nq", ("test",), md5="d4d3d2e48787a744b6f6e691ff534307", zip_bytes=498_307_926,
                license="CC BY-SA 3.0", test_queries=3_452, corpus_docs=2_681_468,
                license_id="cc-by-sa-3.0", citation=SOURCE_CITATIONS["nq"]),
    BeirDataset("hotpotqa", ("train", "dev", "test"), URL, md5="f412724f78b0d91183a0e86805e16114",
                zip_bytes=654_025_350, license="CC BY-SA 4.0", test_queries=7_405, corpus_docs=5_233_329,
                license_id="cc-by-sa-4.0", citation=SOURCE_CITATIONS["hotpotqa"]),
    BeirDataset("fiqa", ("train", "dev", "test"), md5="17918ed23cd04fb15047f73e6c3bd9d9", zip_bytes=17_948_027,
                license="not stated by the source", test_queries=648, corpus_docs=57_638,
                license_id="unknown", citation=SOURCE_CITATIONS["fiqa"]),
    BeirDataset("signal1m", ("test",), ANY_JSON, ANY_JSON, license="Signal Media research licence",
                test_queries=97, corpus_docs=2_866_316,
                obtain=_bring_your_own("https://research.signal-ai.com/datasets/signal1m.html"),
                license_id="other", citation=SOURCE_CITATIONS["signal1m"],
                license_link="https://research.signal-ai.com/datasets/signal1m.html"),
    BeirDataset("trec-news", ("test",), ANY_JSON, ANY_JSON, license="TREC Washington Post corpus agreement",
                test_queries=57, corpus_docs=594_977,
                obtain=_bring_your_own("https://trec.nist.gov/data/wapost/"),
                license_id="other", citation=SOURCE_CITATIONS["trec-news"],
                license_link="https://trec.nist.gov/data/wapost/"),
    BeirDataset("arguana", ("test",), md5="8ad3e3c2a5867cdced806d6503f29b99", zip_bytes=3_773_617,
                license="CC BY 4.0", test_queries=1_406, corpus_docs=8_674,
                license_id="cc-by-4.0", citation=SOURCE_CITATIONS["arguana"]),
    BeirDataset("webis-touche2020", ("test",), TOUCHE_DOC, TOUCHE_QUERY, md5="46f650ba5a527fc69e0a6521c5a23563",
                zip_bytes=227_132_363, license="CC BY 4.0", test_queries=49, corpus_docs=382_545,
                license_id="cc-by-4.0", citation=SOURCE_CITATIONS["webis-touche2020"]),
    BeirDataset("quora", ("dev", "test"), md5="18fb154900ba42a600f84b839c173167", zip_bytes=15_853_968,
                license="Quora terms of service", test_queries=10_000, corpus_docs=522_931,
                license_id="other", license_link="https://www.quora.com/about/tos", citation=SOURCE_CITATIONS["quora"]),
    BeirDataset("dbpedia-entity", ("dev", "test"), URL, md5="c2a39eb420a3164af735795df012ac2c",
                zip_bytes=639_285_131, license="CC BY-SA 3.0", test_queries=400, corpus_docs=4_635_922,
                license_id="cc-by-sa-3.0", citation=SOURCE_CITATIONS["dbpedia-entity"]),
    BeirDataset("scidocs", ("test",), SCI, SCI, md5="38121350fc3a4d2f48850f6aff52e4a9", zip_bytes=142_471_588,
                license="GNU GPL v3.0", test_queries=1_000, corpus_docs=25_657,
                license_id="gpl-3.0", citation=SOURCE_CITATIONS["scidocs"]),
    BeirDataset("fever", ("train", "dev", "test"), md5="5a818580227bfb4b35bb6fa46d9b6c03", zip_bytes=1_236_988_269,
                license="CC BY-SA 3.0", test_queries=6_666, corpus_docs=5_416_568,
                license_id="cc-by-sa-3.0", citation=SOURCE_CITATIONS["fever"]),
    BeirDataset("climate-fever", ("test",), md5="8b66f0a9126c521bae2bde127b4dc99d", zip_bytes=1_228_666_652,
                license="not stated by the source", test_queries=1_535, corpus_docs=5_416_593,
                license_id="unknown", citation=SOURCE_CITATIONS["climate-fever"]),
    BeirDataset("scifact", ("train", "test"), (), ANY_JSON, md5="5f7d1de60b170fc8027bb7898e2efca1",
                zip_bytes=2_816_079, license="CC BY-NC 2.0", test_queries=300, corpus_docs=5_183,
                license_id="cc-by-nc-2.0", citation=SOURCE_CITATIONS["scifact"]),
    BeirDataset("robust04", ("test",), ANY_JSON, ANY_JSON, license="TREC disks 4 & 5 agreement",
                test_queries=249, corpus_docs=528_155,
                obtain=_bring_your_own("https://trec.nist.gov/data/cd45/"),
                license_id="other", citation=SOURCE_CITATIONS["robust04"],
                license_link="https://trec.nist.gov/data/cd45/"),
)

CQADUPSTACK_FORUMS: dict[str, tuple[int, int]] = {
    # forum: (test queries, corpus documents)
    "android": (699, 22_998), "english": (1_570, 40_221), "gaming": (1_595, 45_301), "gis": (885, 37_637),
    "mathematica": (804, 16_705), "physics": (1_039, 38_316), "programmers": (876, 32_176), "stats": (652, 42_269),
    "tex": (2_906, 68_184), "unix": (1_072, 47_382), "webmasters": (506, 17_405), "wordpress": (541, 48_605),
}


@dataclass(frozen=True)
class CqadupstackForum(BeirDataset):
    @property
    def root(self) -> str:
        return f"cqadupstack/{self.name.split('/')[-1]}"


CQADUPSTACK = tuple(
    CqadupstackForum(f"cqadupstack/{forum}", ("test",), TAGS, TAGS, md5="4e41456d7df8ee7760a7f866133bda78",
                     zip_bytes=5_343_728_040, license="Apache 2.0", test_queries=queries, corpus_docs=docs,
                     zip_name="cqadupstack", license_id="apache-2.0", citation=SOURCE_CITATIONS["cqadupstack"])
    for forum, (queries, docs) in CQADUPSTACK_FORUMS.items()
)

DATASETS: dict[str, BeirDataset] = {d.path: d for d in BEIR_DATASETS + CQADUPSTACK}



PUBLISHED_QUERY_SPLIT = {"beir/msmarco": "dev"}
"""The qrels split whose query count BEIR's table publishes as `test_queries`, when it is not `test`."""

