"""GrammarMatcher semantics: accepting, rollback, termination, special tokens, jump-forward, threads.

Every mask the tests look at is compared with the slow reference
(``_reference_fill_next_token_bitmask``: every token tried on the byte-level parser, no cache),
and specific bits are decoded by hand (bit ``i % 32`` of word ``i // 32``).
"""

import random
import threading

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json

import xmask
from xmask.grammar.ir import Bytes, RuleRef, Seq
from xmask import Grammar

# ------------------------------------------------------------------------------------- helpers


def bit(bm, token_id, row=0):
    """Bit of ``token_id`` in row ``row``, decoded by hand."""
    return (int(bm[row, token_id // 32]) >> (token_id % 32)) & 1


def mask_ids(bm, vocab_size, row=0):
    bits = np.unpackbits(np.ascontiguousarray(bm[row]).view(np.uint8), bitorder="little")
    return set(np.nonzero(bits[:vocab_size])[0].tolist())


def fill(matcher, vocab_size):
    bm = np.asarray(xmask.allocate_token_bitmask(1, vocab_size))
    assert matcher.fill_next_token_bitmask(bm) is True
    return bm


def fill_checked(matcher, vocab_size):
    """Fast mask, asserted equal to the reference mask (full arrays)."""
    bm = fill(matcher, vocab_size)
    ref = np.full_like(bm, 0x5A5A5A5A)
    matcher._reference_fill_next_token_bitmask(ref)
    np.testing.assert_array_equal(bm, ref)
    return bm


class Tok:
    """A TokenizerInfo, its tokenizers.Tokenizer, a compiler and the builtin JSON grammar."""

    def __init__(self, info, tokenizer):
        self.info = info
        self.tokenizer = tokenizer
        self.vocab_size = info.vocab_size
        self.compiler = xmask.GrammarCompiler(info)
        self.json = self.compiler.compile_builtin_json_grammar()

    def encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def text_of(self, ids):
        return b"".join(self.info.decoded_vocab[i] for i in ids)


@pytest.fixture(scope="module")
def dflt():
    return Tok(xmask.default_tokenizer_info(), xmask.default_tokenizer())


@pytest.fixture(scope="module")
def llama3():
    path = str(tokenizer_json("llama3"))
    return Tok(xmask.TokenizerInfo.from_huggingface(path), tokenizers.Tokenizer.from_file(path))


@pytest.fixture(scope="module")
def llama2():
    path = str(tokenizer_json("llama2"))
    return Tok(xmask.TokenizerInfo.from_huggingface(path), tokenizers.Tokenizer.from_file(path))


@pytest.fixture(scope="module")
def qwen():
    path = str(tokenizer_json("qwen2.5"))
    info = xmask.TokenizerInfo.from_huggingface(path, vocab_size=151936)
    return Tok(info, tokenizers.Tokenizer.from_file(path))


DOC1 = '{"name": "caf\u00e9 \u4f60\u597d", "list": [1, -2.5e3, true, null, {"x": "a\\"b\\n"}], "e": {}}'
# `}]` after an empty string inside an array: XGrammar 0.2.8 wrongly leaves it out of the mask
DOC2 = '[{"b": ""}, {"a": [{"b": ""}], "c": 1}]'
DOC3 = '{\n  "k": [\n    0.5,\n    "\\u00fc\\/"\n  ]\n}'


# -------------------------------------------------------------------------- accept_token


@pytest.mark.parametrize("doc", [DOC1, DOC2, DOC3])
def test_accept_token_walks_valid_json_and_masks_match_reference(llama3, doc):
    ids = llama3.encode(doc)
    assert llama3.text_of(ids) == doc.encode()
    m = xmask.GrammarMatcher(llama3.json)
    for i, tid in enumerate(ids):
        bm = fill_checked(m, llama3.vocab_size)
        assert bit(bm, tid) == 1, (i, tid)
        for stop in llama3.info.stop_token_ids:
            assert bit(bm, stop) == 0  # the document is not complete yet
        assert m.accept_token(tid) is True
        assert m.num_accepted_tokens == i + 1
    bm = fill_checked(m, llama3.vocab_size)
    # builtin JSON allows no trailing whitespace: only the stop tokens remain
    assert mask_ids(bm, llama3.vocab_size) == set(llama3.info.stop_token_ids)
    assert not m.is_terminated()


def test_rejected_token_leaves_state_unchanged(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"a": 1')
    before = fill_checked(m, llama3.vocab_size)
    n = m.num_accepted_tokens
    for bad_text in ["]", ":", "{", '"a', " x"]:
        (bad,) = llama3.encode(bad_text)
        assert bit(before, bad) == 0, bad_text
        assert m.accept_token(bad) is False, bad_text
        assert m.num_accepted_tokens == n
        np.testing.assert_array_equal(fill(m, llama3.vocab_size), before)
    # the document can still be finished token by token
    for tid in llama3.encode(', "b": [true]}'):
        assert m.accept_token(tid) is True
    assert mask_ids(fill_checked(m, llama3.vocab_size), llama3.vocab_size) == set(
        llama3.info.stop_token_ids
    )


def test_token_that_fails_midway_is_fully_undone(dflt):
    g = dflt.compiler.compile_grammar('root ::= "abcd" | "abx"')
    m = xmask.GrammarMatcher(g)
    start = fill_checked(m, dflt.vocab_size)
    # "abc" then "e": the first three bytes match a path, the last does not
    assert m.accept_string("abce") is False
    np.testing.assert_array_equal(fill(m, dflt.vocab_size), start)
    assert m.num_accepted_tokens == 0
    assert m.accept_string("abx") is True
    assert m.accept_token(dflt.info.stop_token_ids[0]) is True


# -------------------------------------------------------------------------- accept_string


def test_accept_string_arbitrary_splits_reach_the_same_state(llama3):
    ids = llama3.encode(DOC1)
    ref = xmask.GrammarMatcher(llama3.json)
    for tid in ids[:-1]:
        assert ref.accept_token(tid)
    target = fill(ref, llama3.vocab_size)
    data = DOC1.encode()
    prefix = llama3.text_of(ids[:-1])
    rng = random.Random(7)
    for trial in range(6):
        cuts = sorted(rng.sample(range(1, len(prefix)), 12))
        pieces = [prefix[a:b] for a, b in zip([0] + cuts, cuts + [len(prefix)])]
        m = xmask.GrammarMatcher(llama3.json)
        for p in pieces:
            assert m.accept_string(p) is True, (trial, p)
        assert m.num_accepted_tokens == len(pieces)
        np.testing.assert_array_equal(fill(m, llama3.vocab_size), target)
    # byte by byte, including inside every multi-byte character
    m = xmask.GrammarMatcher(llama3.json)
    for i in range(len(data)):
        assert m.accept_string(data[i : i + 1]) is True, i
    assert m.num_accepted_tokens == len(data)
    assert mask_ids(fill(m, llama3.vocab_size), llama3.vocab_size) == set(llama3.info.stop_token_ids)


def test_accept_string_mid_utf8_character(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"')
    assert m.accept_string(b"\xe4\xbd") is True  # first two bytes of U+4F60
    bm = fill_checked(m, llama3.vocab_size)
    allowed = mask_ids(bm, llama3.vocab_size)
    assert allowed
    for tid in allowed:  # only tokens starting with one continuation byte
        tok = llama3.info.decoded_vocab[tid]
        assert 0x80 <= tok[0] <= 0xBF, (tid, tok)
    (ni,) = [t for t in range(llama3.vocab_size) if llama3.info.decoded_vocab[t] == b"\xa0"]
    assert bit(bm, ni) == 1
    assert m.accept_string(b"\xa0") is True
    assert m.accept_string('": 1}') is True
    assert mask_ids(fill(m, llama3.vocab_size), llama3.vocab_size) == set(llama3.info.stop_token_ids)


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xa0", b"\xe4\xbd!"],
)
def test_accept_string_rejects_invalid_utf8(llama3, bad):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"')
    before = fill(m, llama3.vocab_size)
    assert m.accept_string(bad) is False
    assert m.num_accepted_tokens == 1
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), before)


def test_accept_string_all_or_nothing_and_rollback_steps(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"a": 1')
    after_a1 = fill(m, llama3.vocab_size)
    assert m.accept_string(', ]') is False
    assert m.num_accepted_tokens == 1
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), after_a1)
    assert m.accept_string(', "b": 2}') is True
    assert m.num_accepted_tokens == 2
    m.rollback(1)
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), after_a1)

    # one step per accept_string, including ''
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"a"') is True
    after_a = fill(m, llama3.vocab_size)
    assert m.accept_string(": 1") is True
    assert m.accept_string("") is True
    assert m.num_accepted_tokens == 3
    m.rollback(1)  # undoes only ''
    assert m.num_accepted_tokens == 2
    m.rollback(1)  # undoes ": 1"
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), after_a)

    # mixed tokens and strings
    m = xmask.GrammarMatcher(llama3.json)
    start = fill(m, llama3.vocab_size)
    (brace,) = llama3.encode("{")
    assert m.accept_token(brace)
    assert m.accept_string('"a": 1')
    with pytest.raises(ValueError):
        m.rollback(3)
    assert m.num_accepted_tokens == 2
    m.rollback(2)
    assert m.num_accepted_tokens == 0
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), start)


