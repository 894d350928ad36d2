"""BibTeX of mmRAG."""

MMRAG_CITATION = """@article{xu2025mmrag,
  title={mmRAG: A Modular Benchmark for Retrieval-Augmented Generation over Text, Tables, and Knowledge Graphs},
  author={Xu, Chuan and Chen, Qiaosheng and Feng, Yutong and Cheng, Gong},
  journal={arXiv preprint arXiv:2505.11180},
  year={2025}
}"""
