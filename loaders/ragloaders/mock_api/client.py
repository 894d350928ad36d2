"""`CragMockAPI`: the official CRAG client's methods (`mock_api/apiwrapper/pycragapi.py`, class `CRAG`) answered
in process from a `crag/mock_kg` build, with no server.

Each method has the official one's name, parameters and defaults and returns what it returns: the server's JSON
body as Python objects, `{"result": ...}` (or FastAPI's 422 body `{"detail": [...]}` for a value of the wrong type).
Where the official server fails (HTTP 500) ours answers; the package docstring lists those cases.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from ..core.errors import SourceError, UsageError
from ..core.hub_repository import check_revision, hub_offline, open_repository, refuse_revision
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
            check_revision(source, revision)
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


def _posts(body_of: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The official client's method of `body_of`'s name (its parameters, defaults and docs): posts the request body
    `body_of` returns, as the official method does, and returns the answer (`CragMockAPI.call`)."""

    @functools.wraps(body_of)
    def post(self: CragMockAPI, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.call(body_of.__name__, body_of(self, *args, **kwargs))

    return post


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
        from .validation import check

        endpoint = BY_CLIENT_METHOD[client_method]
        values, errors = check(endpoint, body)
        if errors:
            return {"detail": errors}
        return self.kg.answer(endpoint, values)

    @_posts
    def open_search_entity_by_name(self, query: str):
        return {"query": query}

    @_posts
    def open_get_entity(self, entity: str):
        return {"query": entity}

    @_posts
    def movie_get_person_info(self, person_name: str):
        return {"query": person_name}

    @_posts
    def movie_get_movie_info(self, movie_name: str):
        return {"query": movie_name}

    @_posts
    def movie_get_year_info(self, year: str):
        return {"query": year}

    @_posts
    def movie_get_movie_info_by_id(self, movid_id: int):  # (sic: the official parameter name)
        return {"query": movid_id}

    @_posts
    def movie_get_person_info_by_id(self, person_id: int):
        return {"query": person_id}

    @_posts
    def finance_get_company_name(self, query: str):
        return {"query": query}

    @_posts
    def finance_get_ticker_by_name(self, query: str):
        return {"query": query}

    @_posts
    def finance_get_price_history(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_detailed_price_history(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_dividends_history(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_market_capitalization(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_eps(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_pe_ratio(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def finance_get_info(self, ticker_name: str):
        return {"query": ticker_name}

    @_posts
    def music_search_artist_entity_by_name(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_search_song_entity_by_name(self, song_name: str):
        return {"query": song_name}

    @_posts
    def music_get_billboard_rank_date(self, rank: int, date: str = None):  # type: ignore[assignment]
        return {"rank": rank, "date": date}

    @_posts
    def music_get_billboard_attributes(self, date: str, attribute: str, song_name: str):
        return {"date": date, "attribute": attribute,
                                                             "song_name": song_name}

    @_posts
    def music_grammy_get_best_artist_by_year(self, year: int):
        return {"query": year}

    @_posts
    def music_grammy_get_award_count_by_artist(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_grammy_get_award_count_by_song(self, song_name: str):
        return {"query": song_name}

    @_posts
    def music_grammy_get_best_song_by_year(self, year: int):
        return {"query": year}

    @_posts
    def music_grammy_get_award_date_by_artist(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_grammy_get_best_album_by_year(self, year: int):
        return {"query": year}

    @_posts
    def music_grammy_get_all_awarded_artists(self):
        return {}

    @_posts
    def music_get_artist_birth_place(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_get_artist_birth_date(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_get_members(self, band_name: str):
        return {"query": band_name}

    @_posts
    def music_get_lifespan(self, artist_name: str):
        return {"query": artist_name}

    @_posts
    def music_get_song_author(self, song_name: str):
        return {"query": song_name}

    @_posts
    def music_get_song_release_country(self, song_name: str):
        return {"query": song_name}

    @_posts
    def music_get_song_release_date(self, song_name: str):
        return {"query": song_name}

    @_posts
    def music_get_artist_all_works(self, song_name: str):  # (sic: the official parameter name)
        return {"query": song_name}

    @_posts
    def sports_soccer_get_games_on_date(self, date: str, team_name: str = None):  # type: ignore[assignment]
        return {"team_name": team_name, "date": date}

    @_posts
    def sports_nba_get_games_on_date(self, date: str, team_name: str = None):  # type: ignore[assignment]
        return {"team_name": team_name, "date": date}

    @_posts
    def sports_nba_get_play_by_play_data_by_game_ids(self, game_ids: list[str]):
        return {"game_ids": game_ids}