def test_accept_string_types(dflt):
    g = dflt.compiler.compile_grammar('root ::= "ab" "c"')
    for piece in ["ab", b"ab", bytearray(b"ab"), memoryview(b"ab")]:
        m = xmask.GrammarMatcher(g)
        assert m.accept_string(piece) is True
        assert m.find_jump_forward_string() == "c"
    m = xmask.GrammarMatcher(g)
    with pytest.raises(TypeError):
        m.accept_string(97)
    assert m.num_accepted_tokens == 0


def test_stop_token_text_via_accept_string_is_literal(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string("{}")
    assert m.accept_string("<|eot_id|>") is False
    assert not m.is_terminated()
    assert m.accept_token(128009) is True


# -------------------------------------------------------------------------- rollback / reset


def test_rollback_then_reaccept_gives_identical_masks(llama3):
    ids = llama3.encode(DOC1)
    m = xmask.GrammarMatcher(llama3.json)
    masks = [fill(m, llama3.vocab_size)]
    for tid in ids:
        assert m.accept_token(tid)
        masks.append(fill(m, llama3.vocab_size))
    n = len(ids)
    for k in [1, 2, 3, 7, n // 2, n]:
        m.rollback(k)
        assert m.num_accepted_tokens == n - k
        np.testing.assert_array_equal(fill(m, llama3.vocab_size), masks[n - k])
        for j in range(n - k, n):
            assert m.accept_token(ids[j])
            np.testing.assert_array_equal(fill(m, llama3.vocab_size), masks[j + 1])
    # step back one at a time, all the way to the start
    for j in range(n, 0, -1):
        m.rollback(1)
        np.testing.assert_array_equal(fill(m, llama3.vocab_size), masks[j - 1])
    with pytest.raises(ValueError):
        m.rollback(1)
    m.rollback(0)  # no-op
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), masks[0])


