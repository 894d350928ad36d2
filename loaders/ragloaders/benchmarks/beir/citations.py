"""BibTeX of BEIR and of each dataset it collects."""

BEIR_CITATION = """@inproceedings{thakur2021beir,
  title={{BEIR}: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models},
  author={Nandan Thakur and Nils Reimers and Andreas R{\\"u}ckl{\\'e} and Abhishek Srivastava and Iryna Gurevych},
  booktitle={Thirty-fifth Conference on Neural Information Processing Systems Datasets and Benchmarks Track (Round 2)},
  year={2021},
  url={https://openreview.net/forum?id=wCu6T5xFjeJ}
}"""


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
