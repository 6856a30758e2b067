"""Bad input: malformed grammars, bad token ids, bad bitmasks, wrong argument types, and
pathological grammars that must not crash (a clean error or a working compile, quickly).

Time limits are in CPU seconds of this process (``time.process_time``), so that a loaded
machine does not make them flaky."""

import time

import numpy as np
import pytest
from conftest import tokenizer_json

import xmask


@pytest.fixture(scope="module")
def info():
    return xmask.default_tokenizer_info()


@pytest.fixture(scope="module")
def compiler(info):
    return xmask.GrammarCompiler(info)


@pytest.fixture(scope="module")
def json_grammar(compiler):
    return compiler.compile_builtin_json_grammar()


@pytest.fixture
def matcher(json_grammar):
    return xmask.GrammarMatcher(json_grammar)


# ---------------------------------------------------------------------------- malformed EBNF


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ('root ::= "a"\nfoo ::= "abc', 2, 9, ["unterminated string"]),
        ("root ::= [z-a]", 1, 11, ["range"]),
        ('root "a"', 1, 6, ["::="]),
        ('\n\nroot = "a"', 3, 6, ["::="]),
        ("root ::= [abc", 1, 10, ["unterminated character class"]),
        ('root ::= "a" )', 1, 14, ["unmatched ')'"]),
        ('root ::= "a"{3,1}', 1, 13, ["repetition"]),
        ('root ::= "a"\n\n   x ::= "\\xZZ"', 3, 11, ["escape"]),
        ('root ::= "a"\nx ::= "b" |\n  "c" (\n', 4, 1, ["expected ')'", "line 3, column 7"]),
        ('root ::= "a"\nroot ::= "b"', 2, 1, ["duplicate", "root"]),
        ("", 1, 1, ["empty grammar"]),
    ],
)
def test_syntax_errors_carry_line_and_column(compiler, text, line, column, words):
    for parse in (xmask.Grammar.from_ebnf, compiler.compile_grammar):
        with pytest.raises(xmask.GrammarSyntaxError) as ei:
            parse(text)
        err = ei.value
        assert (err.line, err.column) == (line, column), str(err)
        assert f"line {line}, column {column}" in str(err)
        for w in words:
            assert w in str(err)
        assert isinstance(err, ValueError) and isinstance(err, xmask.XmaskError)


def test_undefined_rule_names_the_rule(compiler):
    with pytest.raises(xmask.GrammarError) as ei:
        compiler.compile_grammar('root ::= "a" foo')
    assert "'foo'" in str(ei.value)
    assert not isinstance(ei.value, xmask.GrammarSyntaxError)
    with pytest.raises(xmask.GrammarError) as ei:
        compiler.compile_grammar('root ::= x\nx ::= "a" | missing_rule')
    assert "'missing_rule'" in str(ei.value)
    with pytest.raises(xmask.GrammarError) as ei:
        compiler.compile_grammar('start ::= "a"')  # no root rule
    assert "'root'" in str(ei.value)
    assert compiler.compile_grammar('start ::= "a"', root_rule_name="start") is not None


@pytest.mark.parametrize(
    "text, rule",
    [
        ('root ::= root "a" | "b"', "root"),
        ('root ::= a\na ::= b "x"\nb ::= a | "y"', "a"),
        ('root ::= x root "a" | "b"\nx ::= "" | "c"', "root"),  # through a nullable prefix
        ('root ::= [a-z]* root "a" | "b"', "root"),
    ],
)
def test_left_recursion_is_a_grammar_error(compiler, text, rule):
    with pytest.raises(xmask.GrammarError) as ei:
        compiler.compile_grammar(text)
    msg = str(ei.value)
    assert "left recursion" in msg
    assert rule in msg
    assert ei.value.rule == rule


# ---------------------------------------------------------------------------- token ids


@pytest.mark.parametrize("bad", [-1, "vocab_size", 10**12, 2**31, 2**63])
def test_out_of_range_token_id(matcher, info, bad):
    if bad == "vocab_size":
        bad = info.vocab_size
    assert matcher.accept_string("[")
    with pytest.raises(xmask.InvalidTokenError) as ei:
        matcher.accept_token(bad)
    assert str(bad) in str(ei.value)
    assert isinstance(ei.value, ValueError)
    assert matcher.num_accepted_tokens == 1
    assert matcher.accept_string("1]")


@pytest.mark.parametrize("bad", ["3", 1.5, None, [3]])
def test_non_int_token_id(matcher, bad):
    with pytest.raises((TypeError, xmask.InvalidTokenError)):
        matcher.accept_token(bad)
    assert matcher.num_accepted_tokens == 0


@pytest.mark.parametrize("bad", ["3", 1.5])
def test_non_int_token_id_message_names_the_id(matcher, bad):
    with pytest.raises((TypeError, xmask.InvalidTokenError)) as ei:
        matcher.accept_token(bad)
    assert repr(bad) in str(ei.value)