def test_rollback_bad_counts(dflt):
    m = xmask.GrammarMatcher(dflt.json)
    assert m.accept_string("[1")
    assert m.accept_string(",2")
    before = fill(m, dflt.vocab_size)
    for bad in [3, -1]:
        with pytest.raises(ValueError):
            m.rollback(bad)
        assert m.num_accepted_tokens == 2
        np.testing.assert_array_equal(fill(m, dflt.vocab_size), before)


def test_max_rollback_tokens_keeps_recent_history(dflt):
    # XGrammar 0.2.8 ignores the limit (with a DeprecationWarning); xmask honours it without a
    # warning, dropping history in chunks (tests/runtime/test_memory.py), so a server that
    # rolls back a little more than it said (vLLM: num_speculative_tokens) still works.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = xmask.GrammarMatcher(dflt.json, max_rollback_tokens=2)
    assert m.max_rollback_tokens == 2
    for s in ["[", "1", ",", "2"]:
        assert m.accept_string(s)
    m.rollback(3)
    assert m.num_accepted_tokens == 1
    unlimited = xmask.GrammarMatcher(dflt.json)
    for s in ["["] * 300:
        assert unlimited.accept_string(s)
    unlimited.rollback(300)
    assert unlimited.num_accepted_tokens == 0


def test_rollback_across_stop_token_unterminates(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    ids = llama3.encode('{"a": [1]}')
    for tid in ids:
        assert m.accept_token(tid)
    final = fill(m, llama3.vocab_size)
    n = m.num_accepted_tokens
    assert m.accept_token(128009) is True
    assert m.is_terminated()
    assert m.num_accepted_tokens == n + 1
    m.rollback(1)
    assert not m.is_terminated()
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), final)
    assert m.accept_token(128001) is True
    m.rollback(2)  # the stop token and the last token
    assert not m.is_terminated()
    assert m.num_accepted_tokens == n - 1
    assert m.accept_token(ids[-1])
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), final)


