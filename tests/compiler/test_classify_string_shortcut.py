"""The string-body shortcut of the token classifier never changes a cache entry.

A state whose own byte transitions accept every plain-string token (valid UTF-8 without '"',
'\\' or control bytes) gets those tokens as accepted without walking them, and only the other
tokens are walked (runtime/_classify.pyx).  Here every state of real grammars is classified with
the shortcut and with the full walk, on real tokenizers, and the entries must be identical.
"""

import codecs
import os

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json

import xmask
from xmask.runtime import _classify

GRAMMARS = [
    ("builtin", None),
    ("schema", {"type": "object", "properties": {
        "name": {"type": "string"},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
        "short": {"type": "string", "maxLength": 3},
        "tags": {"type": "array", "items": {"type": "string", "enum": ['a"b', "é", "x"]}},
        "when": {"type": "string", "format": "date-time"},
        "n": {"type": "number"}}, "required": ["name"]}),
    ("ebnf", 'root ::= "<" [^<>]* ">" | "\\"" ([^"\\\\] | "\\\\" ["nt])* "\\""'),
    ("ebnf", 'root ::= "s" [^\\x00-\\x7f]* "e" | [a-z\\u00e0-\\u00ff]+'),
]


def _compile(compiler, kind, what):
    if kind == "builtin":
        return compiler.compile_builtin_json_grammar()
    if kind == "schema":
        return compiler.compile_json_schema(what)
    return compiler.compile_grammar(what)


def _entries(compiled):
    compiled.precompute()
    snap = compiled._mask_cache.export()
    out = {}
    for s in np.nonzero(snap["state_entry"] >= 0)[0].tolist():
        k = int(snap["state_entry"][s])
        lo, n = int(snap["entry_off"][k]), int(snap["entry_len"][k])
        ulo, un = int(snap["unc_off"][k]), int(snap["unc_len"][k])
        out[s] = (int(snap["entry_kind"][k]), snap["data"][lo:lo + n].tobytes(),
                  snap["unc"][ulo:ulo + un].tobytes())
    return out


@pytest.mark.parametrize("tok_name", ["llama3", "qwen2.5"])
def test_shortcut_entries_equal_full_walk(tok_name):
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json(tok_name)))
    info = xmask.TokenizerInfo.from_huggingface(tok)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    shortcut_states = 0
    for kind, what in GRAMMARS:
        try:
            _classify.set_plain_fast_path(True)
            fast = _entries(_compile(compiler, kind, what))
            _classify.set_plain_fast_path(False)
            full = _entries(_compile(compiler, kind, what))
        finally:
            _classify.set_plain_fast_path(True)
        assert fast.keys() == full.keys()
        for s in fast:
            assert fast[s] == full[s], f"{kind} state {s}"
        shortcut_states += sum(1 for e in fast.values() if e[0] != 0)
    assert shortcut_states > 0  # string bodies were met (they accept most of the vocabulary)


def test_plain_tokens_are_what_a_json_string_holds():
    # the per-tokenizer split the shortcut relies on: a token is plain iff it is strict UTF-8
    # (its last character may be cut short) without '"', '\\' or bytes below 0x20
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json("llama3")))
    info = xmask.TokenizerInfo.from_huggingface(tok)
    arrays = xmask.GrammarCompiler(info)._vocab_tables.arrays
    n_sorted = len(arrays["sorted_ids"])
    plain = arrays["plain_pos"].tolist()
    other = arrays["other_pos"].tolist()
    assert len(plain) + len(other) == n_sorted and not set(plain) & set(other)
    assert len(other) < len(plain)
    offs, data = arrays["tok_offsets"], arrays["tok_bytes"].tobytes()

    def is_plain(b):
        if any(c < 0x20 or c in (0x22, 0x5C) for c in b):
            return False
        try:  # an incremental decoder keeps a valid cut-off last character pending
            codecs.getincrementaldecoder("utf-8")().decode(b, final=False)
        except UnicodeDecodeError:
            return False
        return True

    plain_set = set(plain)
    for pos in range(n_sorted):
        b = data[offs[pos]:offs[pos + 1]]
        assert (pos in plain_set) == is_plain(b), b
    lcp = arrays["other_lcp"].tolist()
    for i in range(1, len(other)):
        x = data[offs[other[i - 1]]:offs[other[i - 1] + 1]]
        y = data[offs[other[i]]:offs[other[i] + 1]]
        assert x < y
        assert lcp[i] == len(os.path.commonprefix([x, y]))
