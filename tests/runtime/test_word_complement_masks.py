"""Masks of objects with additional keys (their key rules hold a ``WordComplement``, built by
the NFA builder from the words) equal the slow reference, token by token, on real tokenizers.

The texts put extra keys next to the declared names (a name with a character added, removed or
changed, a prefix, an escaped spelling), where the trie and its loop meet."""

from __future__ import annotations

import numpy as np
import pytest
from matchers_util import Tok, fast_row, reference_row

import xmask
from xmask.grammar.ir import Grammar, WordComplement, iter_nodes

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "integer"}},
    "name": {"type": "string"}, "namespace": {"type": "string"}, "": {"type": "null"},
    "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "rep": {"type": "boolean"}}},
}}

# (declared members in their order, extra keys after the members they follow)
TEXTS = [
    '{"id": 1, "ids": [3], "idx": [], "i": 2}',
    '{"name": "n", "namespace": "s", "nam": {}, "names": "x", "nameSpace": false}',
    '{"": null, "\\u0000": 1}',
    '{"spec": {"replicas": 2, "rep": true, "replica": 1, "reps": "r"}}',
    '{"na\\\\me": 1, "caf\u00e9": [1, {"x": null}], "nb": 0.5}',
    '{"id": 1, "ids": [], "name": "", "namespace": "", "": null, "spec": {}, "idss": 1}',
]


def _walk_compare(tok, compiled, text):
    ids = tok.encode(text)
    m = xmask.GrammarMatcher(compiled)
    for t in ids + [None]:
        assert np.array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words)), text
        if t is None:
            break
        assert m.accept_token(t), text


@pytest.mark.parametrize("name,vocab_size", [("llama3", None), ("qwen2.5", 151_936)])
def test_masks_equal_the_reference_around_declared_names(name, vocab_size):
    tok = Tok(name, vocab_size)
    grammar = Grammar.of(xmask.Grammar.from_json_schema(SCHEMA, strict_mode=False, any_whitespace=True))
    assert any(type(x) is WordComplement for body in grammar.rules.values() for x in iter_nodes(body))
    compiled = tok.compiler.compile_json_schema(SCHEMA, strict_mode=False, any_whitespace=True)
    for text in TEXTS:
        _walk_compare(tok, compiled, text)
