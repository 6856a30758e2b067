"""A batch fill on C threads whose first fill classifies a state past a compile limit raises
that limit's GrammarLimitError (not MemoryError, not an 'Exception ignored' print), and the
other rows of a batch are unaffected by where the error came from."""

import numpy as np
import pytest
from conftest import tokenizer_json

import xmask

# An ambiguous grammar: classifying its states on Llama-3 (tokens of many spaces) meets several
# parse-stack tops per byte even with the graph-structured stack's merging, so a tiny
# max_classify_tops stops the first fill's lazy classification.
R0 = 'root ::= r0\nr0 ::= (("  " | . r0 [\\u00e0-\\u00ff] r0)?){1,3}'


@pytest.fixture(scope="module")
def info():
    from tokenizers import Tokenizer

    return xmask.TokenizerInfo.from_huggingface(Tokenizer.from_file(str(tokenizer_json("llama3"))))


def test_threaded_batch_fill_raises_the_limit_error(info, capsys):
    limits = xmask.CompileLimits(max_classify_tops=5)
    g = xmask.GrammarCompiler(info, limits=limits).compile_grammar(R0)
    ms = [xmask.GrammarMatcher(g) for _ in range(16)]
    bm = xmask.allocate_token_bitmask(16, info.vocab_size)
    batch = xmask.BatchGrammarMatcher(max_threads=2)
    with pytest.raises(xmask.GrammarLimitError, match="max_classify_tops"):
        batch.batch_fill_next_token_bitmask(ms, bm)
    assert "Exception ignored" not in capsys.readouterr().err


def test_threaded_batch_fill_without_classification_is_exact(info):
    # the same batch path on a grammar whose states are classified already (precompute)
    g = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    ms = [xmask.GrammarMatcher(g) for _ in range(8)]
    for i, m in enumerate(ms):
        assert m.accept_string('{"a": ' + "1" * i)
    bm = xmask.allocate_token_bitmask(8, info.vocab_size)
    xmask.BatchGrammarMatcher(max_threads=2).batch_fill_next_token_bitmask(ms, bm)
    for i, m in enumerate(ms):
        one = xmask.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(one)
        np.testing.assert_array_equal(np.asarray(bm[i]), np.asarray(one[0]))