@pytest.mark.parametrize("stops", [[-1], "vocab_size", [0, 10**9]])
def test_override_stop_tokens_out_of_range(json_grammar, info, stops):
    if stops == "vocab_size":
        stops = info.vocab_size
    with pytest.raises(xmask.InvalidTokenError):
        xmask.GrammarMatcher(json_grammar, override_stop_tokens=stops)


# ---------------------------------------------------------------------------- bitmasks


def _n_words(info):
    return xmask.get_bitmask_shape(1, info.vocab_size)[1]


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.float32, np.int16])
def test_bitmask_wrong_dtype(matcher, info, dtype):
    bm = np.full((1, _n_words(info)), 7, dtype=dtype)
    with pytest.raises(xmask.BitmaskError) as ei:
        matcher.fill_next_token_bitmask(bm)
    assert "int32" in str(ei.value)
    assert (bm == 7).all()


@pytest.mark.parametrize("delta", [-1, 1])
def test_bitmask_wrong_width(matcher, info, delta):
    words = _n_words(info)
    bm = np.full((2, words + delta), 7, dtype=np.int32)
    with pytest.raises(xmask.BitmaskError) as ei:
        matcher.fill_next_token_bitmask(bm)
    assert str(words) in str(ei.value)
    assert (bm == 7).all()
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(np.full(words + delta, 7, dtype=np.int32))


def test_bitmask_wrong_ndim(matcher, info):
    words = _n_words(info)
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 1, words), dtype=np.int32))
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((), dtype=np.int32))


def test_bitmask_one_dimensional_is_one_row(matcher, info):
    words = _n_words(info)
    one = np.zeros(words, dtype=np.int32)
    two = np.zeros((1, words), dtype=np.int32)
    assert matcher.fill_next_token_bitmask(one) is True
    matcher.fill_next_token_bitmask(two)
    np.testing.assert_array_equal(one, two[0])
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(one, 1)


@pytest.mark.parametrize("index", [-1, 3, 4, 2**31 - 1])
def test_bitmask_bad_index(matcher, info, index):
    bm = np.full((3, _n_words(info)), 7, dtype=np.int32)
    with pytest.raises(xmask.BitmaskError) as ei:
        matcher.fill_next_token_bitmask(bm, index)
    assert str(index) in str(ei.value)
    assert (bm == 7).all()


def test_bitmask_index_fills_only_that_row(matcher, info):
    bm = np.full((3, _n_words(info)), 7, dtype=np.int32)
    matcher.fill_next_token_bitmask(bm, 1)
    assert (bm[0] == 7).all() and (bm[2] == 7).all()
    ref = np.zeros((1, _n_words(info)), dtype=np.int32)
    matcher._reference_fill_next_token_bitmask(ref)
    np.testing.assert_array_equal(bm[1], ref[0])


def test_bitmask_layouts(matcher, info):
    words = _n_words(info)
    fortran = np.asfortranarray(np.zeros((2, words), dtype=np.int32))
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(fortran)
    # Rows spaced further apart than a row (views of 3-D speculative buffers) are written in
    # place; only the row itself must be contiguous.
    ref = np.zeros((1, words), dtype=np.int32)
    matcher._reference_fill_next_token_bitmask(ref)
    big = np.zeros((2, words + 1), dtype=np.int32)
    matcher.fill_next_token_bitmask(big[:, :words], 1)
    np.testing.assert_array_equal(big[1, :words], ref[0])
    assert (big[0] == 0).all() and big[1, words] == 0
    strided = np.zeros((4, words), dtype=np.int32)
    matcher.fill_next_token_bitmask(strided[::2], 1)
    np.testing.assert_array_equal(strided[2], ref[0])
    assert (strided[[0, 1, 3]] == 0).all()
    every_other = np.zeros((1, 2 * words), dtype=np.int32)[:, ::2]
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(every_other)
    ro = np.zeros((1, words), dtype=np.int32)
    ro.setflags(write=False)
    with pytest.raises(xmask.BitmaskError) as ei:
        matcher.fill_next_token_bitmask(ro)
    assert "read-only" in str(ei.value)
    assert (ro == 0).all()
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask([[-1] * words])
    with pytest.raises(xmask.BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, words), dtype=">i4"))  # big-endian


def test_bitmask_errors_are_value_errors():
    assert issubclass(xmask.BitmaskError, ValueError)
    assert issubclass(xmask.BitmaskError, xmask.XmaskError)


# ---------------------------------------------------------------------------- argument types


@pytest.mark.parametrize("bad", [None, "root ::= \"a\"", 1, object()])
def test_matcher_needs_compiled_grammar(bad):
    with pytest.raises(TypeError):
        xmask.GrammarMatcher(bad)


def test_matcher_rejects_grammar_object():
    with pytest.raises(TypeError) as ei:
        xmask.GrammarMatcher(xmask.Grammar.from_ebnf('root ::= "a"'))
    assert "CompiledGrammar" in str(ei.value)


@pytest.mark.parametrize("bad", [None, "tokenizer.json", 5, ["a", "b"]])
def test_compiler_needs_tokenizer_info(bad):
    with pytest.raises(TypeError) as ei:
        xmask.GrammarCompiler(bad)
    assert "TokenizerInfo" in str(ei.value)


