"""A dataset card's YAML front matter, read within a budget before anything builds objects from it.

YAML aliases let a few hundred bytes stand for billions of nodes ("billion laughs": each level a list of ten
aliases of the level before); `yaml.safe_load`, and `datasets` reading a repository's README.md, would build
them all and exhaust memory. So the front matter is first scanned as a stream of parser events (`yaml.parse`:
no node, no object is built), counting the nodes it would expand to, every alias counted as the whole node it
repeats. Refused, with a SourceError naming the file:
- front matter over MAX_YAML_BYTES (1 MiB; ragloaders' own cards hold a few KB, mteb's and the hub's largest a
  few hundred KB);
- more than MAX_YAML_NODES (200,000) nodes once aliases are expanded (a card lists a few thousand at most);
- collections nested more than MAX_YAML_DEPTH (100) deep (ragloaders' own cards nest 5 to 7 deep; PyYAML builds
  and datasets reads them recursively, and run out of Python's stack near a thousand).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from .card_shape import check_card_shape
from .errors import SourceError
from .preview import cut, one_line

MAX_YAML_BYTES = 1 << 20
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 100
_FRONT_MATTER = re.compile(r"^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))")
"""huggingface_hub's own (`repocard.REGEX_YAML_BLOCK`, which datasets' card reading uses; importing it costs a
quarter second): leading blank lines, CR, LF or CRLF fences, spaces or tabs after the closing one."""


def front_matter(text: str) -> str:
    """The YAML between a card's leading `---` line and the next one ("" when the card has none)."""
    match = _FRONT_MATTER.search(text)
    return match.group(2) if match else ""


def check_yaml_budget(text: str, name: str) -> None:
    """SourceError naming `name` when the YAML `text` is over MAX_YAML_BYTES, expands to more than MAX_YAML_NODES
    nodes (aliases expanded), nests deeper than MAX_YAML_DEPTH or holds an alias inside the collection it names (a
    structure that contains itself: datasets would recurse into it until Python's stack runs out); invalid YAML is a
    SourceError too. Nothing is built from the text."""
    _budgeted_events(text, name)


def _budgeted_events(text: str, name: str) -> list[yaml.Event]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise SourceError(name, f"YAML front matter of {size:,} bytes, over the {MAX_YAML_BYTES:,} bytes a card may "
                                "hold (MAX_YAML_BYTES)")
    events: list[yaml.Event] = []
    expanded: dict[str, tuple[int, int]] = {}
    """anchor -> (the nodes it stands for, the depth of its collections), aliases expanded"""
    open_collections: list[list] = []
    """[anchor, nodes before it, the deepest of its members so far] of each collection being read"""
    nodes = 0

    def member(count: int, depth: int) -> None:
        nonlocal nodes
        nodes += count
        if open_collections:
            parent = open_collections[-1]
            parent[2] = max(parent[2], depth)
        if len(open_collections) + depth > MAX_YAML_DEPTH:  # an alias nests what it names where it stands
            raise SourceError(name, f"YAML front matter nests collections more than {MAX_YAML_DEPTH} deep (aliases "
                                    "expanded); refused before building it (MAX_YAML_DEPTH)")
        if nodes > MAX_YAML_NODES:
            raise SourceError(name, f"YAML front matter expands to more than {MAX_YAML_NODES:,} nodes (aliases "
                                    "expanded: an alias bomb?); refused before building it (MAX_YAML_NODES)")

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            events.append(event)
            if isinstance(event, yaml.AliasEvent):
                if any(collection[0] == event.anchor for collection in open_collections):
                    raise SourceError(name, f"YAML front matter holds the alias {cut(event.anchor)} inside the "
                                            "collection it names (a structure that contains itself); refused")
                member(*expanded.get(event.anchor, (1, 0)))
            elif isinstance(event, yaml.ScalarEvent):
                _refuse_costly_number(event, name)
                if event.anchor is not None:
                    expanded[event.anchor] = (1, 0)
                member(1, 0)
            elif isinstance(event, yaml.CollectionStartEvent):
                member(1, 1)
                open_collections.append([event.anchor, nodes - 1, 0])
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, before, deepest = open_collections.pop()
                if open_collections:
                    open_collections[-1][2] = max(open_collections[-1][2], deepest + 1)
                if anchor is not None:
                    expanded[anchor] = (nodes - before, deepest + 1)
    except yaml.YAMLError as e:
        raise SourceError(name, f"invalid YAML front matter ({_problem(e)})") from None
    return events


LONGEST_NUMBER = 4300
"""Characters of a plain scalar that YAML reads as a number, at most (Python's own bound on decimal integers): PyYAML
builds `1:59:59:...` (base 60) with big-integer arithmetic, in time quadratic in its length."""


def _refuse_costly_number(event: yaml.ScalarEvent, name: str) -> None:
    if len(event.value) > LONGEST_NUMBER:
        tag = event.tag  # as PyYAML's composer tags it: `!!int "..."` is built as a number too
        if tag is None or tag == "!":
            tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
            raise SourceError(name, f"YAML front matter holds a number of {len(event.value):,} characters, over the "
                                    f"{LONGEST_NUMBER:,} a card may hold")


class _ComposedFromEvents(yaml.composer.Composer, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """`yaml.SafeLoader` with its reader, scanner and parser replaced by events already parsed: the budget's parse
    is the only one (the parse is most of the cost of reading YAML in Python)."""

    def __init__(self, events: list[yaml.Event]):
        self.events, self.next = events, 0
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    def check_event(self, *choices: type) -> bool:
        return self.next < len(self.events) and (not choices or isinstance(self.events[self.next], choices))

    def peek_event(self) -> yaml.Event | None:
        return self.events[self.next] if self.next < len(self.events) else None

    def get_event(self) -> yaml.Event | None:
        event = self.peek_event()
        self.next += 1
        return event


def load_yaml(text: str, name: str) -> Any:
    """What `yaml.safe_load(text)` gives, once `check_yaml_budget` has passed it (built from the events that check
    parsed); a SourceError naming `name` for YAML that parses but does not build (an undefined alias, a mapping as a
    key, a date that is not one)."""
    events = _budgeted_events(text, name)
    try:
        return _ComposedFromEvents(events).get_single_data()
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
        raise SourceError(name, f"invalid YAML front matter ({_problem(e)})") from None


def _problem(error: Exception) -> str:
    """What is wrong, and where in the front matter when PyYAML knows it, in one bounded line."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark or error.context_mark
        return cut(error.problem) + (f" at line {mark.line + 1} of the front matter" if mark else "")
    return one_line(error) or type(error).__name__


def check_card(text: str, name: str, *, standalone: tuple[str, str] | None = None) -> dict[str, Any]:
    """The fields of a card's front matter ({} for none), within `check_yaml_budget` and checked by
    `card_shape.check_card_shape`; with `standalone` (the text and name of a `.huggingface.yaml`), the card's fields
    updated with that file's, as datasets merges them, checked the same way."""
    metadata = load_yaml(front_matter(text), name)
    if standalone is None or not isinstance(metadata, (dict, type(None))):
        check_card_shape(metadata, name)  # (a front matter that is not a mapping is refused here)
    if standalone is None:
        return metadata or {}
    extra = load_yaml(*standalone)
    if extra is not None and not isinstance(extra, dict):
        raise SourceError(standalone[1], f"a {type(extra).__name__}, where datasets reads a mapping of fields")
    merged = {**(metadata or {}), **(extra or {})}
    check_card_shape(merged, f"{name} with {standalone[1]}")
    return merged
