"""ranx (and numba) as a test oracle, run in a subprocess so that a crash in their compiled code fails a test
instead of killing pytest. Reads JSON requests on stdin, one a line, and writes each answer as one line of JSON on
stdout (one process serves a whole test module, so ranx and numba load once):

- {"evaluate": [[qrels, run, metrics], ...]}: ranx.evaluate per query on each case, as the mmRAG authors call it
  (Qrels and Run built once from the dicts, no make_comparable), queries in ranx's order (sorted ids);
- {"orders": [docs, ...]}: the document order of ranx.Run({"q": docs});
- {"argsort": [keys, ...]}: numba's np.argsort (quicksort) of each list of floats.
"""

from __future__ import annotations

import json
import sys
import warnings


def evaluate(qrels: dict, run: dict, metrics: list[str]) -> dict:
    import ranx

    values = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    return {metric: [float(v) for v in values[metric]] for metric in metrics}


def order(docs: dict) -> list[str]:
    import ranx

    return list(ranx.Run({"q": docs}).run["q"].keys())


_ARGSORT = []


def argsort(keys: list[float]) -> list[int]:
    import numba
    import numpy as np

    if not _ARGSORT:  # compiled once
        _ARGSORT.append(numba.njit(lambda a: np.argsort(a)))
    return [int(i) for i in _ARGSORT[0](np.array(keys, dtype=np.float64))]


def main() -> None:
    warnings.simplefilter("ignore")  # numba's type-safety warnings about hashed ids
    for line in sys.stdin:
        request = json.loads(line)
        answer = {
            "evaluate": [evaluate(*case) for case in request.get("evaluate", [])],
            "orders": [order(docs) for docs in request.get("orders", [])],
            "argsort": [argsort(keys) for keys in request.get("argsort", [])],
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