def test_reset_returns_to_initial_mask(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    initial = fill_checked(m, llama3.vocab_size)
    for tid in llama3.encode('{"a": [1, 2'):
        assert m.accept_token(tid)
    assert not np.array_equal(fill(m, llama3.vocab_size), initial)
    m.reset()
    assert m.num_accepted_tokens == 0
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), initial)
    assert m.accept_string('{"a": 1}') and m.accept_token(128009)
    assert m.is_terminated()
    m.reset()
    assert not m.is_terminated()
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), initial)
    with pytest.raises(ValueError):
        m.rollback(1)


def test_many_matchers_from_one_compiled_grammar_are_independent(llama3):
    docs = [DOC1, DOC2, DOC3, '{"a": 1}', "[]"]
    seqs = [llama3.encode(d) for d in docs]
    expected = []
    for seq in seqs:
        solo = xmask.GrammarMatcher(llama3.json)
        row = [fill(solo, llama3.vocab_size)]
        for tid in seq:
            assert solo.accept_token(tid)
            row.append(fill(solo, llama3.vocab_size))
        expected.append(row)
    matchers = [xmask.GrammarMatcher(llama3.json) for _ in docs]
    pos = [0] * len(docs)
    rng = random.Random(3)
    bm = xmask.allocate_token_bitmask(len(docs), llama3.vocab_size)
    while any(p < len(s) for p, s in zip(pos, seqs)):
        k = rng.randrange(len(docs))
        if pos[k] == len(seqs[k]):
            continue
        assert matchers[k].accept_token(seqs[k][pos[k]])
        pos[k] += 1
        for j, mj in enumerate(matchers):  # every matcher, into its own row of one batch
            mj.fill_next_token_bitmask(bm, j)
        for j in range(len(docs)):
            np.testing.assert_array_equal(bm[j], expected[j][pos[j]][0])


# -------------------------------------------------------------------------- termination


def test_stop_tokens_only_where_grammar_can_end(llama3):
    stops = llama3.info.stop_token_ids
    assert stops == [128001, 128008, 128009]
    m = xmask.GrammarMatcher(llama3.json)
    for prefix, can_end in [("", False), ('{"a": 1', False), ("}", True)]:
        assert m.accept_string(prefix)
        bm = fill_checked(m, llama3.vocab_size)
        for s in stops:
            assert bit(bm, s) == int(can_end), (prefix, s)
    assert mask_ids(bm, llama3.vocab_size) == set(stops)
    # a number at the root can end and can go on: digits and stops together
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string("12")
    bm = fill_checked(m, llama3.vocab_size)
    assert all(bit(bm, s) for s in stops)
    assert bit(bm, llama3.encode("3")[0]) == 1


