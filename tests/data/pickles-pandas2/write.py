"""Writes this folder's pickles; run with pandas 2.2.3 and numpy 1.26.4 (not the test environment's versions)."""

import datetime
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent


def soccer_like() -> pd.DataFrame:
    """tests/test_safe_pickle.py's soccer_like(), as pandas 2 builds it."""
    index = pd.MultiIndex.from_tuples(
        [("ENG-Premier League", "2324", "Everton", "2024-03-09 Manchester Utd-Everton"),
         (None, "2324", "Almería", "2024-03-01 Celta Vigo-Almería")], names=["league", "season", "team", "game"])
    return pd.DataFrame({"date": pd.to_datetime(["2024-03-09", None]), "GF": pd.Series(["0", 1], dtype=object),
                         "xG": [1.6, np.nan], "Poss": [49, 51], "Notes": [None, "x"], "flag": [True, False],
                         "cat": pd.Categorical(["a", "b"]), "n": pd.array([1, None], dtype="Int64"),
                         "tz": pd.to_datetime(["2024-01-01", "2024-01-02"]).tz_localize("Europe/London"),
                         "s": pd.array(["a", None], dtype="string")}, index=index)


def expected(frame: pd.DataFrame) -> list[dict]:
    rows = []
    for record in frame.reset_index().astype(object).to_dict("records"):
        row = {}
        for key, value in record.items():
            if value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
                value = None
            elif isinstance(value, pd.Timestamp):
                value = value.to_pydatetime().isoformat()
            row[key] = value
        if row["GF"] is not None:
            row["GF"] = json.dumps(row["GF"])
        rows.append(row)
    return rows


for protocol in (2, 5):
    (HERE / f"soccer_like.{protocol}.pkl").write_bytes(pickle.dumps(soccer_like(), protocol=protocol))
(HERE / "soccer_like.expected.json").write_text(json.dumps(expected(soccer_like()), default=str) + "\n")
mapping = {"a": {"x": np.float64(1.5), "m": np.array(["a", "b"]), "d": datetime.date(2020, 1, 2),
                 "t": pd.Timestamp("2024-01-01 10:00")}}
(HERE / "dict.2.pkl").write_bytes(pickle.dumps(mapping, protocol=2))
