"""The pure-Python modules setup.py compiles (``PY_MODULES``: the JSON-schema front end, Python
on every compile's critical path) are imported as extension modules, and behave as their
sources do.

A build with ``XMASK_PURE_PYTHON=1`` skips compiling them: then the first test is skipped
(outside CI).  That the compiled front end gives the same grammars as its source is checked
over MaskBench by ``bench/check_schema_ir_identity.py`` (record with ``XMASK_PURE_PYTHON=1``,
compare compiled); here one schema per construct is converted both ways in a subprocess.
"""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_packaging import COMPILED_PY, IN_CI, ROOT  # noqa: E402

MODULES = [p[: -len(".py")].replace("/", ".") for p in COMPILED_PY]


def test_the_listed_modules_are_extension_modules():
    if os.environ.get("XMASK_PURE_PYTHON") == "1" and not IN_CI:
        pytest.skip("built with XMASK_PURE_PYTHON=1")
    pure = [m for m in MODULES if importlib.import_module(m).__file__.endswith(".py")]
    assert not pure, f"imported from source, not compiled (run pip install -e . again): {pure}"


def test_every_front_end_module_is_listed():
    # a new module of the front end is compiled too (one left as Python would be slow quietly)
    here = sorted(p.relative_to(ROOT).as_posix()
                  for p in (ROOT / "xmask" / "grammar" / "json_schema").glob("*.py")
                  if p.name != "__init__.py")
    assert set(here) <= set(COMPILED_PY), sorted(set(here) - set(COMPILED_PY))
    assert all((ROOT / p).is_file() for p in COMPILED_PY)


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3},
                                      "b": {"type": "integer", "minimum": -2, "maximum": 40}},
     "required": ["a"]},
    {"type": "array", "items": {"enum": ["x", 1, None, {"k": [True]}]}, "minItems": 1,
     "maxItems": 3},
    {"anyOf": [{"type": "number", "multipleOf": 0.5}, {"type": "string", "pattern": "^a+b$"}]},
    {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
     "$ref": "#/$defs/n"},
    {"type": "object", "patternProperties": {"^x-": {"type": "boolean"}},
     "additionalProperties": False, "allOf": [{"required": ["x-a"]}]},
    {"type": "string", "format": "date-time"},
    {"oneOf": [{"const": 1}, {"type": "integer", "exclusiveMinimum": 3}], "not": {"const": 7}},
]

_CONVERT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import xmask
out = []
for s in json.loads(sys.argv[1]):
    for opts in ({}, {"strict_mode": False, "any_whitespace": True}):
        try:
            out.append(str(xmask.Grammar.from_json_schema(s, **opts)))
        except xmask.XmaskError as e:
            out.append(type(e).__name__ + ": " + str(e))
src = xmask.grammar.json_schema.converter.__file__
print(json.dumps([src.endswith(".py"), out]))
"""


def _convert(pure: bool):
    code = _CONVERT
    if pure:
        # the listed modules imported from their .py files (a finder ahead of the others)
        code = (
            "import importlib.machinery as m, importlib.util as u, os, sys\n"
            f"names = set({MODULES!r})\n"
            "class Src(m.PathFinder):\n"
            "    @classmethod\n"
            "    def find_spec(cls, name, path=None, target=None):\n"
            "        if name not in names:\n"
            "            return None\n"
            "        spec = m.PathFinder.find_spec(name, path, target)\n"
            "        if spec is None or spec.origin.endswith('.py'):\n"
            "            return spec\n"
            "        src = os.path.join(os.path.dirname(spec.origin), name.rsplit('.', 1)[1] + '.py')\n"
            "        return u.spec_from_file_location(name, src)\n"
            "sys.meta_path.insert(0, Src)\n"
        ) + code
    got = subprocess.run([sys.executable, "-c", code, json.dumps(SCHEMAS)], capture_output=True,
                         text=True, timeout=300, cwd=str(ROOT))
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def test_compiled_front_end_gives_the_grammars_of_its_source():
    from_source, a = _convert(pure=True)
    assert from_source
    _, b = _convert(pure=False)
    assert len(a) == 2 * len(SCHEMAS)
    assert a == b
