"""Plain text from a web page's HTML (CRAG `page_result`), deterministic and whitespace-normalised.

The extractor is Resiliparse's `extract_plain_text` over the whole page (not only the "main
content"): among the candidates measured in bench/README.md ("HTML → text"), the fastest that drops script
and style and lays text out by block (one paragraph, heading or list item per line, inline
elements kept within their line).
"""

from __future__ import annotations

import html as html_entities
import re

from resiliparse.extract.html2text import extract_plain_text

_BLANK_LINES = re.compile(r"\n{3,}")
_INVISIBLE = re.compile(r"<(script|style|noscript|template)\b.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def normalize_whitespace(text: str) -> str:
    """Whitespace runs within a line become one space, lines are stripped, blank lines collapse to one."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _crude_text(html: str) -> str:
    """Last resort for input the parser refuses: tags and invisible elements removed by pattern."""
    return html_entities.unescape(_TAG.sub("\n", _INVISIBLE.sub(" ", html)))


def html_to_text(html: str) -> str:
    """The visible text of `html` without script/style, one block per line; "" for empty input."""
    if not html or html.isspace():
        return ""
    try:
        text = extract_plain_text(html, main_content=False)
    except Exception:
        # A lone surrogate (legal in JSON as "\ud800", not in UTF-8) makes Resiliparse raise TypeError.
        html = html.encode("utf-8", "replace").decode("utf-8")
        try:
            text = extract_plain_text(html, main_content=False)
        except Exception:
            text = _crude_text(html)
    return normalize_whitespace(text)
