"""A count with the noun that agrees with it, for what ragloaders prints."""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """`count` and `singular` when it is 1, else `plural` (default: `singular` + "s"); `grouped`: the count with
    commas between thousands.

    Example: `counted(1, "query", "queries")` is "1 query", `counted(1200, "row", grouped=True)` "1,200 rows"."""
    noun = singular if count == 1 else (plural if plural is not None else singular + "s")
    return f"{count:,} {noun}" if grouped else f"{count} {noun}"
