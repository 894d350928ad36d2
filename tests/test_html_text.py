"""html_to_text on the real CRAG pages and on malformed input."""

from __future__ import annotations

import bz2
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragloaders.core import html_text
from ragloaders.core.html_text import html_to_text, normalize_whitespace
from resiliparse.extract.html2text import extract_plain_text

SAMPLE = Path(__file__).parent / "data" / "crag" / "dev_data.jsonl.bz2"


@pytest.fixture(scope="module")
def pages() -> list[str]:
    with bz2.open(SAMPLE) as lines:
        return [page["page_result"] for line in lines for page in json.loads(line)["search_results"]]


@pytest.fixture(scope="module")
def texts(pages) -> list[str]:
    return [html_to_text(page) for page in pages]


def test_every_non_empty_page_gives_text(pages, texts):
    assert len(pages) == 50
    assert sum(1 for page in pages if not page) == 3
    for page, text in zip(pages, texts):
        if page.strip():
            assert len(text) > 100
        else:
            assert text == ""


def test_output_is_much_smaller_than_the_html_and_keeps_line_breaks(pages, texts):
    assert sum(map(len, texts)) < sum(map(len, pages)) / 5
    assert all(text.count("\n") > 10 for page, text in zip(pages, texts) if len(page) > 10_000)


def test_real_pages_lose_their_scripts(pages, texts):
    assert "document.domain = document.domain;" in pages[1]
    assert "document.domain" not in texts[1]
    assert "Office 2019 vs. Office 2016" in texts[1]
    for text in texts:
        assert "<script" not in text and "function(" not in text.replace(" ", "")


def test_output_is_normalised_and_deterministic(pages, texts):
    for text in texts:
        assert "\n\n\n" not in text and "  " not in text and "\t" not in text
        assert text == text.strip()
        assert all(line == line.strip() for line in text.split("\n"))
    assert [html_to_text(page) for page in pages[:5]] == texts[:5]


def test_blocks_are_lines_inline_elements_are_not():
    html = "<html><head><style>p {color: red}</style><script>var secret = 1;</script></head><body>" \
           "<h1>Title</h1><p>Hello <b>bold</b>   world</p><p>Second</p><noscript>enable js</noscript></body></html>"
    text = html_to_text(html)
    assert text.splitlines()[0] == "Title"
    assert "Hello bold world" in text.splitlines()
    assert "Second" in text
    assert "secret" not in text and "color" not in text and "enable js" not in text


@pytest.mark.parametrize(
    "html",
    ["", " \n\t", "<", "<<<>>>", "<p>unclosed <b>bold", "<script>var x = 1;", "\x00\x01", "&#xffffffff;",
     "<!-- never closed", "<table><tr><td>a<td>b</table></p></div>", "<p>lone \ud800 surrogate</p>",
     "<div>" * 5000 + "deep" + "</div>" * 5000],
)
def test_malformed_html_never_raises(html):
    text = html_to_text(html)
    assert isinstance(text, str)
    assert text == normalize_whitespace(text)
    assert "var x" not in text and "<b>" not in text and "<td>" not in text


def test_empty_and_surrogate_cases():
    assert html_to_text("") == ""
    assert html_to_text("   ") == ""
    assert "surrogate" in html_to_text("<p>lone \ud800 surrogate</p>")
    assert html_to_text("<div>" * 5000 + "deep" + "</div>" * 5000) == "deep"


def test_normalize_whitespace():
    assert normalize_whitespace("  a \t b \r\n\r\n\r\n\n c\u00a0 d  \n") == "a b\n\nc d"


def line_by_line_normalisation(text: str) -> str:
    """The reference: each line's whitespace runs as one space (Python's `splitlines` and `split`), then blank lines
    collapsed to one (the list comprehension normalize_whitespace was before its regex passes)."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def test_the_whitespace_classes_are_pythons():
    """Every code point `str.isspace` holds is in LINE_BREAKS or SPACES, and the line breaks are splitlines'."""
    spaces = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    breaks = {c for c in spaces if len(f"a{c}b".splitlines()) == 2}
    assert breaks == set(html_text.LINE_BREAKS)
    for char in spaces:
        if char not in breaks:
            assert normalize_whitespace(f"a{char}{char}b") == "a b", hex(ord(char))


WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()] + ["\r\n", "\u200b", "\ufeff", "-", "a", "é"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WHITESPACE), st.characters()), max_size=40).map("".join))
def test_normalize_whitespace_equals_the_line_by_line_normalisation(text):
    assert normalize_whitespace(text) == line_by_line_normalisation(text)


def test_normalize_whitespace_equals_the_line_by_line_normalisation_on_the_real_pages(pages):
    """On Resiliparse's own output for the 50 real pages (before normalisation), and on the raw HTML of a few."""
    for page in pages:
        raw = extract_plain_text(page, main_content=False) if page else ""
        assert normalize_whitespace(raw) == line_by_line_normalisation(raw)
    for page in pages[:8]:
        assert normalize_whitespace(page) == line_by_line_normalisation(page)


@pytest.mark.parametrize("failing_call", [1, 2])
def test_running_out_of_memory_is_an_error_not_some_other_text(monkeypatch, failing_call):
    # Resiliparse words a failed allocation as an HTMLParserException "(Error 2)": a MemoryError, which the workers
    # report as a page past its memory bound, never a text made some other way.
    from ragloaders.core import html_text
    from resiliparse.parse.html import HTMLParserException

    calls = []
    real = html_text.extract_plain_text

    def extract(html, **options):
        calls.append(html)
        if len(calls) == failing_call:
            raise HTMLParserException("HTML parser error: Failed to parse document (Error 2)..")
        if len(calls) == 1:
            raise TypeError("a lone surrogate")  # (the first call fails as for a surrogate: the retry is reached)
        return real(html, **options)

    monkeypatch.setattr(html_text, "extract_plain_text", extract)
    with pytest.raises(MemoryError, match="ran out of memory"):
        html_to_text("<p>a page</p>")
    assert len(calls) == failing_call


def test_any_other_refusal_of_the_parser_is_raised(monkeypatch):
    from ragloaders.core import html_text
    from resiliparse.parse.html import HTMLParserException

    def extract(html, **options):
        raise HTMLParserException("HTML parser error: Failed to parse document (Error 7)..")

    monkeypatch.setattr(html_text, "extract_plain_text", extract)
    with pytest.raises(HTMLParserException, match="Error 7"):
        html_to_text("<p>a page</p>")
