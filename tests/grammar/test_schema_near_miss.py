"""Unknown keywords that look like misspelt ones warn with their JSON pointer; the schema is
still converted as the spec says (the unknown keyword ignored)."""

import subprocess
import sys
import warnings

import pytest

import xmask
from xmask.grammar.recognizer import Recognizer
from xmask import SchemaKeywordWarning


def _near_misses(schema):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grammar = xmask.Grammar.from_json_schema(schema)
    return grammar, [w for w in caught if issubclass(w.category, SchemaKeywordWarning)]


@pytest.mark.parametrize("key, meant, pointer", [
    ("propertes", "properties", "#/propertes"),
    ("requird", "required", "#/requird"),
    ("maxLenght", "maxLength", "#/properties/name/maxLenght"),
    ("Minimum", "minimum", "#/properties/name/Minimum"),
    ("ref", "$ref", "#/properties/name/ref"),
    ("additonalProperties", "additionalProperties", "#/additonalProperties"),
])
def test_near_miss_warns_with_pointer_and_the_keyword_meant(key, meant, pointer):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    (schema if pointer.count("/") == 1 else schema["properties"]["name"])[key] = 1
    _, caught = _near_misses(schema)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert repr(key) in message and pointer in message and repr(meant) in message
    assert caught[0].filename == __file__  # points at the caller's line, not inside xmask


def test_the_misspelt_keyword_is_ignored_as_the_spec_says():
    grammar, caught = _near_misses({"type": "string", "maxLenght": 2})
    assert len(caught) == 1
    assert Recognizer(grammar).accepts(b'"longer than two"')


@pytest.mark.parametrize("key", ["description", "descripton", "title", "_format", "x-maxLength",
                                 "@type", "note", "readonly", "emum", "customField"])
def test_annotations_extensions_and_unrelated_names_do_not_warn(key):
    _, caught = _near_misses({"type": "object", key: "x"})
    assert caught == []


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_warnings_from_a_command_line_script_are_shown_not_raised(how):
    # the loader of a ``python -c`` or stdin script cannot give its source: the warning must
    # still be filed and printed (it once raised ImportError from warnings.warn_explicit)
    code = ("import xmask\n"
            "xmask.Grammar.from_json_schema({'type': 'object', 'propertes': {}})\n"
            "print('converted')\n")
    argv = [sys.executable, "-c", code] if how == "-c" else [sys.executable, "-"]
    done = subprocess.run(argv, input=None if how == "-c" else code, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "converted"
    assert "SchemaKeywordWarning" in done.stderr and "'propertes'" in done.stderr
