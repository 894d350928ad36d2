"""The 38 endpoints of CRAG's mock API as data: path, the official client's method, the request body's fields
(name, type, default) and the domain method that answers; and `MockKg`, which answers them from a build."""

from __future__ import annotations

import threading
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
FIELD_TYPES = ("str", "int", "str | None", "list[str]")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    default: Any = REQUIRED


@dataclass(frozen=True)
class Endpoint:
    path: str
    client_method: str
    """The method of the official client (`apiwrapper/pycragapi.py`, class CRAG) that posts to `path`."""
    answer: str
    """`domain.method` of MockKg answering it, called with the body's fields in order."""
    body: tuple[Field, ...]


def _query(kind: str = "str") -> tuple[Field, ...]:
    return (Field("query", kind),)


_DATED = (Field("date", "str"), Field("team_name", "str | None", None))
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("/open/search_entity_by_name", "open_search_entity_by_name", "open.search_entity_by_name", _query()),
    Endpoint("/open/get_entity", "open_get_entity", "open.get_entity", _query()),
    Endpoint("/movie/get_person_info", "movie_get_person_info", "movie.get_person_info", _query()),
    Endpoint("/movie/get_movie_info", "movie_get_movie_info", "movie.get_movie_info", _query()),
    Endpoint("/movie/get_year_info", "movie_get_year_info", "movie.get_year_info", _query()),
    Endpoint("/movie/get_movie_info_by_id", "movie_get_movie_info_by_id", "movie.get_movie_info_by_id",
             _query("int")),
    Endpoint("/movie/get_person_info_by_id", "movie_get_person_info_by_id", "movie.get_person_info_by_id",
             _query("int")),
    Endpoint("/finance/get_company_name", "finance_get_company_name", "finance.get_company_name", _query()),
    Endpoint("/finance/get_ticker_by_name", "finance_get_ticker_by_name", "finance.get_ticker_by_name", _query()),
    Endpoint("/finance/get_price_history", "finance_get_price_history", "finance.get_price_history", _query()),
    Endpoint("/finance/get_detailed_price_history", "finance_get_detailed_price_history",
             "finance.get_detailed_price_history", _query()),
    Endpoint("/finance/get_dividends_history", "finance_get_dividends_history", "finance.get_dividends_history",
             _query()),
    Endpoint("/finance/get_market_capitalization", "finance_get_market_capitalization",
             "finance.get_market_capitalization", _query()),
    Endpoint("/finance/get_eps", "finance_get_eps", "finance.get_eps", _query()),
    Endpoint("/finance/get_pe_ratio", "finance_get_pe_ratio", "finance.get_pe_ratio", _query()),
    Endpoint("/finance/get_info", "finance_get_info", "finance.get_info", _query()),
    Endpoint("/music/search_artist_entity_by_name", "music_search_artist_entity_by_name",
             "music.search_artist_entity_by_name", _query()),
    Endpoint("/music/search_song_entity_by_name", "music_search_song_entity_by_name",
             "music.search_song_entity_by_name", _query()),
    Endpoint("/music/get_billboard_rank_date", "music_get_billboard_rank_date", "music.get_billboard_rank_date",
             (Field("rank", "int"), Field("date", "str | None", None))),
    Endpoint("/music/get_billboard_attributes", "music_get_billboard_attributes", "music.get_billboard_attributes",
             (Field("date", "str"), Field("attribute", "str"), Field("song_name", "str"))),
    Endpoint("/music/grammy_get_best_artist_by_year", "music_grammy_get_best_artist_by_year",
             "music.grammy_get_best_artist_by_year", _query("int")),
    Endpoint("/music/grammy_get_award_count_by_artist", "music_grammy_get_award_count_by_artist",
             "music.grammy_get_award_count_by_artist", _query()),
    Endpoint("/music/grammy_get_award_count_by_song", "music_grammy_get_award_count_by_song",
             "music.grammy_get_award_count_by_song", _query()),
    Endpoint("/music/grammy_get_best_song_by_year", "music_grammy_get_best_song_by_year",
             "music.grammy_get_best_song_by_year", _query("int")),
    Endpoint("/music/grammy_get_award_date_by_artist", "music_grammy_get_award_date_by_artist",
             "music.grammy_get_award_date_by_artist", _query()),
    Endpoint("/music/grammy_get_best_album_by_year", "music_grammy_get_best_album_by_year",
             "music.grammy_get_best_album_by_year", _query("int")),
    Endpoint("/music/grammy_get_all_awarded_artists", "music_grammy_get_all_awarded_artists",
             "music.grammy_get_all_awarded_artists", ()),
    Endpoint("/music/get_artist_birth_place", "music_get_artist_birth_place", "music.get_artist_birth_place",
             _query()),
    Endpoint("/music/get_artist_birth_date", "music_get_artist_birth_date", "music.get_artist_birth_date", _query()),
    Endpoint("/music/get_members", "music_get_members", "music.get_members", _query()),
    Endpoint("/music/get_lifespan", "music_get_lifespan", "music.get_lifespan", _query()),
    Endpoint("/music/get_song_author", "music_get_song_author", "music.get_song_author", _query()),
    Endpoint("/music/get_song_release_country", "music_get_song_release_country", "music.get_song_release_country",
             _query()),
    Endpoint("/music/get_song_release_date", "music_get_song_release_date", "music.get_song_release_date", _query()),
    Endpoint("/music/get_artist_all_works", "music_get_artist_all_works", "music.get_artist_all_works", _query()),
    Endpoint("/sports/soccer/get_games_on_date", "sports_soccer_get_games_on_date",
             "sports.soccer_get_games_on_date", _DATED),
    Endpoint("/sports/nba/get_games_on_date", "sports_nba_get_games_on_date", "sports.nba_get_games_on_date",
             _DATED),
    Endpoint("/sports/nba/get_play_by_play_data_by_game_ids", "sports_nba_get_play_by_play_data_by_game_ids",
             "sports.nba_get_play_by_play_data_by_game_ids", (Field("game_ids", "list[str]"),)),
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
        domain, method = endpoint.answer.split(".")
        return {"result": getattr(self.domain(domain), method)(*values)}
