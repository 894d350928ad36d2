"""Speed and output quality of HTML-to-text extractors on the real CRAG pages.

Reads every `search_results[*].page_result` of the CRAG example file (50 pages, up to 1.5 MB) and
runs each installed extractor over all of them, best of `--repeat` passes. Prints a Markdown table
(pages/s, MB/s of HTML in, characters out, pages where script/style text leaked into the output,
median lines per page) and one excerpt per extractor.

    PYTHONPATH=loaders python bench/bench_html_extractors.py [--sample PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import statistics
import time
from collections.abc import Callable

DEFAULT_SAMPLE = "tests/data/crag/dev_data.jsonl.bz2"
MALFORMED = ["", " ", "<", "<<<>>>", "<html><body><p>unclosed <b>bold", "<script>var x = 1;", "\x00\x01",
             "&#xffffffff;", "<p>lone \ud800 surrogate</p>", "<!-- never closed", "<table><tr><td>a<td>b</table></div>"]


def load_pages(sample: str) -> list[str]:
    with bz2.open(sample) as lines:
        return [page["page_result"] for line in lines for page in json.loads(line)["search_results"]]


def extractors() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {}
    from selectolax.lexbor import LexborHTMLParser

    def lexbor_body(html: str) -> str:
        body = LexborHTMLParser(html).body
        return body.text(separator="\n") if body is not None else ""

    def lexbor_stripped(html: str) -> str:
        tree = LexborHTMLParser(html)
        tree.strip_tags(["script", "style", "noscript", "template", "iframe"], recursive=True)
        return tree.body.text(separator="\n", strip=True, skip_empty=True) if tree.body is not None else ""

    found["selectolax lexbor body.text"] = lexbor_body
    found["selectolax lexbor, script/style stripped"] = lexbor_stripped
    try:
        from selectolax.parser import HTMLParser

        found["selectolax modest"] = lambda html: HTMLParser(html).body.text(separator="\n")
    except ImportError:
        pass  # selectolax 1.0 removed the modest backend
    from resiliparse.extract.html2text import extract_plain_text

    found["resiliparse extract_plain_text"] = lambda html: extract_plain_text(html, main_content=False)
    found["resiliparse main_content=True"] = lambda html: extract_plain_text(html, main_content=True)
    import inscriptis

    found["inscriptis get_text"] = inscriptis.get_text
    import html_text

    found["html-text extract_text"] = html_text.extract_text
    import trafilatura

    found["trafilatura extract"] = lambda html: trafilatura.extract(html) or ""
    try:
        from bs4 import BeautifulSoup

        found["bs4 get_text"] = lambda html: BeautifulSoup(html, "lxml").get_text("\n")
    except ImportError:
        pass
    from ragloaders.core.html_text import html_to_text

    found["ragloaders html_to_text"] = html_to_text
    return found


def script_probes(html: str) -> list[str]:
    """Code from script/style elements (JSON-LD excluded: it repeats the visible text) that must not be output."""
    from selectolax.lexbor import LexborHTMLParser

    probes = []
    for node in LexborHTMLParser(html).css("script, style"):
        if "json" in (node.attributes.get("type") or ""):
            continue
        text = " ".join(node.text(deep=True).split())
        middle = max(text.find(";", len(text) // 2), text.find("{", len(text) // 2))
        if len(text) >= 40 and middle >= 15:
            probes.append(text[middle - 15 : middle + 15])
    return probes


INLINE_DEMO = "<div><h2>Title</h2><p>Hello <b>bold</b> world,<br>next line.</p><ul><li>one</li><li>two</li></ul></div>"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default=DEFAULT_SAMPLE)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pages = load_pages(args.sample)
    megabytes = sum(len(page.encode("utf-8", "surrogatepass")) for page in pages) / 1e6
    probes = [script_probes(page) for page in pages]
    print(f"{len(pages)} pages, {megabytes:.1f} MB of HTML, {sum(1 for p in pages if not p)} empty, "
          f"{sum(1 for p in probes if p)} with script/style text; load average {os.getloadavg()[0]:.1f}\n")
    print("| extractor | pages/s | MB/s | chars out | empty out (of non-empty in) | script/style leaked (pages) "
          "| median lines/page | malformed inputs crashing |")
    print("|---|---|---|---|---|---|---|---|")
    excerpts = {}
    for name, extract in extractors().items():
        repeat = 1 if "trafilatura" in name else args.repeat
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            outputs = [extract(page) for page in pages]
            best = min(best, time.perf_counter() - start)
        empty = sum(1 for page, out in zip(pages, outputs) if page and not out.strip())
        flat = [" ".join(out.split()) for out in outputs]
        leaked = sum(1 for page_probes, out in zip(probes, flat) if any(probe in out for probe in page_probes))
        lines = statistics.median(sum(1 for line in out.splitlines() if line.strip()) for out in outputs)
        crashes = 0
        for html in MALFORMED:
            try:
                extract(html)
            except Exception:
                crashes += 1
        print(f"| {name} | {len(pages) / best:.1f} | {megabytes / best:.1f} | {sum(map(len, outputs)):,} | {empty} "
              f"| {leaked} | {lines:.0f} | {crashes} |")
        excerpts[name] = " / ".join(line.strip() for line in outputs[1].splitlines() if line.strip())[:300]
    print("\nLayout of a small block/inline demo (newlines shown as ' / '):\n")
    for name, extract in extractors().items():
        print(f"- {name}: `{' / '.join(extract(INLINE_DEMO).splitlines())}`")
    print("\nExcerpts (page 2, non-empty lines joined with ' / '):\n")
    for name, excerpt in excerpts.items():
        print(f"- {name}: `{excerpt}`")


if __name__ == "__main__":
    main()
