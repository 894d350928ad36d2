"""The finance domain: company names and tickers (`finance_company`), price, dividend, market-cap and `info`
tables keyed by ticker.

As the official server: `get_company_name` ranks every distinct company name's normalised form with BM25Okapi (one
document per name, in the CSV's order, not deduplicated: two names with one normalised form both come back, each time
that form ranks); a ticker lookup is exact; market caps and dividends are answered from each value's JSON text
(`record_json`), so a number the source holds as an integer stays one (7, not 7.0); a ticker absent from a table gives
null; `get_eps` and `get_pe_ratio` give `info`'s `forwardEps` / `forwardPE` (null when absent).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .indexes import KeyIndex
from .rows import cell, json_value, keyed
from .search import OkapiIndex, normalise
from .tables import Tables


class FinanceDomain:
    def __init__(self, tables: Tables):
        companies = tables["finance_company"]
        self.ticker_of: dict[str, Any] = {name: ticker for name, ticker in zip(
            companies.column("Name").to_pylist(), companies.column("Symbol").to_pylist()) if name is not None}
        self.normalised = [normalise(name) for name in self.ticker_of]
        self.names_of: dict[str, list[str]] = {}
        for name, normalised in zip(self.ticker_of, self.normalised):
            self.names_of.setdefault(normalised, []).append(name)
        self.index = OkapiIndex([name.split() for name in self.normalised])
        self.tables = tables
        self.keyed: dict[str, tuple[pa.Table, KeyIndex]] = {}

    def _value(self, config: str, column: str, ticker: str) -> Any:
        if config not in self.keyed:  # each table on its first call (the minute prices are most of the KG)
            self.keyed[config] = keyed(self.tables, config, "ticker")
        table, keys = self.keyed[config]
        index = keys.last(ticker)
        return None if index is None else cell(table, column, index)

    def get_company_name(self, query: str) -> list[str]:
        found: list[str] = []
        for doc in self.index.top(query):
            found += self.names_of[self.normalised[doc]]
        return found[:10]

    def get_ticker_by_name(self, company_name: str) -> str | None:
        return self.ticker_of.get(company_name)

    def _prices(self, config: str, ticker: str) -> dict | None:
        prices = self._value(config, "prices", ticker)
        if prices is None:
            return None
        return {entry.pop("date"): entry for entry in prices}

    def get_price_history(self, ticker_name: str) -> dict | None:
        return self._prices("finance_price", ticker_name)

    def get_detailed_price_history(self, ticker_name: str) -> dict | None:
        return self._prices("finance_detailed_price", ticker_name)

    def _exact(self, config: str, ticker: str) -> Any:
        """The ticker's value as the source holds it (its `record_json`: 7 stays an integer), or None."""
        text = self._value(config, "record_json", ticker)
        return None if text is None else json_value(text, self.tables.where(config), "record_json")

    def get_dividends_history(self, ticker_name: str) -> dict | None:
        return self._exact("finance_dividend", ticker_name)

    def get_market_capitalization(self, ticker_name: str) -> float | int | None:
        return self._exact("finance_marketcap", ticker_name)

    def get_info(self, ticker_name: str) -> Any:
        info = self._value("finance_info", "info", ticker_name)
        return None if info is None else json_value(info, self.tables.where("finance_info"), "info")

    def _info_field(self, ticker_name: str, field: str) -> Any:
        info = self.get_info(ticker_name)
        return info.get(field) if isinstance(info, dict) else None

    def get_eps(self, ticker_name: str) -> Any:
        return self._info_field(ticker_name, "forwardEps")

    def get_pe_ratio(self, ticker_name: str) -> Any:
        return self._info_field(ticker_name, "forwardPE")