def test_compiler_rejects_hf_tokenizer_object():
    with pytest.raises(TypeError):
        xmask.GrammarCompiler(xmask.default_tokenizer())


def test_compiler_bad_max_threads(info):
    with pytest.raises(ValueError):
        xmask.GrammarCompiler(info, max_threads=0)


def test_compile_grammar_bad_type(compiler):
    for bad in [None, 1, b'root ::= "a"']:
        with pytest.raises(TypeError):
            compiler.compile_grammar(bad)


def test_tokenizer_info_vocab_size_too_small():
    with pytest.raises(xmask.TokenizerError):
        xmask.TokenizerInfo(["a", "b", "c"], vocab_size=2)
    path = str(tokenizer_json("llama3"))
    with pytest.raises(xmask.TokenizerError) as ei:
        xmask.TokenizerInfo.from_huggingface(path, vocab_size=128000)
    assert "128256" in str(ei.value)


# ---------------------------------------------------------------------------- pathological grammars


def test_two_thousand_alternatives(compiler, info):
    text = "root ::= " + " | ".join(f'"w{i}"' for i in range(2000))
    t0 = time.process_time()
    g = compiler.compile_grammar(text)
    assert time.process_time() - t0 < 30
    for word in ["w0", "w1999", "w123"]:
        m = xmask.GrammarMatcher(g)
        assert m.accept_string(word)
        assert m.accept_token(info.stop_token_ids[0])
    m = xmask.GrammarMatcher(g)
    assert not m.accept_string("w2000")


def _nested(depth):
    return "root ::= " + "(" * depth + '"a"' + ")" * depth


def test_moderate_nesting_compiles(compiler):
    m = xmask.GrammarMatcher(compiler.compile_grammar(_nested(100)))
    assert m.accept_string("a") and not m.accept_string("a")


@pytest.mark.parametrize("depth", [500, 5000])
def test_deep_nesting_does_not_crash(compiler, depth):
    # (was: RecursionError from the recursive-descent parser at ~250 levels)
    t0 = time.process_time()
    try:
        g = compiler.compile_grammar(_nested(depth))
    except xmask.GrammarError:
        pass  # a clean limit error is acceptable
    except RecursionError as exc:
        pytest.fail(f"RecursionError escaped: {exc}")
    else:
        m = xmask.GrammarMatcher(g)
        assert m.accept_string("a")
    assert time.process_time() - t0 < 30


@pytest.mark.parametrize("n", [2000, 10000])
def test_long_bounded_repeat(compiler, info, n):
    t0 = time.process_time()
    try:
        g = compiler.compile_grammar(f"root ::= [a-z]{{0,{n}}}")
    except xmask.GrammarLimitError:
        g = None
    assert time.process_time() - t0 < 30
    if g is not None:
        m = xmask.GrammarMatcher(g)
        assert m.accept_string("ab" * (n // 2))
        assert not m.accept_string("a")
        m.rollback(1)
        assert m.accept_string("y" * (n - 1)) and m.accept_string("z")
        assert m.accept_token(info.stop_token_ids[0])


def test_long_chain_of_rules(compiler, info):
    # rules declared callers-first, as GBNF files usually are
    n = 1000
    text = "\n".join(["root ::= r0"] + [f"r{i} ::= r{i + 1}" for i in range(n)] + [f'r{n} ::= "z"'])
    t0 = time.process_time()
    g = compiler.compile_grammar(text)
    assert time.process_time() - t0 < 30
    m = xmask.GrammarMatcher(g)
    assert m.accept_string("z") and m.accept_token(info.stop_token_ids[0])


def test_repeat_over_the_limit_is_a_limit_error(compiler):
    with pytest.raises(xmask.GrammarLimitError):
        compiler.compile_grammar("root ::= [a-z]{0,20000}")


def test_deep_runtime_stack(compiler, json_grammar, info):
    m = xmask.GrammarMatcher(compiler.compile_grammar('root ::= "a" root | "b"'))
    for _ in range(20000):
        assert m.accept_string("a")
    assert m.accept_string("b") and m.accept_token(info.stop_token_ids[0])
    # 5,000 JSON levels take about 10,000 frames: over the default recursion bound.
    with xmask.max_recursion_depth(20_000):
        m = xmask.GrammarMatcher(json_grammar)
        assert m.accept_string("[" * 5000)
        bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
        ref = np.zeros_like(bm)
        m.fill_next_token_bitmask(bm)
        m._reference_fill_next_token_bitmask(ref)
        np.testing.assert_array_equal(bm, ref)
        assert m.accept_string("1" + "]" * 5000)
        assert m.accept_token(info.stop_token_ids[0])


def test_grammar_that_matches_nothing(compiler, info):
    # an empty language would give an all-zero mask (NaN logits): refuse it at compile time
    for text in ("root ::= [^\\x00-\\U0010FFFF]", 'root ::= "a" root'):
        with pytest.raises(xmask.GrammarError, match="no complete sentence"):
            compiler.compile_grammar(text)
