"""Regression tests for what the fuzz suite (test_fuzz.py) found, one per finding, in process
and fast; plus copying and pickling of the public objects (what works, what raises).

Findings (all fixed):

* a raw lone surrogate in an EBNF string literal compiled to invalid UTF-8 (the escaped form
  ``\\ud800`` was already refused); in a Lark literal it raised ``UnicodeEncodeError``;
* ``accept_string`` / ``batch_accept_string`` of a str with a lone surrogate raised
  ``UnicodeEncodeError``;
* a fill row index >= 2**63 raised ``OverflowError``;
* malformed draft-tree arrays (different lengths, bad links, float arrays) raised a plain
  ``ValueError``, not an xmask error;
* (long run, seed 20261124) ``root ::= "" | [a-z] ("" root){10000}``: classifying a state for
  the first fill spent 20 s and 2.7 GB inside one parse step (10^4 nullable calls x 10^4
  parents) and ended in ``MemoryError``; a step now has a budget of closure items (compile
  memory limit / 64, the run-time work cap) and the deadline is read inside it;
* (long run) a schema whose ``enum`` holds an object with a 120,000-string array: building
  the 1 MB literal fused its bytes pairwise (quadratic) and the compile ran minutes past its
  deadline.
"""

import copy
import pickle

import numpy as np
import pytest

import xmask
from xmask.testing import is_grammar_accept_string


@pytest.fixture(scope="module")
def small():
    info = xmask.default_tokenizer_info()
    compiler = xmask.GrammarCompiler(info)
    return info, compiler, compiler.compile_builtin_json_grammar()


@pytest.mark.parametrize("text", ['root ::= "\ud800"', 'root ::= "a\udcff b"',
                                  'root ::= "\\ud800"', 'root ::= "x" "\udfff"'])
def test_ebnf_literal_with_a_lone_surrogate_is_refused(text):
    with pytest.raises(xmask.GrammarSyntaxError, match="surrogate code point U\\+D[8-F]"):
        xmask.Grammar.from_ebnf(text)


def test_ebnf_surrogate_pair_escapes_and_classes_still_work():
    assert is_grammar_accept_string('root ::= "\U0001F600"', "\U0001F600")
    # a class may name surrogates: they are simply never matched
    assert is_grammar_accept_string("root ::= [\\ud800-\\ue000]", "\ue000")
    assert not is_grammar_accept_string("root ::= [\\ud800-\\ue000]", b"\xed\xa0\x80")


@pytest.mark.parametrize("text", ['start: "\ud800b"', 'start: "a\ud800"i',
                                  'start: "\ud800".."b"'])
def test_lark_literal_with_a_lone_surrogate_is_refused(text):
    with pytest.raises(xmask.GrammarSyntaxError, match="U\\+D800 is not a Unicode scalar value"):
        xmask.Grammar.from_lark(text)


def test_accept_string_with_a_lone_surrogate_raises_and_changes_nothing(small):
    info, _, json_grammar = small
    m = xmask.GrammarMatcher(json_grammar)
    assert m.accept_string("[1")
    with pytest.raises(xmask.XmaskError, match="lone surrogate U\\+D800 at index 1"):
        m.accept_string(",\ud800")
    with pytest.raises(xmask.XmaskError, match="strings\\[0\\] .* U\\+DCFF"):
        xmask.BatchGrammarMatcher.batch_accept_string([m], ["\udcff"])
    assert m.accept_string("]") and m.is_completed()


