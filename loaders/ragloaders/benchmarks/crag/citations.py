"""BibTeX of CRAG."""

CITATION = """@article{yang2024crag,
  title={{CRAG} -- Comprehensive {RAG} Benchmark},
  author={Xiao Yang and Kai Sun and Hao Xin and Yushi Sun and Nikita Bhalla and Xiangsen Chen and Sajal Choudhary and
          Rongze Daniel Gui and Ziran Will Jiang and Ziyu Jiang and Lingkun Kong and Brian Moran and Jiaqi Wang and
          Yifan Ethan Xu and An Yan and Chenyu Yang and Eting Yuan and Hanwen Zha and Nan Tang and Lei Chen and
          Nicolas Scheffer and Yue Liu and Nirav Shah and Rakesh Wanga and Anuj Kumar and Wen-tau Yih and
          Xin Luna Dong},
  journal={arXiv preprint arXiv:2406.04744},
  year={2024},
  url={https://arxiv.org/abs/2406.04744}
}"""
