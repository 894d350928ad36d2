"""BEIR: the 18 datasets (cqadupstack as 12 forums), each as `corpus`, `queries` and `qrels`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import datasets
import pyarrow as pa

from .base import RagBuilder
from .errors import MissingSourceError
from .readers import JSON_FIELD, QRELS_SCHEMA, Shard, read_jsonl, read_qrels, shards_of
from .sources import Download, SourceFiles, download_verified
from .validate import KnownDefect

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
ANY_JSON = None
"""Metadata whose keys vary per row (or whose shape is not published): kept as one JSON text column."""

BEIR_CITATION = """@inproceedings{thakur2021beir,
  title={{BEIR}: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models},
  author={Nandan Thakur and Nils Reimers and Andreas R{\\"u}ckl{\\'e} and Abhishek Srivastava and Iryna Gurevych},
  booktitle={Thirty-fifth Conference on Neural Information Processing Systems Datasets and Benchmarks Track (Round 2)},
  year={2021},
  url={https://openreview.net/forum?id=wCu6T5xFjeJ}
}"""


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
        base = os.environ.get(BASE_URL_ENV, BASE_URL).rstrip("/")
        return Download(f"{base}/{self.archive}.zip", md5=self.md5, size=self.zip_bytes)


def _bring_your_own(where: str) -> str:
    return f"not redistributable; obtain it as described at {where} and pass data_dir"


SOURCE_CITATIONS: dict[str, str] = {
    "msmarco": """@inproceedings{nguyen2016msmarco,
  title={{MS MARCO}: A Human Generated MAchine Reading COmprehension Dataset},
  author={Tri Nguyen and Mir Rosenberg and Xia Song and Jianfeng Gao and Saurabh Tiwary and Rangan Majumder
    and Li Deng},
  booktitle={Proceedings of the Workshop on Cognitive Computation (CoCo@NIPS 2016)},
  year={2016}
}""",
    "trec-covid": """@article{voorhees2021treccovid,
  title={{TREC-COVID}: Constructing a Pandemic Information Retrieval Test Collection},
  author={Ellen Voorhees and Tasmeer Alam and Steven Bedrick and Dina Demner-Fushman and William R. Hersh and
    Kyle Lo and Kirk Roberts and Ian Soboroff and Lucy Lu Wang},
  journal={SIGIR Forum},
  volume={54},
  number={1},
  year={2021}
}""",
    "nfcorpus": """@inproceedings{boteva2016nfcorpus,
  title={A Full-Text Learning to Rank Dataset for Medical Information Retrieval},
  author={Vera Boteva and Demian Gholipour and Artem Sokolov and Stefan Riezler},
  booktitle={Proceedings of the 38th European Conference on Information Retrieval (ECIR)},
  year={2016}
}""",
    "bioasq": """@article{tsatsaronis2015bioasq,
  title={An overview of the {BIOASQ} large-scale biomedical semantic indexing and question answering competition},
  author={George Tsatsaronis and Georgios Balikas and Prodromos Malakasiotis and Ioannis Partalas and Matthias
    Zschunke and Michael R. Alvers and Dirk Weissenborn and Anastasia Krithara and Sergios Petridis and
    Dimitris Polychronopoulos and others},
  journal={BMC Bioinformatics},
  volume={16},
  pages={138},
  year={2015}
}""",
    "nq": """@article{kwiatkowski2019nq,
  title={Natural Questions: A Benchmark for Question Answering Research},
  author={Tom Kwiatkowski and Jennimaria Palomaki and Olivia Redfield and Michael Collins and Ankur Parikh and
    Chris Alberti and Danielle Epstein and Illia Polosukhin and Jacob Devlin and Kenton Lee and others},
  journal={Transactions of the Association for Computational Linguistics},
  volume={7},
  pages={452--466},
  year={2019}
}""",
    "hotpotqa": """@inproceedings{yang2018hotpotqa,
  title={{HotpotQA}: A Dataset for Diverse, Explainable Multi-hop Question Answering},
  author={Zhilin Yang and Peng Qi and Saizheng Zhang and Yoshua Bengio and William W. Cohen and Ruslan
    Salakhutdinov and Christopher D. Manning},
  booktitle={Proceedings of the 2018 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year={2018}
}""",
    "fiqa": """@inproceedings{maia2018fiqa,
  title={{WWW'18} Open Challenge: Financial Opinion Mining and Question Answering},
  author={Macedo Maia and Siegfried Handschuh and Andr{\\'e} Freitas and Brian Davis and Ross McDermott and
    Manel Zarrouk and Alexandra Balahur},
  booktitle={Companion Proceedings of The Web Conference 2018},
  year={2018}
}""",
    "signal1m": """@inproceedings{suarez2018signal1m,
  title={A Data Collection for Evaluating the Retrieval of Related Tweets to News Articles},
  author={Axel Suarez and Dyaa Albakour and David Corney and Miguel Martinez and Jos{\\'e} Esquivel},
  booktitle={Proceedings of the 40th European Conference on Information Retrieval (ECIR)},
  year={2018}
}""",
    "trec-news": """@inproceedings{soboroff2018trecnews,
  title={{TREC} 2018 News Track Overview},
  author={Ian Soboroff and Shudong Huang and Donna Harman},
  booktitle={Proceedings of the Twenty-Seventh Text REtrieval Conference (TREC 2018)},
  year={2018}
}""",
    "arguana": """@inproceedings{wachsmuth2018arguana,
  title={Retrieval of the Best Counterargument without Prior Topic Knowledge},
  author={Henning Wachsmuth and Shahbaz Syed and Benno Stein},
  booktitle={Proceedings of the 56th Annual Meeting of the Association for Computational Linguistics (ACL)},
  year={2018}
}""",
    "webis-touche2020": """@inproceedings{bondarenko2020touche,
  title={Overview of {Touch{\\'e}} 2020: Argument Retrieval},
  author={Alexander Bondarenko and Maik Fr{\\"o}be and Meriem Beloucif and Lukas Gienapp and Yamen Ajjour and
    Alexander Panchenko and Chris Biemann and Benno Stein and Henning Wachsmuth and Martin Potthast and
    Matthias Hagen},
  booktitle={Experimental IR Meets Multilinguality, Multimodality, and Interaction (CLEF 2020)},
  year={2020}
}""",
    "cqadupstack": """@inproceedings{hoogeveen2015cqadupstack,
  title={{CQADupStack}: A Benchmark Data Set for Community Question-Answering Research},
  author={Doris Hoogeveen and Karin M. Verspoor and Timothy Baldwin},
  booktitle={Proceedings of the 20th Australasian Document Computing Symposium (ADCS)},
  year={2015}
}""",
    "quora": """@misc{iyer2017quora,
  title={First {Quora} Dataset Release: Question Pairs},
  author={Shankar Iyer and Nikhil Dandekar and Korn{\\'e}l Csernai},
  year={2017},
  url={https://quoradata.quora.com/First-Quora-Dataset-Release-Question-Pairs}
}""",
    "dbpedia-entity": """@inproceedings{hasibi2017dbpedia,
  title={{DBpedia-Entity} v2: A Test Collection for Entity Search},
  author={Faegheh Hasibi and Fedor Nikolaev and Chenyan Xiong and Krisztian Balog and Svein Erik Bratsberg and
    Alexander Kotov and Jamie Callan},
  booktitle={Proceedings of the 40th International ACM SIGIR Conference on Research and Development in
    Information Retrieval},
  year={2017}
}""",
    "scidocs": """@inproceedings{cohan2020specter,
  title={{SPECTER}: Document-level Representation Learning using Citation-informed Transformers},
  author={Arman Cohan and Sergey Feldman and Iz Beltagy and Doug Downey and Daniel S. Weld},
  booktitle={Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics (ACL)},
  year={2020}
}""",
    "fever": """@inproceedings{thorne2018fever,
  title={{FEVER}: a Large-scale Dataset for Fact Extraction and {VERification}},
  author={James Thorne and Andreas Vlachos and Christos Christodoulopoulos and Arpit Mittal},
  booktitle={Proceedings of NAACL-HLT},
  year={2018}
}""",
    "climate-fever": """@article{diggelmann2020climatefever,
  title={{CLIMATE-FEVER}: A Dataset for Verification of Real-World Climate Claims},
  author={Thomas Diggelmann and Jordan Boyd-Graber and Jannis Bulian and Massimiliano Ciaramita and Markus Leippold},
  journal={arXiv preprint arXiv:2012.00614},
  year={2020}
}""",
    "scifact": """@inproceedings{wadden2020scifact,
  title={Fact or Fiction: Verifying Scientific Claims},
  author={David Wadden and Shanchuan Lin and Kyle Lo and Lucy Lu Wang and Madeleine van Zuylen and Arman Cohan
    and Hannaneh Hajishirzi},
  booktitle={Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year={2020}
}""",
    "robust04": """@inproceedings{voorhees2004robust,
  title={Overview of the {TREC} 2004 Robust Retrieval Track},
  author={Ellen M. Voorhees},
  booktitle={Proceedings of the Thirteenth Text REtrieval Conference (TREC 2004)},
  year={2004}
}""",
}
"""BibTeX of each source dataset, by BEIR name (cqadupstack: all forums)."""


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
CONFIGS = ("corpus", "queries", "qrels")


def _metadata_fields(metadata: tuple[pa.Field, ...] | None) -> list[pa.Field]:
    if metadata is None:
        return [pa.field("metadata", STRING, metadata=JSON_FIELD)]
    return [pa.field("metadata", pa.struct(list(metadata)))]  # an empty struct still accepts `"metadata": {}`


def source_schema(dataset: BeirDataset, config: str) -> pa.Schema:
    """The schema a line of corpus.jsonl / queries.jsonl is read with (metadata nested as in the file)."""
    if config == "corpus":
        fields = [pa.field("_id", STRING), pa.field("title", STRING), pa.field("text", STRING)]
        return pa.schema(fields + _metadata_fields(dataset.doc_metadata))
    fields = [pa.field("_id", STRING), pa.field("text", STRING)]
    return pa.schema(fields + _metadata_fields(dataset.query_metadata))


def output_schema(dataset: BeirDataset, config: str) -> pa.Schema:
    """Columns as published: `_id`, (`title`,) `text`, then one typed column per metadata field."""
    if config == "qrels":
        return QRELS_SCHEMA
    fields = []
    for field in source_schema(dataset, config):
        if field.name == "metadata" and pa.types.is_struct(field.type):
            fields.extend(field.type)
        else:
            fields.append(pa.field(field.name, field.type))
    return pa.schema(fields)


def flatten_metadata(table: pa.Table, schema: pa.Schema) -> pa.Table:
    if "metadata" not in table.column_names or not pa.types.is_struct(table.schema.field("metadata").type):
        return table.cast(schema)
    metadata = table.column("metadata").combine_chunks()
    children = dict(zip([f.name for f in metadata.type], metadata.flatten()))
    columns = [children[name] if name in children else table.column(name) for name in schema.names]
    return pa.Table.from_arrays(columns, schema=schema)


class BeirBuilder(RagBuilder):
    BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=RagBuilder.VERSION) for name in CONFIGS]

    def __init__(self, path: str, config_name: str, **kwargs):
        if path not in DATASETS:
            raise ValueError(f"unknown BEIR dataset {path!r}; known: {', '.join(DATASETS)}")
        self.dataset = DATASETS[path]
        super().__init__(path, config_name, **kwargs)

    def source_identity(self, data_dir: str | None):
        if data_dir is None:
            download = self.dataset.download
            return [download.url, download.md5] if download else None
        files = self.source_files_in(data_dir)
        return files.identity(["corpus.jsonl", "queries.jsonl"] + [f"qrels/{s}.tsv" for s in self.dataset.splits])

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=f"BEIR {self.dataset.name}: {self.config.name}",
            features=datasets.Features.from_arrow_schema(output_schema(self.dataset, self.config.name)),
            citation=BEIR_CITATION,
            homepage="https://github.com/beir-cellar/beir",
            license=self.dataset.license,
        )

    def source_files_in(self, data_dir: str) -> SourceFiles:
        """The dataset inside `data_dir`: the extracted folder itself, a `<name>/` folder in it, or the zip."""
        root = self.dataset.root
        for folder in (data_dir, os.path.join(data_dir, root), os.path.join(data_dir, root.split("/")[-1])):
            if any(os.path.exists(os.path.join(folder, name)) for name in ("corpus.jsonl", "queries.jsonl", "qrels")):
                return SourceFiles(folder)
        zip_path = os.path.join(data_dir, f"{self.dataset.archive}.zip")
        if os.path.isfile(zip_path):
            return SourceFiles(zip_path, root=root)
        raise MissingSourceError(
            f"{data_dir}: expected the extracted BEIR folder (corpus.jsonl, queries.jsonl, qrels/) "
            f"or {self.dataset.archive}.zip"
        )

    def source_files(self, dl_manager) -> SourceFiles:
        if self.config.data_dir:
            return self.source_files_in(self.config.data_dir)
        download = self.dataset.download
        if download is None:
            raise MissingSourceError(f"BEIR {self.dataset.name} is {self.dataset.obtain}")
        return SourceFiles(download_verified(self.download_manager(dl_manager), download), root=self.dataset.root)

    def _split_generators(self, dl_manager):
        files = self.source_files(dl_manager)
        config = self.config.name
        if config == "qrels":
            for split in self.dataset.splits:
                files.require(f"qrels/{split}.tsv")
            return [
                datasets.SplitGenerator(name=split, gen_kwargs={"shards": [Shard(files, f"qrels/{split}.tsv")]})
                for split in self.dataset.splits
            ]
        relpath, split = ("corpus.jsonl", "corpus") if config == "corpus" else ("queries.jsonl", "queries")
        return [datasets.SplitGenerator(name=split, gen_kwargs={"shards": shards_of(files, relpath)})]

    def _generate_tables(self, shards: list[Shard]) -> Iterator[tuple[tuple[int, int], pa.Table]]:
        config = self.config.name
        for shard_index, shard in enumerate(shards):
            if config == "qrels":
                tables = read_qrels(shard)
            else:
                schema = output_schema(self.dataset, config)
                raw = read_jsonl(shard, source_schema(self.dataset, config), required=("_id", "text"))
                tables = (flatten_metadata(table, schema) for table in raw)
            for table_index, table in enumerate(tables):
                yield (shard_index, table_index), table


BUILDERS = {path: BeirBuilder for path in DATASETS}

PUBLISHED_QUERY_SPLIT = {"beir/msmarco": "dev"}
"""The qrels split whose query count BEIR's table publishes as `test_queries`, when it is not `test`."""

KNOWN_DEFECTS: dict[str, tuple[KnownDefect, ...]] = {
    "beir/arguana": (
        KnownDefect("missing_docs", "qrels", "a few qrels point at docs missing from corpus.jsonl, e.g. "
                    "test-free-speech-debate-yfsdfkhbwu-con03b (beir-cellar/beir#101, #172)", split="test"),
        KnownDefect("shared_ids", "queries", "queries are also corpus passages; BEIR's evaluation ignores a query "
                    "retrieving itself (beir-cellar/beir#72)"),
    ),
    "beir/quora": (
        KnownDefect("shared_ids", "queries", "questions are also corpus entries; BEIR's evaluation ignores a query "
                    "retrieving itself (beir-cellar/beir#72)"),
    ),
}
"""Upstream defects `ragloaders validate` reports as warnings (see validate.KnownDefect)."""


def published_counts(path: str) -> dict[tuple[str, str | None], int]:
    """BEIR's published figures: distinct test (msmarco: dev) query ids in the qrels; corpus documents."""
    dataset = DATASETS[path]
    counts: dict[tuple[str, str | None], int] = {}
    if dataset.test_queries is not None:
        counts[("qrels", PUBLISHED_QUERY_SPLIT.get(path, "test"))] = dataset.test_queries
    if dataset.corpus_docs is not None:
        counts[("corpus", "corpus")] = dataset.corpus_docs
    return counts


def known_defects(path: str) -> tuple[KnownDefect, ...]:
    return KNOWN_DEFECTS.get(path, ())

CARD_NOTES: dict[str, tuple[str, ...]] = {
    "beir/nq": ("BEIR's table lists train and test for nq, but nq.zip holds only test qrels.",),
}
"""Upstream facts for the dataset card that no validation check finds (those are in KNOWN_DEFECTS)."""

FIELD_NOTES = {
    "corpus._id": "document id, a string byte for byte as in corpus.jsonl",
    "corpus.title": "document title (may be empty)",
    "corpus.text": "document text",
    "queries._id": "query id, a string byte for byte as in queries.jsonl",
    "queries.text": "query text",
    "metadata": "the line's `metadata` object as JSON text (its keys vary per line)",
    **{name: "from the line's `metadata` object" for name in (
        "url", "pubmed_id", "stance", "authors", "year", "cited_by", "references", "tags", "query", "narrative",
        "description")},
    "query-id": "a `_id` of the queries config",
    "corpus-id": "a `_id` of the corpus config",
    "score": "relevance grade as in the qrels file (0 and negative grades kept)",
}


def card_facts(path: str) -> dict:
    """What the dataset card of a BEIR path says (keys of ragloaders.cards.CardFacts)."""
    dataset = DATASETS[path]
    family = dataset.name.split("/")[0]
    published = [f"{count:,} {what}" for count, what in
                 ((dataset.test_queries, f"{PUBLISHED_QUERY_SPLIT.get(path, 'test')} queries"),
                  (dataset.corpus_docs, "corpus documents")) if count is not None]
    summary = (
        f"BEIR's `{dataset.name}` retrieval dataset as three configs: `corpus` (split `corpus`), `queries` (split "
        f"`queries`, every line of queries.jsonl) and `qrels` (splits {', '.join(f'`{s}`' for s in dataset.splits)}). "
        f"Metadata fields are columns of their own. BEIR publishes {' and '.join(published) or 'no counts'}."
    )
    source_files = []
    if dataset.md5:
        source_files.append({"name": f"{dataset.archive}.zip", "url": f"{BASE_URL}/{dataset.archive}.zip",
                             "md5": dataset.md5, "bytes": dataset.zip_bytes})
    return {
        "family": "beir",
        "pretty_name": f"BEIR {dataset.name}",
        "summary": summary,
        "license": dataset.license_id,
        "license_text": dataset.license,
        "license_name": f"{family}-license" if dataset.license_id == "other" else None,
        "license_link": dataset.license_link or None,
        "citations": [BEIR_CITATION, dataset.citation],
        "source_files": source_files,
        "obtain": dataset.obtain,
        "known_defects": list(CARD_NOTES.get(path, ())),
        "field_notes": FIELD_NOTES,
        "tags": [family],
        "homepage": "https://github.com/beir-cellar/beir",
    }
