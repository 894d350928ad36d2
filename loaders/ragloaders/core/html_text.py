"""Plain text from a web page's HTML (CRAG `page_result`), deterministic and whitespace-normalised.

The extractor is Resiliparse's `extract_plain_text` over the whole page (not only the "main
content"): among the candidates measured in bench/README.md ("HTML → text"), the fastest that drops script
and style and lays text out by block (one paragraph, heading or list item per line, inline
elements kept within their line).
"""

from __future__ import annotations

import re

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLParserException

LINE_BREAKS = "\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
"""What `str.splitlines` ends a line at (and "\r\n" as one)."""
SPACES = "\t\x1f\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
"""The rest of `str.isspace` but " "."""
_RARE_WHITESPACE = re.compile(f"[{LINE_BREAKS[1:]}{SPACES[1:]}]")
_ALLOCATION_FAILED = re.compile(r"\(Error 2\)")
"""How Resiliparse 2 words lexbor's LXB_STATUS_ERROR_MEMORY_ALLOCATION in its HTMLParserException."""


def _replace_all(text: str, old: str, new: str) -> str:
    """`text` with `old` replaced by `new` until none is left (each pass at least halves a run)."""
    while len(replaced := text.replace(old, new)) != len(text):
        text = replaced
    return text


def normalize_whitespace(text: str) -> str:
    """Whitespace runs within a line become one space, lines are stripped, blank lines collapse to one.

    Lines and whitespace are Python's (`str.splitlines`, `str.isspace`). Done with `str.replace` passes (C
    scans, no Python per line): every line break becomes "\n" and every other whitespace " ", then runs of
    spaces become one, spaces beside a line break go, and three or more line breaks become two."""
    if "\t" in text:
        text = text.replace("\t", " ")
    if _RARE_WHITESPACE.search(text):
        text = text.replace("\r\n", "\n")
        for char in LINE_BREAKS[1:]:
            text = text.replace(char, "\n")
        for char in SPACES[1:]:
            text = text.replace(char, " ")
    text = _replace_all(text, "  ", " ")
    text = text.replace(" \n", "\n").replace("\n ", "\n")
    return _replace_all(text, "\n\n\n", "\n\n").strip()


def _extract(html: str) -> str:
    try:
        return extract_plain_text(html, main_content=False)
    except HTMLParserException as e:
        if _ALLOCATION_FAILED.search(str(e)):
            raise MemoryError(f"the HTML parser ran out of memory ({e})") from None
        raise


def html_to_text(html: str) -> str:
    """The visible text of `html` without script/style, one block per line; "" for empty input. MemoryError when the
    extractor runs out of memory; its error (an HTMLParserException) for HTML it refuses, which no input is known to
    make it do (a lone surrogate, legal in JSON as "\\ud800" but not in UTF-8, is extracted as "?")."""
    if not html or html.isspace():
        return ""
    try:
        text = _extract(html)
    except TypeError:  # (what Resiliparse raises for a lone surrogate)
        text = _extract(html.encode("utf-8", "replace").decode("utf-8"))
    return normalize_whitespace(text)