def test_accepting_stop_token_terminates(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"a": 1}')
    assert not m.is_terminated()
    before = fill(m, llama3.vocab_size)
    assert m.accept_token(128009) is True
    assert m.is_terminated()
    bm = np.full_like(before, 12345)
    with pytest.raises(xmask.XmaskError):
        m.fill_next_token_bitmask(bm)
    assert (bm == 12345).all()  # untouched
    (space,) = llama3.encode(" ")
    assert m.accept_token(space) is False
    assert m.accept_token(128009) is False
    assert m.accept_token(128001) is False
    assert m.accept_string(" ") is False
    assert m.accept_string("") is False
    assert m.is_terminated()
    assert m.num_accepted_tokens == 2
    m.rollback(1)
    assert not m.is_terminated()
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), before)


def test_stop_token_rejected_where_grammar_cannot_end(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_token(128009) is False  # empty input is not JSON
    assert m.accept_string('{"a": ')
    for stop in llama3.info.stop_token_ids:
        assert m.accept_token(stop) is False
    assert not m.is_terminated()
    assert m.num_accepted_tokens == 1
    # non-stop special ids are never accepted, even where the grammar can end
    assert m.accept_string("1}")
    assert m.accept_token(128000) is False
    assert m.accept_token(128002) is False
    assert not m.is_terminated()


def test_override_stop_tokens(llama3):
    m = xmask.GrammarMatcher(llama3.json, override_stop_tokens=[128001])
    assert m.stop_token_ids == [128001]
    assert m.accept_string('{"a": 1}')
    bm = fill_checked(m, llama3.vocab_size)
    assert mask_ids(bm, llama3.vocab_size) == {128001}
    assert m.accept_token(128009) is False
    assert m.accept_token(128001) is True
    assert m.is_terminated()
    # a single int works too
    m = xmask.GrammarMatcher(llama3.json, override_stop_tokens=128008)
    assert m.stop_token_ids == [128008]
    assert m.accept_string("[]")
    assert mask_ids(fill(m, llama3.vocab_size), llama3.vocab_size) == {128008}


def test_override_stop_token_that_is_a_normal_token(dflt):
    # an ordinary text token used as the stop token: allowed only where the grammar can end
    (x_id,) = dflt.encode("x")
    g = dflt.compiler.compile_grammar('root ::= "x"* "y"')
    m = xmask.GrammarMatcher(g, override_stop_tokens=[x_id])
    bm = fill_checked(m, dflt.vocab_size)
    assert bit(bm, x_id) == 0
    assert m.accept_token(x_id) is False
    assert m.accept_string("xxy")
    bm = fill_checked(m, dflt.vocab_size)
    assert mask_ids(bm, dflt.vocab_size) == {x_id}
    assert m.accept_token(x_id) is True
    assert m.is_terminated()


def test_terminate_without_stop_token_digits(dflt):
    g = dflt.compiler.compile_grammar("root ::= [0-9]+")
    stop = dflt.info.stop_token_ids[0]
    m = xmask.GrammarMatcher(g, terminate_without_stop_token=True)
    assert not m.is_terminated()
    bm = fill_checked(m, dflt.vocab_size)
    assert bit(bm, stop) == 0
    assert m.accept_string("12") is True
    assert m.is_terminated()
    bm = fill_checked(m, dflt.vocab_size)
    digits = {t for t in range(dflt.vocab_size)
              if dflt.info.decoded_vocab[t] and dflt.info.decoded_vocab[t].isdigit()}
    assert mask_ids(bm, dflt.vocab_size) == digits | {stop}
    # the stop token is shown but never consumed; more digits still are
    assert m.accept_token(stop) is False
    assert m.is_terminated()
    assert m.num_accepted_tokens == 1
    assert m.accept_string("3") is True
    assert m.is_terminated()
    np.testing.assert_array_equal(fill(m, dflt.vocab_size), bm)
    # default mode: completeness is not termination
    m2 = xmask.GrammarMatcher(g)
    assert m2.accept_string("12")
    assert not m2.is_terminated()
    np.testing.assert_array_equal(fill(m2, dflt.vocab_size), bm)


def test_terminate_without_stop_token_alternatives(dflt):
    stop = dflt.info.stop_token_ids[0]
    g = dflt.compiler.compile_grammar('root ::= "a" | "ab"')
    m = xmask.GrammarMatcher(g, terminate_without_stop_token=True)
    assert m.accept_string("a") and m.is_terminated()
    assert m.accept_string("b") and m.is_terminated()
    assert mask_ids(fill_checked(m, dflt.vocab_size), dflt.vocab_size) == {stop}
    assert m.accept_token(stop) is False
    m.rollback(1)
    assert m.is_terminated()  # still complete after "a"
    g = dflt.compiler.compile_grammar('root ::= "x"')
    m = xmask.GrammarMatcher(g, terminate_without_stop_token=True)
    assert m.accept_string("x") and m.is_terminated()
    m.rollback(1)
    assert not m.is_terminated()


# -------------------------------------------------------------------------- special / padding / byte tokens


def test_special_tokens_never_allowed_llama3(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string('{"')
    bm = fill_checked(m, llama3.vocab_size)
    assert bit(bm, 128000) == 0  # <|begin_of_text|>
    assert all(bit(bm, t) == 0 for t in range(128000, 128256))
    assert bit(bm, llama3.encode("hello")[0]) == 1
    assert len(mask_ids(bm, llama3.vocab_size)) > 100000
    assert m.accept_token(128000) is False
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), bm)
    # the literal text of the special token is fine as string content
    assert m.accept_string("<|begin_of_text|>") is True
    assert m.accept_string('": 1}')


