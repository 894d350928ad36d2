"""`CragMockAPI`: the official CRAG client's methods (`mock_api/apiwrapper/pycragapi.py`, class `CRAG`) answered
in process from a `crag/mock_kg` build, with no server.

Each method has the official one's name, parameters and defaults and returns what it returns: the server's JSON
body as Python objects, `{"result": ...}` (or FastAPI's 422 body `{"detail": [...]}` for a value of the wrong type).
Where the official server fails (HTTP 500) ours answers; the package docstring lists those cases.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.errors import SourceError, UsageError
from ..core.repository import hub_offline, open_repository, refuse_revision
from .tables import default_cache_dir, download_repository, is_repo_id, open_tables, snapshot_commit


def resolve_source(source: str | None, data_dir: str | None, cache_dir: str | None,
                   revision: str | None = None) -> str:
    """The local folder of a build: `source` itself, the snapshot of hub repository `source` at `revision` (a
    commit, branch or tag; default the main branch; the folder is named by the commit read), or a build of the
    `cragkg` folder `data_dir` made in the cache (once per version of its files)."""
    if (source is None) == (data_dir is None):
        raise UsageError("give either a crag/mock_kg build (a folder or hub repository id) or data_dir (a cragkg "
                         "folder), not both and not neither")
    if source is not None:
        if os.path.isdir(source):
            refuse_revision(source, revision, "a local folder")
            return source
        if is_repo_id(source):
            if not hub_offline():
                open_repository(source, revision)  # the one probe every command makes: HubError in one line
            return download_repository(source, cache_dir, revision)
        raise SourceError(source, "no such folder, and not a hub repository id (org/name)")
    refuse_revision(data_dir or "", revision, "a cragkg folder")
    return build_into_cache(data_dir or "", cache_dir)


def build_into_cache(data_dir: str, cache_dir: str | None) -> str:
    """`ragloaders build crag/mock_kg --data-dir DATA_DIR` into `<cache>/mock_api/builds/<identity>` (the datasets
    cache beside it, in `<cache>/datasets`), unless already built there from the same files and code."""
    import hashlib
    import json

    from ..publish.build import build_folder, build_identity

    if not os.path.isdir(data_dir):
        raise SourceError(data_dir, "no such folder (expected CRAG's `cragkg` folder of mock KG files)")
    base = cache_dir or default_cache_dir()
    datasets_cache = os.path.join(base, "datasets")
    data_dir = os.path.abspath(data_dir)
    identity = build_identity("crag/mock_kg", data_dir, datasets_cache, None)
    name = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    out = os.path.join(base, "mock_api", "builds", name)
    if not os.path.isfile(os.path.join(out, "README.md")):
        build_folder("crag/mock_kg", out, data_dir=data_dir, cache_dir=datasets_cache)
    return out


class CragMockAPI:
    """CRAG's mock API in process. `source`: a folder built from `crag/mock_kg`, or a hub repository id holding
    one (`revision`: its commit, branch or tag, default the main branch; `commit` says which commit was read); or
    `data_dir`: a `cragkg` folder, built first into the cache. `cache_dir`: where builds, downloads and the
    memory-mapped tables go (default `~/.cache/ragloaders`)."""

    def __init__(self, source: str | None = None, *, data_dir: str | None = None, cache_dir: str | None = None,
                 revision: str | None = None):
        from .endpoints import MockKg  # (pandas and the domains load here, not on `import ragloaders`)

        folder = resolve_source(source, data_dir, cache_dir, revision)
        self.commit: str | None = snapshot_commit(folder) if source is not None and not os.path.isdir(source) else None
        """The commit id of the hub repository read; None for a folder."""
        self.kg = MockKg(open_tables(folder, cache_dir))

    def call(self, client_method: str, body: dict[str, Any]) -> dict[str, Any]:
        """What the official client's `client_method` returns for the request body `body`."""
        from .endpoints import BY_CLIENT_METHOD
        from .validation import validate

        endpoint = BY_CLIENT_METHOD[client_method]
        values, errors = validate(endpoint, body)
        if errors:
            return {"detail": errors}
        return self.kg.answer(endpoint, values)

    def open_search_entity_by_name(self, query: str):
        return self.call("open_search_entity_by_name", {"query": query})

    def open_get_entity(self, entity: str):
        return self.call("open_get_entity", {"query": entity})

    def movie_get_person_info(self, person_name: str):
        return self.call("movie_get_person_info", {"query": person_name})

    def movie_get_movie_info(self, movie_name: str):
        return self.call("movie_get_movie_info", {"query": movie_name})

    def movie_get_year_info(self, year: str):
        return self.call("movie_get_year_info", {"query": year})

    def movie_get_movie_info_by_id(self, movid_id: int):  # (sic: the official parameter name)
        return self.call("movie_get_movie_info_by_id", {"query": movid_id})

    def movie_get_person_info_by_id(self, person_id: int):
        return self.call("movie_get_person_info_by_id", {"query": person_id})

    def finance_get_company_name(self, query: str):
        return self.call("finance_get_company_name", {"query": query})

    def finance_get_ticker_by_name(self, query: str):
        return self.call("finance_get_ticker_by_name", {"query": query})

    def finance_get_price_history(self, ticker_name: str):
        return self.call("finance_get_price_history", {"query": ticker_name})

    def finance_get_detailed_price_history(self, ticker_name: str):
        return self.call("finance_get_detailed_price_history", {"query": ticker_name})

    def finance_get_dividends_history(self, ticker_name: str):
        return self.call("finance_get_dividends_history", {"query": ticker_name})

    def finance_get_market_capitalization(self, ticker_name: str):
        return self.call("finance_get_market_capitalization", {"query": ticker_name})

    def finance_get_eps(self, ticker_name: str):
        return self.call("finance_get_eps", {"query": ticker_name})

    def finance_get_pe_ratio(self, ticker_name: str):
        return self.call("finance_get_pe_ratio", {"query": ticker_name})

    def finance_get_info(self, ticker_name: str):
        return self.call("finance_get_info", {"query": ticker_name})

    def music_search_artist_entity_by_name(self, artist_name: str):
        return self.call("music_search_artist_entity_by_name", {"query": artist_name})

    def music_search_song_entity_by_name(self, song_name: str):
        return self.call("music_search_song_entity_by_name", {"query": song_name})

    def music_get_billboard_rank_date(self, rank: int, date: str = None):  # type: ignore[assignment]
        return self.call("music_get_billboard_rank_date", {"rank": rank, "date": date})

    def music_get_billboard_attributes(self, date: str, attribute: str, song_name: str):
        return self.call("music_get_billboard_attributes", {"date": date, "attribute": attribute,
                                                             "song_name": song_name})

    def music_grammy_get_best_artist_by_year(self, year: int):
        return self.call("music_grammy_get_best_artist_by_year", {"query": year})

    def music_grammy_get_award_count_by_artist(self, artist_name: str):
        return self.call("music_grammy_get_award_count_by_artist", {"query": artist_name})

    def music_grammy_get_award_count_by_song(self, song_name: str):
        return self.call("music_grammy_get_award_count_by_song", {"query": song_name})

    def music_grammy_get_best_song_by_year(self, year: int):
        return self.call("music_grammy_get_best_song_by_year", {"query": year})

    def music_grammy_get_award_date_by_artist(self, artist_name: str):
        return self.call("music_grammy_get_award_date_by_artist", {"query": artist_name})

    def music_grammy_get_best_album_by_year(self, year: int):
        return self.call("music_grammy_get_best_album_by_year", {"query": year})

    def music_grammy_get_all_awarded_artists(self):
        return self.call("music_grammy_get_all_awarded_artists", {})

    def music_get_artist_birth_place(self, artist_name: str):
        return self.call("music_get_artist_birth_place", {"query": artist_name})

    def music_get_artist_birth_date(self, artist_name: str):
        return self.call("music_get_artist_birth_date", {"query": artist_name})

    def music_get_members(self, band_name: str):
        return self.call("music_get_members", {"query": band_name})

    def music_get_lifespan(self, artist_name: str):
        return self.call("music_get_lifespan", {"query": artist_name})

    def music_get_song_author(self, song_name: str):
        return self.call("music_get_song_author", {"query": song_name})

    def music_get_song_release_country(self, song_name: str):
        return self.call("music_get_song_release_country", {"query": song_name})

    def music_get_song_release_date(self, song_name: str):
        return self.call("music_get_song_release_date", {"query": song_name})

    def music_get_artist_all_works(self, song_name: str):  # (sic: the official parameter name)
        return self.call("music_get_artist_all_works", {"query": song_name})

    def sports_soccer_get_games_on_date(self, date: str, team_name: str = None):  # type: ignore[assignment]
        return self.call("sports_soccer_get_games_on_date", {"team_name": team_name, "date": date})

    def sports_nba_get_games_on_date(self, date: str, team_name: str = None):  # type: ignore[assignment]
        return self.call("sports_nba_get_games_on_date", {"team_name": team_name, "date": date})

    def sports_nba_get_play_by_play_data_by_game_ids(self, game_ids: list[str]):
        return self.call("sports_nba_get_play_by_play_data_by_game_ids", {"game_ids": game_ids})
