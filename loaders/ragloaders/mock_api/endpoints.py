"""The 38 endpoints of CRAG's mock API as data: the path (which also names the official client's method), the
domain method that answers and the request body's fields (name, type, default); and `MockKg`, which answers them
from a build."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .finance import FinanceDomain
from .movie import MovieDomain
from .music import MusicDomain
from .open_kg import OpenDomain
from .sports import SportsDomain
from .tables import Tables

REQUIRED = object()
"""A body field without a default."""


@dataclass(frozen=True)
class Field:
    """A field of a request body: its name, its Python type (as the official server's model annotates it) and its
    default (REQUIRED: none)."""

    name: str
    type: Any
    default: Any = REQUIRED


def _query(kind: Any = str) -> tuple[Field, ...]:
    return (Field("query", kind),)


@dataclass(frozen=True)
class Endpoint:
    path: str
    """`/<domain>/<name>`: the domain that answers, and the name of the method that does (its slashes as `_`)."""
    answer: Callable[..., Any]
    """The domain's method answering it (`MovieDomain.get_person_info`), called on the domain with the body's fields
    in order."""
    body: tuple[Field, ...] = _query()

    @property
    def domain(self) -> str:
        """The key of DOMAINS whose domain answers."""
        return self.path.split("/")[1]

    @property
    def client_method(self) -> str:
        """The method of the official client (`apiwrapper/pycragapi.py`, class CRAG) that posts to `path`."""
        return self.path.strip("/").replace("/", "_")


_DATED = (Field("date", str), Field("team_name", str | None, None))
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("/open/search_entity_by_name", OpenDomain.search_entity_by_name),
    Endpoint("/open/get_entity", OpenDomain.get_entity),
    Endpoint("/movie/get_person_info", MovieDomain.get_person_info),
    Endpoint("/movie/get_movie_info", MovieDomain.get_movie_info),
    Endpoint("/movie/get_year_info", MovieDomain.get_year_info),
    Endpoint("/movie/get_movie_info_by_id", MovieDomain.get_movie_info_by_id, _query(int)),
    Endpoint("/movie/get_person_info_by_id", MovieDomain.get_person_info_by_id, _query(int)),
    Endpoint("/finance/get_company_name", FinanceDomain.get_company_name),
    Endpoint("/finance/get_ticker_by_name", FinanceDomain.get_ticker_by_name),
    Endpoint("/finance/get_price_history", FinanceDomain.get_price_history),
    Endpoint("/finance/get_detailed_price_history", FinanceDomain.get_detailed_price_history),
    Endpoint("/finance/get_dividends_history", FinanceDomain.get_dividends_history),
    Endpoint("/finance/get_market_capitalization", FinanceDomain.get_market_capitalization),
    Endpoint("/finance/get_eps", FinanceDomain.get_eps),
    Endpoint("/finance/get_pe_ratio", FinanceDomain.get_pe_ratio),
    Endpoint("/finance/get_info", FinanceDomain.get_info),
    Endpoint("/music/search_artist_entity_by_name", MusicDomain.search_artist_entity_by_name),
    Endpoint("/music/search_song_entity_by_name", MusicDomain.search_song_entity_by_name),
    Endpoint("/music/get_billboard_rank_date", MusicDomain.get_billboard_rank_date,
             (Field("rank", int), Field("date", str | None, None))),
    Endpoint("/music/get_billboard_attributes", MusicDomain.get_billboard_attributes,
             (Field("date", str), Field("attribute", str), Field("song_name", str))),
    Endpoint("/music/grammy_get_best_artist_by_year", MusicDomain.grammy_get_best_artist_by_year, _query(int)),
    Endpoint("/music/grammy_get_award_count_by_artist", MusicDomain.grammy_get_award_count_by_artist),
    Endpoint("/music/grammy_get_award_count_by_song", MusicDomain.grammy_get_award_count_by_song),
    Endpoint("/music/grammy_get_best_song_by_year", MusicDomain.grammy_get_best_song_by_year, _query(int)),
    Endpoint("/music/grammy_get_award_date_by_artist", MusicDomain.grammy_get_award_date_by_artist),
    Endpoint("/music/grammy_get_best_album_by_year", MusicDomain.grammy_get_best_album_by_year, _query(int)),
    Endpoint("/music/grammy_get_all_awarded_artists", MusicDomain.grammy_get_all_awarded_artists, ()),
    Endpoint("/music/get_artist_birth_place", MusicDomain.get_artist_birth_place),
    Endpoint("/music/get_artist_birth_date", MusicDomain.get_artist_birth_date),
    Endpoint("/music/get_members", MusicDomain.get_members),
    Endpoint("/music/get_lifespan", MusicDomain.get_lifespan),
    Endpoint("/music/get_song_author", MusicDomain.get_song_author),
    Endpoint("/music/get_song_release_country", MusicDomain.get_song_release_country),
    Endpoint("/music/get_song_release_date", MusicDomain.get_song_release_date),
    Endpoint("/music/get_artist_all_works", MusicDomain.get_artist_all_works),
    Endpoint("/sports/soccer/get_games_on_date", SportsDomain.soccer_get_games_on_date, _DATED),
    Endpoint("/sports/nba/get_games_on_date", SportsDomain.nba_get_games_on_date, _DATED),
    Endpoint("/sports/nba/get_play_by_play_data_by_game_ids", SportsDomain.nba_get_play_by_play_data_by_game_ids,
             (Field("game_ids", list[str]),)),
)
BY_PATH = {endpoint.path: endpoint for endpoint in ENDPOINTS}
BY_CLIENT_METHOD = {endpoint.client_method: endpoint for endpoint in ENDPOINTS}
ROOT_MESSAGE = {"message": "The CRAG API service is running"}


DOMAINS = {"open": OpenDomain, "movie": MovieDomain, "finance": FinanceDomain, "music": MusicDomain,
           "sports": SportsDomain}


class MockKg:
    """The five domains answering the endpoints, built from the tables of one crag/mock_kg build, each on the first
    call it answers (so a start converts and indexes only what its first calls read)."""

    def __init__(self, tables: Tables):
        self.tables = tables
        self._domains: dict[str, Any] = {}
        self._lock = threading.Lock()

    def domain(self, name: str) -> Any:
        """The domain `name` (a key of DOMAINS), built on first use."""
        with self._lock:
            if name not in self._domains:
                self._domains[name] = DOMAINS[name](self.tables)
            return self._domains[name]

    def answer(self, endpoint: Endpoint, values: list[Any]) -> dict[str, Any]:
        """The server's JSON body for a request whose body fields (validated) are `values`."""
        return {"result": endpoint.answer(self.domain(endpoint.domain), *values)}