def test_padding_ids_never_allowed_qwen(qwen):
    assert qwen.vocab_size == 151936
    padding = range(151665, 151936)
    assert all(qwen.info.decoded_vocab[t] == b"" for t in padding)
    ids = qwen.encode(DOC1)
    m = xmask.GrammarMatcher(qwen.json)
    for i, tid in enumerate(ids + [None]):
        bm = np.full(xmask.get_bitmask_shape(1, qwen.vocab_size), -1, dtype=np.int32)
        m.fill_next_token_bitmask(bm)
        allowed = mask_ids(bm, qwen.vocab_size)
        assert not allowed & set(padding), i
        # special added tokens (stop tokens aside)
        assert not allowed & (set(range(151643, 151657)) - {151643, 151645}), i
        if i in (0, 5, len(ids)):
            ref = np.zeros_like(bm)
            m._reference_fill_next_token_bitmask(ref)
            np.testing.assert_array_equal(bm, ref)
        if tid is not None:
            assert m.accept_token(tid)
    assert allowed == {151643, 151645}
    for pad in [151665, 151700, 151935]:
        assert m.accept_token(pad) is False


def test_llama2_byte_fallback_and_space_tokens(llama2):
    info = llama2.info
    assert info.vocab_type == xmask.VocabType.BYTE_FALLBACK
    doc = '{\n  "a": "x\\ny \U0001d11e \u00e9",\n  "b": [1, 2]\n}'
    ids = llama2.encode(doc)
    # sentencepiece prepends a space: "▁{" decodes to b" {"
    assert llama2.text_of(ids) == b" " + doc.encode()
    assert info.decoded_vocab[ids[0]] == b" {"
    assert info.decoded_vocab[13] == b"\n"  # <0x0A>
    assert 13 in ids
    assert info.decoded_vocab[29871] == b" "  # ▁
    byte_ids = [3 + b for b in "\U0001d11e".encode()]  # <0xF0> <0x9D> <0x84> <0x9E>
    k = ids.index(byte_ids[0])
    assert ids[k : k + 4] == byte_ids
    # JSON after the tokenizer's leading space
    rules = Grammar.builtin_json_grammar().rules
    rules["space_root"] = Seq((Bytes(b" "), RuleRef("root")))
    g = llama2.compiler.compile_grammar(Grammar(rules, root="space_root"))
    m = xmask.GrammarMatcher(g)
    for i, tid in enumerate(ids):
        bm = fill_checked(m, llama2.vocab_size)
        assert bit(bm, tid) == 1, i
        assert bit(bm, 1) == 0 and bit(bm, 0) == 0  # <s>, <unk>
        # inside the 4-byte character only <0xNN> continuation bytes (after F0: 90..BF)
        if i == k + 1:
            assert mask_ids(bm, llama2.vocab_size) == set(range(3 + 0x90, 3 + 0xC0))
        if i in (k + 2, k + 3):
            assert mask_ids(bm, llama2.vocab_size) == set(range(3 + 0x80, 3 + 0xC0))
        assert m.accept_token(tid), i
    assert mask_ids(fill_checked(m, llama2.vocab_size), llama2.vocab_size) == {2}
    assert m.accept_token(2) and m.is_terminated()


