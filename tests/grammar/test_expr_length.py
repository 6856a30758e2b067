"""``min_code_points``: a lower bound of the lengths of an expression's strings, checked
against automata (the shortest accepted string of the expression's DFA), on every known
string format and on a set of regular expressions; and the converter's use of it: a
``minLength`` every string of a format or pattern meets is dropped (same language)."""

import pytest

from xmask.grammar.dfa_expr import dfa_from_expr
from xmask.grammar.expr_length import format_min_code_points, min_code_points
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from xmask.grammar.json_schema.converter import Converter
from xmask.grammar.json_schema.layout import Layout
from xmask.grammar.regex import regex_to_expr
from xmask.grammar.string_format import KNOWN_FORMATS, format_expr

DIGIT = CharClass(((0x30, 0x39),))


def test_hand_cases():
    assert min_code_points(Bytes("été".encode())) == 3
    assert min_code_points(Bytes(b"\xc3")) == 0  # part of a code point: no claim
    assert min_code_points(Seq((DIGIT, Repeat(DIGIT, 2, 5), Bytes(b"ab")))) == 5
    assert min_code_points(Choice((Bytes(b"abc"), Seq((DIGIT, DIGIT))))) == 2
    assert min_code_points(Repeat(Bytes(b"xy"), 0, None)) == 0
    assert min_code_points(Seq((RuleRef("r"), DIGIT))) == 1  # a reference counts 0
    assert min_code_points(CharClass(((0x80, 0xBF),), byte_level=True)) == 0


@pytest.mark.parametrize("name", KNOWN_FORMATS)
def test_formats_bound_is_exact(name):
    shortest = dfa_from_expr(format_expr(name)).length_bounds()[0]
    assert format_min_code_points(name) == shortest


@pytest.mark.parametrize("pattern", [
    "^a+$", "^[a-z]{3,}@x\\.com$", "ab|c", "^(foo|ba)?r$", "^\\d{4}-\\d{2}$", "x*", "^.{2,4}$",
    "^(?:[A-Z][a-z]+ ){2}[A-Z]$", "^[\\u00e0-\\u00ff]{2}",
])
def test_patterns_bound_is_a_lower_bound(pattern):
    e = regex_to_expr(pattern, search=True)
    shortest = dfa_from_expr(e).length_bounds()[0]
    n = min_code_points(e)
    assert n <= shortest
    if pattern.startswith("^") and pattern.endswith("$"):
        assert n == shortest, pattern  # anchored plain patterns: exact


def test_unknown_format():
    with pytest.raises(ValueError):
        format_min_code_points("url")


@pytest.mark.parametrize("extra, same", [
    ({"format": "date", "minLength": 10}, True),
    ({"format": "uuid", "minLength": 36}, True),
    ({"format": "date", "minLength": 11}, False),
    ({"pattern": "^[a-z]{3}\\d+$", "minLength": 4}, True),
    ({"pattern": "^[a-z]{3}\\d+$", "minLength": 5}, False),
])
def test_a_min_length_the_strings_meet_is_dropped(extra, same):
    layout = Layout(True)
    base = {k: v for k, v in extra.items() if k != "minLength"}
    with_len = str(Converter({"type": "string", **extra}, layout).run())
    alone = str(Converter({"type": "string", **base}, layout).run())
    assert (with_len == alone) == same
