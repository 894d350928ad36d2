"""HTML shaped to be slow for the text extractor (not a test): Resiliparse's time on pages of growing size whose
bytes go to distinct attribute names of one element, distinct attribute names across elements, or distinct tag
names, beside a real page's pace; then how long `texts_in_order` takes to stop such a page (its time bound,
core/html_text_workers.page_seconds).

    PYTHONPATH=loaders python bench/bench_slow_html.py [--sizes 64,128,256] [--stop-kb 2300]
"""

from __future__ import annotations

import argparse
import bz2
import itertools
import json
import os
import string
import time

from ragloaders.core.html_text import html_to_text
from ragloaders.core.html_text_workers import TooSlowPage, page_seconds, texts_in_order

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, os.pardir, "tests", "data", "crag", "dev_data.jsonl.bz2")
ALPHABET = string.ascii_lowercase + string.digits + "-_.:"


def distinct_names(size: int) -> list[str]:
    """The shortest distinct attribute names (1-4 characters) whose space-separated list fills `size` bytes."""
    names, used = [], 0
    for length in range(1, 5):
        for letters in itertools.product(ALPHABET, repeat=length):
            if letters[0] not in string.ascii_lowercase:
                continue
            if used + length + 1 > size:
                return names
            names.append("".join(letters))
            used += length + 1
    return names


SHAPES = {
    "distinct names on one element": lambda size: "<div " + " ".join(distinct_names(size)) + ">x</div>",
    "distinct names, one per element": lambda size: "".join(f"<p {name}>x</p>" for name in distinct_names(size // 4)),
    "distinct tag names": lambda size: "".join(f"<{name}>x</{name}>" for name in distinct_names(size // 4)),
}


def timed(html: str) -> float:
    start = time.perf_counter()
    html_to_text(html)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="64,128,256", help="KB of each shaped page")
    parser.add_argument("--stop-kb", type=int, default=2300, help="KB of the page texts_in_order must stop")
    args = parser.parse_args()
    with bz2.open(SAMPLE) as f:
        real = [page["page_result"] for line in f for page in json.loads(line)["search_results"] if page["page_result"]]
    real_mb = sum(len(html.encode()) for html in real) / 1e6
    real_seconds = sum(timed(html) for html in real)
    print(f"load average {os.getloadavg()[0]:.1f}; the example's {len(real)} real pages: {real_mb:.1f} MB in "
          f"{real_seconds:.2f} s ({1000 * real_seconds / real_mb:.0f} ms per MB)\n")
    print("| shape | KB | s | ms per MB | bound s (page_seconds) |\n|---|---|---|---|---|")
    for shape, make in SHAPES.items():
        for kb in (int(size) for size in args.sizes.split(",")):
            html = make(kb << 10)
            seconds = timed(html)
            size = len(html.encode())
            print(f"| {shape} | {size >> 10} | {seconds:.2f} | {1000 * seconds / (size / 1e6):,.0f} | "
                  f"{page_seconds(size):.1f} |")
    html = SHAPES["distinct names on one element"](args.stop_kb << 10).encode()
    start = time.perf_counter()
    try:
        list(texts_in_order([(0, [html])], processes=1))
        outcome = "extracted"
    except TooSlowPage:
        outcome = "stopped (TooSlowPage)"
    print(f"\n`texts_in_order` of one {len(html) >> 10} KB page of distinct names on one element: {outcome} after "
          f"{time.perf_counter() - start:.1f} s (its bound {page_seconds(len(html)):.1f} s)")


if __name__ == "__main__":
    main()