# -------------------------------------------------------------------------- jump-forward


@pytest.mark.parametrize(
    "grammar, prefix, expected",
    [
        ('root ::= "hello world" | "hello there"', "", "hello "),
        ('root ::= "hello world" | "hello there"', "hello t", "here"),
        ('root ::= "hello world" | "hello there"', "hello there", ""),
        ('root ::= "abc" [0-9] "def"', "", "abc"),
        ('root ::= "abc" [0-9] "def"', "abc5", "def"),
        ('root ::= "x" root | "y"', "", ""),
        ('root ::= "abc" | "abcd"', "", "abc"),
        ('root ::= "abc" | "abcd"', "abc", ""),  # can end here
        ('root ::= "ab" "\u4f60" | "ab" "\u4f62"', "", "ab"),  # no partial character
        ('root ::= "\u4f60\u597d" | "\u4f60\u4eec"', "", "\u4f60"),
        ('root ::= "ab" "\u4f60" "!"', "", "ab\u4f60!"),
        ('root ::= "ab" "\u4f60" "!"', b"ab\xe4", ""),  # the rest of a character is not text
    ],
)
def test_find_jump_forward_string(dflt, grammar, prefix, expected):
    g = dflt.compiler.compile_grammar(grammar)
    m = xmask.GrammarMatcher(g)
    assert m.accept_string(prefix)
    before = fill(m, dflt.vocab_size)
    n = m.num_accepted_tokens
    got = m.find_jump_forward_string()
    assert got == expected
    assert m.find_jump_forward_string() == expected
    assert m.num_accepted_tokens == n
    np.testing.assert_array_equal(fill(m, dflt.vocab_size), before)
    if got:
        assert m.accept_string(got)


@pytest.mark.parametrize(
    "prefix, expected",
    [("", ""), ("{", ""), ('{"a": t', "rue"), ('{"a": tr', "ue"), ('{"a": n', "ull"),
     ('{"a": f', "alse"), ('{"a": 1}', ""), ("[1", ""), ('{"a": "x\\u', "")],
)
def test_find_jump_forward_string_json(llama3, prefix, expected):
    m = xmask.GrammarMatcher(llama3.json)
    assert m.accept_string(prefix)
    before = fill(m, llama3.vocab_size)
    assert m.find_jump_forward_string() == expected
    np.testing.assert_array_equal(fill(m, llama3.vocab_size), before)
    assert m.num_accepted_tokens == 1


def test_find_jump_forward_partial_char_after_jump(dflt):
    # the forced bytes end inside a character: the partial character is dropped, but
    # accepting what was returned leaves the rest of the character forced
    g = dflt.compiler.compile_grammar('root ::= "ab" "\u4f60" | "ab" "\u4f62"')
    m = xmask.GrammarMatcher(g)
    assert m.find_jump_forward_string() == "ab"
    assert m.accept_string("ab")
    assert m.find_jump_forward_string() == ""
    assert m.accept_string(b"\xe4\xbd")
    assert m.find_jump_forward_string() == ""
    bm = fill_checked(m, dflt.vocab_size)
    allowed = {dflt.info.decoded_vocab[t] for t in mask_ids(bm, dflt.vocab_size)}
    assert allowed == {b"\xa0", b"\xa2"}


# -------------------------------------------------------------------------- random walks

