"""The layers of the package, read from its import statements: imports point down only, and there is no cycle.

The layers form a DAG (README, Architecture): cli -> mock_api -> publish -> api (load, builder) -> benchmarks -> core,
cli -> lookup -> eval -> api, and cli -> eval; eval and publish do not import each other. Every import counts, also
one inside a function. No module uses another's private names, nor getattr with a name composed at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ragloaders

PACKAGE = Path(ragloaders.__file__).parent
LAYERS = ("core", "benchmarks", "api", "eval", "lookup", "publish", "mock_api", "entry")
"""Lowest first: a module may import its own layer and the layers before it."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The ragloaders modules `path` imports (absolute names)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] == "ragloaders" and t in MODULES)
    found.discard(name)
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return LAYERS.index("entry")  # ragloaders, ragloaders.cli, ragloaders.__main__


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_the_layers_exist():
    assert {"ragloaders.core.errors", "ragloaders.benchmarks.beir", "ragloaders.publish.build"} <= set(MODULES)


def test_imports_point_down_only():
    assert upward_imports(GRAPH) == []


LAYER_IMPORTS = {
    "core": set(), "benchmarks": {"core"}, "api": {"benchmarks", "core"}, "eval": {"api", "benchmarks", "core"},
    "lookup": {"eval", "api", "benchmarks", "core"},
    "publish": {"api", "benchmarks", "core"}, "mock_api": {"publish", "api", "benchmarks", "core"},
    "entry": set(LAYERS) - {"entry"},
}
"""Which layers each layer imports (the README's drawing)."""


def imports_outside_the_dag(graph: dict[str, set[str]]) -> list[str]:
    def allowed(module: str, target: str) -> bool:
        own, other = LAYERS[layer_of(module)], LAYERS[layer_of(target)]
        return other == own or other in LAYER_IMPORTS[own]

    return sorted(f"{module} imports {target}" for module, targets in graph.items() for target in targets
                  if not allowed(module, target))


def test_the_layers_import_as_the_readme_draws_them():
    assert imports_outside_the_dag(GRAPH) == []
    assert imports_outside_the_dag({"ragloaders.publish.build": {"ragloaders.eval.bm25"}}) == [
        "ragloaders.publish.build imports ragloaders.eval.bm25"]


def test_an_upward_import_is_seen():
    graph = {"ragloaders.core.bad": {"ragloaders.publish.build"}}
    assert upward_imports(graph) == ["ragloaders.core.bad imports ragloaders.publish.build"]


def test_no_import_cycle():
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in GRAPH[start]:
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    def is_package_of(a: str, b: str) -> bool:  # a package's __init__ importing its own submodules is no cycle
        return b.startswith(a + ".") or a.startswith(b + ".")

    cycles = sorted(
        f"{module} <-> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if not is_package_of(module, target) and reaches(target, module, set())
    )
    assert cycles == []


def benchmark_package(module: str) -> str | None:
    """`beir` for ragloaders.benchmarks.beir and its modules; None outside a benchmark package."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "benchmarks" else None


def cross_benchmark_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one benchmark package into another: what benchmarks share lives in core (e.g. core/formats)."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if benchmark_package(module) and benchmark_package(target) not in (None, benchmark_package(module))
    )


def test_no_benchmark_imports_another():
    assert cross_benchmark_imports(GRAPH) == []


def test_an_import_between_benchmarks_is_seen():
    graph = {"ragloaders.benchmarks.crag.builder": {"ragloaders.benchmarks.beir.catalogue", "ragloaders.core.readers",
                                                    "ragloaders.benchmarks.crag.catalogue"},
             "ragloaders.benchmarks": {"ragloaders.benchmarks.beir", "ragloaders.benchmarks.mmrag"}}
    assert cross_benchmark_imports(graph) == [
        "ragloaders.benchmarks.crag.builder imports ragloaders.benchmarks.beir.catalogue"]


# --- names that stay inside their module, dispatch you can grep -------------------------------------------------

DATASETS_INTERNALS = ("_as_dataset", "_prepare_split_single", "_output_dir", "_cache_downloaded_dir",
                      "_cache_dir_root", "_indices")
"""The datasets internals ragloaders uses: core/datasets_compat.py alone names them."""


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_used_across_modules(source: str) -> list[str]:
    """`from ragloaders-module import _name`, and `Name._attr` where Name was imported from a ragloaders module
    (relative imports are the package's own; `import x` of another package is left to the other checks)."""
    tree = ast.parse(source)
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("ragloaders")):
            for alias in node.names:
                if is_private(alias.name):
                    found.append(f"imports {alias.name}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imported \
                and is_private(node.attr):
            found.append(f"uses {node.value.id}.{node.attr}")
    return found


def composed_getattrs(source: str) -> list[int]:
    """The lines of `getattr(x, <a name built at run time>)`: an f-string, a `+` or a `%`/`.format` of text."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) > 1 and isinstance(node.args[1], (ast.JoinedStr, ast.BinOp, ast.Call)):
            lines.append(node.lineno)
    return lines


def test_no_private_name_is_imported_from_another_module():
    found = {name: used for name, path in MODULES.items()
             if (used := private_names_used_across_modules(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_a_private_import_is_seen():
    source = ("from .manifest import _entries, verify\nfrom ragloaders.core import values as v\n"
              "from .values import Converter\nimport os\nConverter._integer(1)\nos._exit\nConverter.integer(1)\n")
    assert private_names_used_across_modules(source) == ["imports _entries", "uses Converter._integer"]


def test_no_getattr_with_a_composed_name():
    found = {name: lines for name, path in MODULES.items() if (lines := composed_getattrs(path.read_text("utf-8")))}
    assert found == {}


def test_a_composed_getattr_is_seen():
    source = 'getattr(self, f"_{what}")\ngetattr(self, "_" + what)\ngetattr(self, name)\ngetattr(x, "y", None)\n'
    assert composed_getattrs(source) == [1, 2]


def test_only_the_compatibility_module_names_datasets_internals():
    found = sorted(f"{name}: {node.attr}" for name, path in MODULES.items() if name != "ragloaders.core.datasets_compat"
                   for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.Attribute) and node.attr in DATASETS_INTERNALS)
    assert found == []
