"""A dataset card's YAML front matter, read within a budget before anything builds objects from it.

YAML aliases let a few hundred bytes stand for billions of nodes ("billion laughs": each level a list of ten
aliases of the level before); `yaml.safe_load`, and `datasets` reading a repository's README.md, would build
them all and exhaust memory. So the front matter is first scanned as a stream of parser events (`yaml.parse`:
no node, no object is built), counting the nodes it would expand to, every alias counted as the whole node it
repeats. Refused, with a SourceError naming the file:
- front matter over MAX_YAML_BYTES (1 MiB; ragloaders' own cards hold a few KB, mteb's and the hub's largest a
  few hundred KB);
- more than MAX_YAML_NODES (200,000) nodes once aliases are expanded (a card lists a few thousand at most).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from .errors import SourceError

MAX_YAML_BYTES = 1 << 20
MAX_YAML_NODES = 200_000
_FRONT_MATTER = re.compile(r"\A\s*---[\r\n]+(.*?)[\r\n]+---(?:\r?\n|\Z)", re.DOTALL)
"""As lenient as the hub's readers: leading blank lines, CRLF or LF fences."""


def front_matter(text: str) -> str:
    """The YAML between a card's leading `---` line and the next one ("" when the card has none)."""
    match = _FRONT_MATTER.match(text)
    return match.group(1) if match else ""


def check_yaml_budget(text: str, name: str) -> None:
    """SourceError naming `name` when the YAML `text` is over MAX_YAML_BYTES or expands to more than MAX_YAML_NODES
    nodes (aliases expanded); invalid YAML is a SourceError too. Nothing is built from the text."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise SourceError(name, f"YAML front matter of {size:,} bytes, over the {MAX_YAML_BYTES:,} bytes a card may "
                                "hold (MAX_YAML_BYTES)")
    expanded: dict[str, int] = {}
    open_anchors: list[tuple[str | None, int]] = []
    nodes = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                nodes += expanded.get(event.anchor, 1)
            elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if isinstance(event, yaml.CollectionStartEvent):
                    open_anchors.append((event.anchor, nodes - 1))
                elif event.anchor is not None:
                    expanded[event.anchor] = 1
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, before = open_anchors.pop()
                if anchor is not None:
                    expanded[anchor] = nodes - before
            if nodes > MAX_YAML_NODES:
                raise SourceError(name, f"YAML front matter expands to more than {MAX_YAML_NODES:,} nodes (aliases "
                                        "expanded: an alias bomb?); refused before building it (MAX_YAML_NODES)")
    except yaml.YAMLError as e:
        raise SourceError(name, f"invalid YAML front matter ({str(e).splitlines()[0]})") from None


def load_yaml(text: str, name: str) -> Any:
    """`yaml.safe_load(text)` once `check_yaml_budget` has passed it."""
    check_yaml_budget(text, name)
    return yaml.safe_load(text)


def check_card(text: str, name: str) -> None:
    """`check_yaml_budget` on a card's front matter."""
    check_yaml_budget(front_matter(text), name)