AMBIGUOUS = [
    'root ::= ("a" | "ab" | "abc")* "x"',
    'root ::= item+\nitem ::= "ab" | "a" "b" | [a-c]+ " "',
    'root ::= x | y\nx ::= "{" [a-z]* "}"\ny ::= "{" [a-e]* "]"',
    'root ::= "[" (v ("," " "? v)*)? "]"\nv ::= [0-9]+ | "\\"" [^"]* "\\"" | root',
    'root ::= s s\ns ::= "" | "a" s | "b"',
    'root ::= e\ne ::= t ("+" t)*\nt ::= f ("*" f)*\nf ::= [0-9]+ | "(" e ")"',
    'root ::= "\\u00e9"+ | [\\u4e00-\\u9fff]+ "x" | [^a-z]{2,5}',
]


@pytest.mark.parametrize("grammar", AMBIGUOUS)
def test_random_walks_fast_mask_equals_reference(dflt, grammar):
    # ambiguous grammars keep several stack tops alive (the merged uncertain-token path)
    g = dflt.compiler.compile_grammar(grammar)
    rng = random.Random(grammar)
    stop = dflt.info.stop_token_ids[0]
    for _ in range(12):
        m = xmask.GrammarMatcher(g)
        for _ in range(30):
            bm = fill_checked(m, dflt.vocab_size)
            allowed = sorted(mask_ids(bm, dflt.vocab_size))
            if not allowed:
                break
            # a token outside the mask is rejected
            banned = rng.randrange(dflt.vocab_size)
            if banned not in allowed:
                assert m.accept_token(banned) is False
            tid = rng.choice(allowed)
            assert m.accept_token(tid) is True
            if tid == stop:
                assert m.is_terminated()
                break


def test_random_walks_json_llama3(llama3):
    rng = random.Random(11)
    for start in ['{"k": [', '[{"x": "']:
        m = xmask.GrammarMatcher(llama3.json)
        assert m.accept_string(start)
        for _ in range(8):
            bm = fill_checked(m, llama3.vocab_size)
            allowed = sorted(mask_ids(bm, llama3.vocab_size))
            # prefer structural tokens so the walk leaves strings now and then
            short = [t for t in allowed if len(llama3.info.decoded_vocab[t]) <= 2]
            tid = rng.choice(short or allowed)
            assert m.accept_token(tid) is True
            if m.is_terminated():
                break


# -------------------------------------------------------------------------- threads


def test_fill_in_two_threads_matches_single_thread(llama3):
    seqs = [llama3.encode(DOC1), llama3.encode(DOC2)]

    def walk(seq, out):
        m = xmask.GrammarMatcher(llama3.json)
        bm = np.asarray(xmask.allocate_token_bitmask(1, llama3.vocab_size))
        for _ in range(4):
            m.reset()
            masks = []
            for tid in seq:
                m.fill_next_token_bitmask(bm)
                masks.append(bm.copy())
                assert m.accept_token(tid)
            m.fill_next_token_bitmask(bm)
            masks.append(bm.copy())
            out.append(masks)

    expected = []
    for seq in seqs:
        out = []
        walk(seq, out)
        expected.append(out[0])
    results = [[], []]
    errors = []

    def run(k):
        try:
            walk(seqs[k], results[k])
        except Exception as exc:  # noqa: BLE001 -- surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        assert len(results[k]) == 4
        for rep in results[k]:
            assert len(rep) == len(expected[k])
            for a, b in zip(rep, expected[k]):
                np.testing.assert_array_equal(a, b)


# -------------------------------------------------------------------------- XGrammar divergences


def test_accept_token_numpy_integer(llama3):
    m = xmask.GrammarMatcher(llama3.json)
    (brace,) = llama3.encode("{")
    assert m.accept_token(np.int64(brace)) is True
    assert m.accept_token(np.int32(llama3.encode('"')[0])) is True


def test_override_stop_tokens_numpy(llama3):
    m = xmask.GrammarMatcher(llama3.json, override_stop_tokens=np.array([128001]))
    assert m.stop_token_ids == [128001]
    assert m.accept_string("[]")
    assert m.accept_token(128001) is True
