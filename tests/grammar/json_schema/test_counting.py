"""Counted repetition (xmask.grammar.json_schema.counting): chunked counts are exact and
stay compact."""

import pytest

from xmask.grammar.ir import Bytes, Grammar
from xmask.grammar.json_schema.context import Context
from xmask.grammar.json_schema.counting import counted
from xmask.grammar.json_schema.layout import Layout
from xmask.grammar.recognizer import Recognizer


def grammar(lo, hi, direct=12):
    ctx = Context(True, Layout(True, None, None, None))
    e = counted(ctx, Bytes(b"a"), lo, hi, "chunk", direct)
    rules = {k: v for k, v in ctx.rules.items() if v is not None}
    rules["root"] = e
    return Grammar(rules, root="root"), len(rules)


@pytest.mark.parametrize("lo,hi", [(0, 5), (3, 3), (0, 40), (13, 13), (7, 150), (150, None), (0, 1000), (999, 1000)])
def test_exact_counts(lo, hi):
    g, _ = grammar(lo, hi)
    r = Recognizer(g)
    top = (hi if hi is not None else lo) + 3
    for n in sorted({0, 1, lo - 1, lo, lo + 1, top - 4, top - 3, top - 2, top} - {-1}):
        assert r.accepts(b"a" * n) == (n >= lo and (hi is None or n <= hi)), n


def test_large_counts_use_few_rules():
    _, n_rules = grammar(0, 100_000)
    assert n_rules < 20
