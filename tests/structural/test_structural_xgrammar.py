"""Differential test against XGrammar 0.2.8 (skipped without it): on random documents built from
each structural tag's pieces, xmask's grammar accepts exactly what XGrammar's matcher accepts,
except where XGrammar is looser than its documented semantics (tested below)."""

import json
import random

import pytest

import xmask
from xmask.grammar.recognizer import Recognizer

xgr = pytest.importorskip("xgrammar")


def C(v):
    return {"type": "const_string", "value": v}


def T(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


CASES = [
    (T("<a>", {"type": "any_text"}, "</a>"), ["<a>", "</a>", "<", "/", "a", ">", "x"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [
        T("<f=a>", C("A"), "</f>"), T("<f=b>", {"type": "any_text"}, "</f>")]},
     ["<f=a>", "<f=b>", "A", "</f>", "<", "f", "x", "="]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [T("<f=a>", C("A"), "</f>")],
      "at_least_one": True}, ["<f=a>", "A", "</f>", "<", "f", "x"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [T("<f=a>", C("A"), "</f>")],
      "stop_after_first": True, "excludes": ["xx"]}, ["<f=a>", "A", "</f>", "<", "f", "x"]),
    ({"type": "triggered_tags", "triggers": ["aa"], "tags": [T("aab", C("X"), "E")]},
     ["a", "b", "X", "E", "c"]),
    ({"type": "triggered_tags", "triggers": ["ab", "b"], "tags": [
        T("ab", C("X"), "E"), T("bc", C("Y"), "E")]}, ["a", "b", "c", "X", "Y", "E"]),
    ({"type": "triggered_tags", "triggers": ["ab"], "tags": [T("ab", C("X"), "Ea")]},
     ["a", "b", "X", "E", "Q"]),
    ({"type": "triggered_tags", "triggers": ["ab"], "tags": [T("ab", C("X"), "E")],
      "excludes": ["xa", "b"]}, ["a", "b", "x", "X", "E"]),
    ({"type": "any_text", "excludes": ["ab", "bb"]}, ["a", "b", "c"]),
    ({"type": "any_text", "max_chars": 3}, ["a", "b", "é"]),
    (T("<", {"type": "any_text", "max_chars": 3, "excludes": ["q"]}, ">"), ["a", "q", ">", "<"]),
    ({"type": "dispatch", "rules": [["<a", C(">A")], ["<b", {"type": "any_text"}]]},
     ["<a", "<b", ">A", "<", "a", "x", ">"]),
    ({"type": "dispatch", "rules": [["<a", C(">A")]], "loop": False, "excludes": ["q"]},
     ["<a", ">A", "<", "a", "q", ">"]),
    (T("<t>", {"type": "dispatch", "rules": [["<a", {"type": "any_text"}]]}, "</t>"),
     ["<t>", "</t>", "<a", "<", "x", "/"]),
    (T("<t>", {"type": "triggered_tags", "triggers": ["<f"], "tags": [
        T("<f>", {"type": "any_text"}, "</f>")]}, ["</t>", "</u>"]),
     ["<t>", "</t>", "</u>", "<f>", "</f>", "<", "x", "f"]),
    ({"type": "tags_with_separator", "tags": [T("<a>", C("A"), "</a>"), T("<b>", C("B"), "</b>")],
      "separator": ","}, ["<a>A</a>", "<b>B</b>", ",", "x"]),
    ({"type": "sequence", "elements": [{"type": "any_text"}, C("END")]}, ["E", "N", "D", "END", "x"]),
    ({"type": "or", "elements": [C("a"), {"type": "optional", "content": C("b")},
                                 {"type": "repeat", "min": 2, "max": 3, "content": C("c")}]},
     ["a", "b", "c"]),
    (T("<a>", {"type": "star", "content": {"type": "any_text"}}, "</a>"), ["<a>", "</a>", "x", "<"]),
    ({"type": "json_schema", "json_schema": {"type": "object", "properties": {
        "a": {"type": "integer"}}, "required": ["a"]}}, ['{', '}', '"a"', ':', '1', ' ', ',', '"b"']),
]


def _xgr_accepts(compiled, text):
    m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return m.accept_string(text) and m.is_terminated()


@pytest.fixture(scope="module")
def xcompiler():
    return xgr.GrammarCompiler(xgr.TokenizerInfo([]))


@pytest.mark.parametrize("fmt,pieces", CASES, ids=[c[0]["type"] + str(i) for i, c in enumerate(CASES)])
def test_same_language_as_xgrammar(xcompiler, fmt, pieces):
    doc = {"type": "structural_tag", "format": fmt}
    theirs = xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(doc)))
    ours = Recognizer(xmask.Grammar.from_structural_tag(doc))
    rng = random.Random(11)
    for _ in range(600):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert ours.accepts(text.encode()) == _xgr_accepts(theirs, text), text


def test_trigger_inside_a_longer_trigger_fires(xcompiler):
    """Triggers "abc" and "b": in "ab" the trigger "b" has occurred, so a tag must follow.
    XGrammar only fires a trigger whose match is not inside a longer partial match, and accepts
    "ab" as free text (looser than its documented semantics); xmask is exact.  The README lists
    this difference."""
    fmt = {"type": "triggered_tags", "triggers": ["abc", "b"],
           "tags": [T("abc", C("X"), "E"), T("bc", C("Y"), "E")]}
    doc = {"type": "structural_tag", "format": fmt}
    theirs = xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(doc)))
    ours = Recognizer(xmask.Grammar.from_structural_tag(doc))
    assert _xgr_accepts(theirs, "ab") and not ours.accepts(b"ab")
    # "b" fires first in "abc", so the tag of "abc" is unreachable (exactly as specified)
    assert ours.accepts(b"abcYE") and not ours.accepts(b"abcXE")


def test_trigger_that_starts_an_excluded_string_fires(xcompiler):
    """Trigger ">" and excluded ">/a": ">" dispatches at once in xmask; XGrammar waits for the
    longer pattern and then takes ">" as free text (the same looseness as above)."""
    fmt = {"type": "triggered_tags", "triggers": [">"], "excludes": [">/a"],
           "tags": [T(">b", C("<"), "/<")]}
    doc = {"type": "structural_tag", "format": fmt}
    theirs = xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(doc)))
    ours = Recognizer(xmask.Grammar.from_structural_tag(doc))
    assert _xgr_accepts(theirs, "<>/<") and not ours.accepts(b"<>/<")
    assert ours.accepts(b"<>b</<") and _xgr_accepts(theirs, "<>b</<")


def test_xgrammar_models_are_accepted():
    from xgrammar.structural_tag import StructuralTag, StructuralTagItem

    tag = StructuralTag.from_legacy_structural_tag(
        [StructuralTagItem(begin="<f>", schema={"type": "integer"}, end="</f>")], ["<f"])
    g = xmask.Grammar.from_structural_tag(tag)
    assert Recognizer(g).accepts(b"x <f>1</f>")
    assert g == xmask.Grammar.from_structural_tag(tag.model_dump_json())
