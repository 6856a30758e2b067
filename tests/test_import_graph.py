"""The package's import graph: a stack, not a circle, and no borrowed private names.

Every module of xmask (``.py`` and the runtime imports of ``.pyx``; a ``cimport`` of a compiled
module counts too: it imports that module at run time, a ``.pxd``-only one is a build
dependency) is parsed with :mod:`ast`, imports inside functions included (a
function-level import still ties the two modules together).  The tests assert

* the modules' import graph has no cycle: in particular ``xmask.grammar.ir`` imports no front
  end (the public ``xmask.Grammar`` with ``from_ebnf``... sits on top, in
  ``xmask.grammar_api``);
* no module imports another module's underscore name (``from .x import _helper``); private
  *modules* (``from .. import _deadline``, ``from .compiler._partition import ...``) are the
  package's own business and allowed.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
from typing import Dict, Iterator, List, Optional, Set, Tuple

from xmask._graph import strongly_connected_components

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "xmask"

ALLOWED_PRIVATE_IMPORTS: Set[Tuple[str, str, str]] = set()

_PYX_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+c?import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)",
                         re.M)


def _module_files() -> Dict[str, pathlib.Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _import_nodes(path: pathlib.Path) -> Iterator[ast.stmt]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node
        return
    for m in _PYX_IMPORT.finditer(text):  # Cython: parse each import statement on its own
        stmt = m.group(0).strip()
        c = re.match(r"from[ \t]+(\S+)[ \t]+cimport\b", stmt)
        if c:
            # a cimport of a compiled module imports it at run time (its shared C globals and
            # functions); a .pxd-only one is not a module, so _imports skips it
            yield ast.ImportFrom(module=c.group(1).lstrip("."), names=[],
                                 level=len(c.group(1)) - len(c.group(1).lstrip(".")))
            continue
        if re.search(r"\bcimport\b", stmt):
            continue
        yield from ast.parse(stmt).body


def _imports(name: str, path: pathlib.Path, modules) -> Iterator[Tuple[str, Optional[str]]]:
    """(imported module, imported name or None) for each name ``name`` imports from xmask."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    for node in _import_nodes(path):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name, None
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module
        if target not in modules:
            continue
        if not node.names:  # a cimport (see _import_nodes)
            yield target, None
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            if sub in modules:
                yield sub, None
            else:
                yield target, alias.name


@functools.lru_cache(maxsize=None)
def _graph():
    modules = _module_files()
    edges: Dict[str, Set[str]] = {m: set() for m in modules}
    private: List[Tuple[str, str, str]] = []
    for name, path in modules.items():
        for target, imported in _imports(name, path, modules):
            if target != name:
                edges[name].add(target)
            if imported and imported.startswith("_") and not imported.startswith("__"):
                private.append((name, target, imported))
        private.extend(_private_attributes(name, path, modules))
    return edges, private


def _private_attributes(name: str, path: pathlib.Path, modules) -> Iterator[Tuple[str, str, str]]:
    """``module._name`` reads in a ``.py`` file, ``module`` bound by ``import ... as`` or
    ``from package import module``: a private name borrowed without a from-import."""
    if path.suffix != ".py":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    bound: Dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and node.attr.startswith("_")
                and not node.attr.startswith("__") and bound[node.value.id] != name):
            target = bound[node.value.id]
            if f"{target}.{node.attr}" not in modules:
                yield name, target, node.attr


def _cycles(edges: Dict[str, Set[str]], prefix: str = "xmask") -> List[List[str]]:
    nodes = sorted(m for m in edges if m == prefix or m.startswith(prefix + "."))
    inside = set(nodes)
    comps = strongly_connected_components(nodes, lambda m: sorted(t for t in edges[m] if t in inside))
    return [sorted(c) for c in comps if len(c) > 1]


def test_the_graph_sees_function_level_and_pyx_imports():
    edges, _ = _graph()
    # a function-level import (xmask.structural.lower imports token_lookup inside a method)
    assert "xmask.tokenizer.token_lookup" in edges["xmask.structural.lower"]
    # a runtime import of a .pyx module
    assert "xmask._deadline" in edges["xmask.compiler._nfa_build"]


def test_grammar_layer_is_a_stack():
    edges, _ = _graph()
    assert _cycles(edges, "xmask.grammar") == []


def test_ir_imports_no_front_end():
    edges, _ = _graph()
    grammar_deps = {t for t in edges["xmask.grammar.ir"] if t.startswith("xmask.grammar.")}
    # (_ir_walk: the reference check's C loop over ir_expr nodes, no front end)
    assert grammar_deps <= {"xmask.grammar.ir_expr", "xmask.grammar.printer", "xmask.grammar._ir_walk"}, grammar_deps
    assert edges["xmask.grammar._ir_walk"] == {"xmask.grammar._ir_nodes"}
    assert edges["xmask.grammar._ir_nodes"] == {"xmask.grammar.ir_expr"}
    # (_ir_build: make_seq / make_choice in C; it imports nothing of xmask)
    assert edges["xmask.grammar.ir_expr"] == {"xmask.grammar._ir_build"}
    assert edges["xmask.grammar._ir_build"] == set()


def test_whole_package_has_no_import_cycle():
    edges, _ = _graph()
    assert _cycles(edges) == []


def test_no_module_imports_another_modules_private_names():
    _, private = _graph()
    assert [p for p in private if p not in ALLOWED_PRIVATE_IMPORTS] == []