@pytest.mark.parametrize("index", [2 ** 63, 2 ** 64, 10 ** 30, -(2 ** 63), np.uint64(2 ** 64 - 1)])
def test_fill_with_a_huge_row_index_raises_bitmask_error(small, index):
    info, _, json_grammar = small
    m = xmask.GrammarMatcher(json_grammar)
    bm = np.zeros((2, (info.vocab_size + 31) // 32), np.int32)
    with pytest.raises(xmask.BitmaskError, match="out of range"):
        m.fill_next_token_bitmask(bm, index)


@pytest.mark.parametrize("nxt,sib,tok", [
    ([], [], [0]),                        # lengths differ
    ([1, -1], [-1], [0, 5]),
    ([5, -1], [-1, -1], [0, 5]),          # a link outside the tree
    ([1, 0], [-1, -1], [0, 5]),           # a cycle
    ([1.0, -1.0], [-1, -1], [0, 5]),      # floats
    ([[1, -1]], [[-1, -1]], [[0, 5]]),    # 2-D
    (["a"], ["b"], ["c"]),
])
def test_malformed_draft_tree_raises_an_xmask_error(small, nxt, sib, tok):
    info, _, json_grammar = small
    m = xmask.GrammarMatcher(json_grammar)
    bm = np.zeros((4, (info.vocab_size + 31) // 32), np.int32)
    with pytest.raises(xmask.InvalidTokenError):  # an XmaskError and a ValueError
        m.traverse_draft_tree(nxt, sib, tok, bm)


# ------------------------------------------------------------------- copying and pickling

def _masks(compiled, text):
    m = xmask.GrammarMatcher(compiled)
    words = (compiled.tokenizer_info.vocab_size + 31) // 32
    bm = np.zeros((1, words), np.int32)
    out = []
    for ch in text:
        m.fill_next_token_bitmask(bm)
        out.append(bm[0].copy())
        assert m.accept_string(ch)
    return np.array(out)


def test_public_objects_copy_and_pickle(small):
    info, compiler, json_grammar = small
    ref = _masks(json_grammar, '{"a": [1]}')
    for clone in (copy.copy(json_grammar), copy.deepcopy(json_grammar),
                  pickle.loads(pickle.dumps(json_grammar))):
        assert isinstance(clone, xmask.CompiledGrammar)
        np.testing.assert_array_equal(_masks(clone, '{"a": [1]}'), ref)
    for twin in (copy.copy(compiler), copy.deepcopy(compiler),
                 pickle.loads(pickle.dumps(compiler))):
        # the configuration travels, the cache does not
        np.testing.assert_array_equal(_masks(twin.compile_builtin_json_grammar(), '{"a": [1]}'),
                                      ref)
    for obj in (info, json_grammar.grammar, xmask.CompileLimits(max_repeat=7)):
        assert pickle.loads(pickle.dumps(obj)) is not obj

    m = xmask.GrammarMatcher(json_grammar)
    assert m.accept_string('{"a"')
    fork = copy.copy(m)  # copy and deepcopy fork: independent from then on
    assert fork.accept_string(": 1}") and fork.is_completed()
    assert not m.is_completed() and m.accept_string(": [")
    with pytest.raises(TypeError, match="pickle its CompiledGrammar"):
        pickle.dumps(m)


# ----------------------------------------------------- found by the long run (seed 20261124)

@pytest.mark.parametrize("fmt,where", [
    ({"type": "const_string", "value": "\ud800"}, "format.value"),
    ({"type": "tag", "begin": "a\udfff", "content": {"type": "const_string", "value": "x"},
      "end": "e"}, "format.begin"),
    ({"type": "tag", "begin": "b", "content": {"type": "const_string", "value": "x"},
      "end": ["e", "\udc00"]}, "format.end[1]"),
    ({"type": "triggered_tags", "triggers": ["<\ud800"], "tags": [
        {"type": "tag", "begin": "<\ud800a", "content": {"type": "const_string", "value": "x"},
         "end": "e"}]}, "format.triggers[0]"),
    ({"type": "dispatch", "rules": [["\ud800", {"type": "const_string", "value": "x"}]]},
     "format.rules[0][0]"),
])
def test_structural_tag_text_with_a_lone_surrogate_is_refused(small, fmt, where):
    # was UnicodeEncodeError from the lowering
    _, compiler, _ = small
    with pytest.raises(xmask.InvalidStructuralTagError, match="lone surrogate") as e:
        compiler.compile_structural_tag({"type": "structural_tag", "format": fmt})
    assert e.value.path == where


def test_deeply_nested_const_compiles_under_the_default_limits(small):
    # A const nested 6,000 levels deep was rebuilt level by level (quadratic: 110 s, then a
    # limit error under the default 60 s deadline); now it is one flat sequence.
    _, compiler, _ = small
    value = "\x00"
    for _ in range(3000):
        value = {"allOf": [value]}
    compiled = compiler.compile_json_schema({"const": value}, any_whitespace=False)
    m = xmask.GrammarMatcher(compiled)
    text = '{"allOf": [' * 3000 + '"\\u0000"' + "]}" * 3000
    assert m.accept_string(text) and m.is_completed()


@pytest.mark.parametrize("count", [2 ** 62, 2 ** 63, 2 ** 64, np.uint64(2 ** 64 - 1)])
def test_rollback_of_a_huge_count_raises_invalid_token_error(small, count):
    # was OverflowError from the C conversion (found by the matcher fuzz after the limits merge)
    _, _, json_grammar = small
    m = xmask.GrammarMatcher(json_grammar)
    assert m.accept_string("[")
    with pytest.raises(xmask.InvalidTokenError):
        m.rollback(count)
    with pytest.raises(xmask.InvalidTokenError):
        xmask.BatchGrammarMatcher.batch_rollback([m], count)
    assert m.num_accepted_tokens == 1


NULLABLE_IN_REPEAT = 'root ::= "" | [a-z] ("" root){10000}'


def test_classifying_nullable_calls_in_a_big_repeat_is_bounded(small):
    info, _, _ = small
    # memory: the step budget (64 MB / 64 = 1M closure items) stops the step, not the 3 GB cap
    compiler = xmask.GrammarCompiler(info, cache_enabled=False, limits=xmask.CompileLimits(
        max_compile_memory_bytes=64 << 20))
    m = xmask.GrammarMatcher(compiler.compile_grammar(NULLABLE_IN_REPEAT))
    bm = np.zeros((1, (info.vocab_size + 31) // 32), np.int32)
    with pytest.raises(xmask.GrammarLimitError, match="closure items in one parse step"):
        m.fill_next_token_bitmask(bm)
    # time: the deadline is read inside the step too
    compiler = xmask.GrammarCompiler(info, cache_enabled=False, limits=xmask.CompileLimits(
        max_compile_seconds=0.3))
    m = xmask.GrammarMatcher(compiler.compile_grammar(NULLABLE_IN_REPEAT))
    with pytest.raises(xmask.GrammarLimitError, match="deadline .* inside one parse step"):
        m.fill_next_token_bitmask(bm)


def test_one_accept_step_of_nullable_calls_is_bounded_by_the_work_cap():
    info = xmask.TokenizerInfo([])
    compiled = xmask.GrammarCompiler(info).compile_grammar(NULLABLE_IN_REPEAT)
    m = xmask.GrammarMatcher(compiled, limits=xmask.RuntimeLimits(max_work_per_call=100_000))
    assert m.accept_string("a")
    # the second byte's step meets ~10^8 (state, parent) pairs: abandoned at the cap
    assert not m.accept_string("b")
    assert m.limit_error.limit == "max_work_per_call"
    assert m._debug_call_work() <= 100_000 + 10_000  # (a step's few nodes and tops on top)
    m.rollback(1)
    assert m.limit_error is None and m.is_completed()


def test_schema_enum_with_a_huge_literal_ends_in_time(small):
    # (before the fix: minutes in make_seq, past any deadline; no clock here, a hang would
    # show as the test run's timeout)
    info, _, _ = small
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    big = {"enum": [{"0": {"enum": [f"v{i}" for i in range(120_000)]}, "length": 1}]}
    with pytest.raises(xmask.GrammarLimitError, match="max_automaton_states"):
        compiler.compile_json_schema(big, any_whitespace=False)
    schema = {"enum": [{"0": [f"v{i}" for i in range(20_000)], "length": 1}]}
    m = xmask.GrammarMatcher(compiler.compile_json_schema(schema, any_whitespace=False))
    assert m.accept_string('{"0": ["v0", "v1", ') and not m.accept_string('"v0"')
    assert m.accept_string('"v2"')
