"""Shape of the token-mask cache for common schema bounds (deterministic, not timed).

String lengths up to ``_DIRECT_STRING`` characters compile to a plain chain: every token is
context-independent there (no uncertain tokens, so masks need no runtime checks).  Larger
bounds are factored into chunk rules of at least that many characters, and stay exact.
"""

import json

import pytest

import xmask
from xmask.grammar.json_schema.vocabulary import DIRECT_STRING as _DIRECT_STRING


@pytest.fixture(scope="module")
def compiler():
    return xmask.GrammarCompiler(xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer()))


@pytest.mark.parametrize("hi", [20, 100, _DIRECT_STRING])
def test_bounded_strings_have_no_uncertain_tokens(compiler, hi):
    cg = compiler.compile_json_schema({"type": "string", "maxLength": hi})
    assert sum(r.uncertain for r in cg.cache_stats()) == 0


@pytest.mark.parametrize("lo,hi", [(0, _DIRECT_STRING + 1), (3, 700), (_DIRECT_STRING, 2 * _DIRECT_STRING + 5)])
def test_factored_lengths_are_exact(compiler, lo, hi):
    cg = compiler.compile_json_schema({"type": "string", "minLength": lo, "maxLength": hi})
    stop = compiler.tokenizer_info.stop_token_ids[0]
    for n in sorted({0, max(lo - 1, 0), lo, lo + 1, _DIRECT_STRING - 1, _DIRECT_STRING,
                     _DIRECT_STRING + 1, hi - 1, hi, hi + 1}):
        m = xmask.GrammarMatcher(cg)
        ok = m.accept_string(json.dumps("\u00e9" * n)) and m.accept_token(stop)
        assert ok == (lo <= n <= hi), n
