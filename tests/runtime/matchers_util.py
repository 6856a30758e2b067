"""Shared helpers for the runtime tests: real tokenizers, matchers advanced along real JSON
documents, and masks from the fast path and the slow reference as NumPy rows."""

import json

import numpy as np
import tokenizers
from conftest import require_data, tokenizer_json

import xmask

DOCS = [
    '{"name": "caf\u00e9 \u4f60\u597d", "list": [1, -2.5e3, true, null, {"x": "a\\"b\\n"}], "e": {}}',
    '[{"id": 17, "tags": ["a", "b"], "ok": false}, [], [[0.5]], "end"]',
    '{"deep": [[[{"k": [[{"v": "\\u00e9"}]]}]]], "n": -0}',
]


class Tok:
    """A TokenizerInfo, its tokenizers.Tokenizer, a compiler and the built-in JSON grammar."""

    def __init__(self, name, vocab_size=None):
        path = str(tokenizer_json(name))
        self.info = xmask.TokenizerInfo.from_huggingface(path, vocab_size=vocab_size)
        self.tokenizer = tokenizers.Tokenizer.from_file(path)
        self.vocab_size = self.info.vocab_size
        self.n_words = (self.vocab_size + 31) // 32
        self.compiler = xmask.GrammarCompiler(self.info)
        self.json = self.compiler.compile_builtin_json_grammar()

    def encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False).ids


def reference_row(matcher, n_words):
    ref = np.full((1, n_words), 0x5A5A5A5A, dtype=np.int32)
    matcher._reference_fill_next_token_bitmask(ref)
    return ref[0]


def fast_row(matcher, n_words):
    out = np.full((1, n_words), 0x5A5A5A5A, dtype=np.int32)
    assert matcher.fill_next_token_bitmask(out) is True
    return out[0]


def advanced(compiled, ids, k):
    """A matcher on ``compiled`` that accepted ids[:k]."""
    m = xmask.GrammarMatcher(compiled)
    for t in ids[:k]:
        assert m.accept_token(t)
    return m


def spread(compiled, docs_ids, n):
    """``n`` matchers advanced to varied prefixes of the documents (never terminated)."""
    out = []
    for i in range(n):
        ids = docs_ids[i % len(docs_ids)]
        k = (i * 7919) % (len(ids) + 1)
        out.append(advanced(compiled, ids, k))
    return out


def maskbench_schemas(names):
    """[(schema, [valid instance text, ...])] for MaskBench files ``names``."""
    out = []
    for name in names:
        entry = json.loads(require_data("maskbench", name).read_text())
        valid = [json.dumps(t["data"]) for t in entry["tests"] if t["valid"]]
        out.append((entry["schema"], valid))
    return out
