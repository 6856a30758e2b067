"""Shared fixtures for the converter's unit tests: a converter per schema, sample values."""

from xmask.grammar.json_schema.converter import Converter
from xmask.grammar.json_schema.layout import Layout

#: JSON values of every kind, with the edges the keywords below care about
VALUES = [
    None, True, False, 0, 1, 2, 3, 6, -1, 2.5, -0.5, 1e20, "", "a", "ab", "abc", "b", "2024-02-29",
    "2024-13-01", "x y", [], [1], ["a"], [1, "a"], [None, None], {}, {"a": 1}, {"a": "x"},
    {"b": 1}, {"a": 1, "b": 2}, {"a": None, "c": [1]},
]


def converter(schema, **options) -> Converter:
    opts = dict(strict_mode=False, lenient=False, any_order=False)
    opts.update(options)
    return Converter(schema, Layout(True, None, None, None), **opts)


def root(conv: Converter) -> int:
    return conv.doc.nid(conv.doc.root)
