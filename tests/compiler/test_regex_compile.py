"""compile_regex / Grammar.from_regex end to end on a real tokenizer, masks vs the reference."""

import re

import numpy as np
import pytest
import tokenizers

import xmask
from conftest import tokenizer_json
from xmask.testing import is_grammar_accept_string

PATTERNS = [
    (r"\d{3}-\d{4}", ["555-1234", "000-0000"], ["5551234", "555-12345"]),
    (r"(cat|dog)s? (and|or) [a-z]+", ["cats and mice", "dog or x"], ["cat and", "cats  and x"]),
    (r"[A-Z][a-z]*( [A-Z][a-z]*){0,2}", ["Hello", "New York City"], ["hello", "A B C D"]),
    (r"-?(0|[1-9]\d*)(\.\d+)?", ["0", "-12.5", "7"], ["01", "1.", "--1"]),
    (r"caf[eé] \w+", ["café au", "cafe x"], ["cafè x"]),
]


@pytest.fixture(scope="module")
def llama3():
    path = tokenizer_json("llama3")
    return xmask.TokenizerInfo.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("pattern,good,bad", PATTERNS)
def test_regex_grammar_matches_python_re(pattern, good, bad):
    for text in good + bad:
        assert is_grammar_accept_string(xmask.Grammar.from_regex(pattern), text) == bool(
            re.fullmatch(pattern, text)
        ), text


@pytest.mark.parametrize("pattern,good,bad", PATTERNS)
def test_compiled_regex_masks_equal_reference(llama3, pattern, good, bad):
    info, tok = llama3
    compiled = xmask.GrammarCompiler(info).compile_regex(pattern)
    bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    ref = bm.copy()
    for text in good:
        m = xmask.GrammarMatcher(compiled)
        for tid in tok.encode(text, add_special_tokens=False).ids:
            m.fill_next_token_bitmask(bm)
            m._reference_fill_next_token_bitmask(ref)
            assert np.array_equal(bm, ref), (pattern, text)
            assert (bm[0, tid // 32] >> (tid % 32)) & 1
            assert m.accept_token(tid)
        m.fill_next_token_bitmask(bm)
        stop = info.stop_token_ids[0]
        assert (bm[0, stop // 32] >> (stop % 32)) & 1, (pattern, text)
    for text in bad:
        m = xmask.GrammarMatcher(compiled)
        assert not (m.accept_string(text) and m.accept_token(info.stop_token_ids[0])), text


def test_regex_errors_name_the_position():
    with pytest.raises(xmask.GrammarSyntaxError, match="position 3"):
        xmask.Grammar.from_regex(r"(a)\1")
    info = xmask.default_tokenizer_info()
    with pytest.raises(TypeError):
        xmask.GrammarCompiler(info).compile_regex(123)
