"""xmask.testing: XGrammar's test helpers under the same names, checked against plain loops and,
where XGrammar is installed, against XGrammar's own helpers on the same inputs."""

import numpy as np
import pytest

import xmask
from xmask import testing


def random_bitmask(rng, batch, vocab):
    shape = xmask.get_bitmask_shape(batch, vocab)
    return rng.integers(-(2**31), 2**31, size=shape, dtype=np.int64).astype(np.int32)


def loop_allowed(bm, row, vocab):
    return [(int(bm[row, i // 32]) >> (i % 32)) & 1 == 1 for i in range(vocab)]


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 100, 1000])
def test_bool_mask_and_bitmask_round_trip_numpy(vocab):
    rng = np.random.default_rng(vocab)
    bool_mask = rng.random((3, vocab)) < 0.5
    bm = testing.bool_mask_to_bitmask(bool_mask)
    assert isinstance(bm, np.ndarray) and bm.dtype == np.int32
    assert bm.shape == xmask.get_bitmask_shape(3, vocab)
    for row in range(3):
        assert loop_allowed(bm, row, vocab) == bool_mask[row].tolist()
        pad = loop_allowed(bm, row, bm.shape[1] * 32)[vocab:]
        assert all(pad)  # padding bits allowed, as XGrammar
    back = testing.bitmask_to_bool_mask(bm, vocab)
    np.testing.assert_array_equal(back, bool_mask)
    assert testing.bitmask_to_bool_mask(bm).shape == (3, bm.shape[1] * 32)


def test_masked_tokens_and_single_token_numpy():
    rng = np.random.default_rng(1)
    bm = random_bitmask(rng, 2, 300)
    for row in range(2):
        expected = [i for i, ok in enumerate(loop_allowed(bm, row, 300)) if not ok]
        assert testing._get_masked_tokens_from_bitmask(bm, 300, row) == expected
        assert testing._get_masked_tokens_from_bitmask(bm, 10, row) == [i for i in expected if i < 10]
    single = np.zeros((2, 10), np.int32)
    single[1, 7] = 1 << 5
    assert testing._is_single_token_bitmask(single, 320, 1) == (True, 7 * 32 + 5)
    assert testing._is_single_token_bitmask(single, 320, 0) == (False, -1)
    assert testing._is_single_token_bitmask(single, 7 * 32 + 5, 1) == (False, -1)  # past vocab
    single[1, 0] = 1
    assert testing._is_single_token_bitmask(single, 320, 1) == (False, -1)


def test_bitmask_helpers_match_xgrammar():
    torch = pytest.importorskip("torch")
    xgr = pytest.importorskip("xgrammar")
    rng = np.random.default_rng(2)
    for vocab in (5, 64, 129, 1000):
        bool_mask = torch.from_numpy(rng.random((2, vocab)) < 0.3)
        ours = testing.bool_mask_to_bitmask(bool_mask)
        theirs = xgr.testing.bool_mask_to_bitmask(bool_mask)
        assert ours.dtype == torch.int32 and torch.equal(ours, theirs)
        assert torch.equal(testing.bitmask_to_bool_mask(ours, vocab),
                           xgr.testing.bitmask_to_bool_mask(theirs, vocab))
        assert torch.equal(testing.bitmask_to_bool_mask(ours),
                           xgr.testing.bitmask_to_bool_mask(theirs))
        bm = torch.from_numpy(random_bitmask(rng, 2, vocab))
        for row in range(2):
            assert (testing._get_masked_tokens_from_bitmask(bm, vocab, row)
                    == xgr.testing._get_masked_tokens_from_bitmask(bm, vocab, row))
        one = torch.zeros(2, (vocab + 31) // 32, dtype=torch.int32)
        k = (vocab - 1) % 32
        one[1, (vocab - 1) // 32] = (1 << k) - (1 << 32 if k == 31 else 0)  # as int32
        for row in range(2):
            assert (testing._is_single_token_bitmask(one, vocab, row)
                    == xgr.testing._is_single_token_bitmask(one, vocab, row))


def test_helpers_on_a_real_matcher_mask():
    info = xmask.default_tokenizer_info()
    m = testing._get_matcher_from_grammar_and_tokenizer_info('root ::= "yes" | "no"', info)
    bm = xmask.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    rejected = set(testing._get_masked_tokens_from_bitmask(bm, info.vocab_size))
    prefixes = (b"y", b"ye", b"yes", b"n", b"no")
    allowed = {t for t in range(info.vocab_size) if info.decoded_vocab[t] in prefixes}
    assert allowed and rejected == set(range(info.vocab_size)) - allowed
    bool_mask = testing.bitmask_to_bool_mask(bm, info.vocab_size)
    assert set(np.flatnonzero(np.asarray(bool_mask[0])).tolist()) == allowed
    assert m.accept_string("yes")
    m.fill_next_token_bitmask(bm)  # only the stop token(s) now
    if len(info.stop_token_ids) == 1:
        assert testing._is_single_token_bitmask(bm, info.vocab_size) == (True, info.stop_token_ids[0])


@pytest.mark.parametrize(
    "grammar, text, kwargs, expected",
    [
        ('root ::= "a"+', "aaa", {}, True),
        ('root ::= "a"+', "aab", {}, False),
        ('root ::= "a" "b"', "a", {}, False),
        ('root ::= "a" "b"', "a", {"require_termination": False}, True),
        ('root ::= [0-9]+ ("." [0-9]+)?', "3.14", {}, True),
        ('root ::= "é"', "é".encode("utf-8"), {}, True),
    ],
)
def test_is_grammar_accept_string(grammar, text, kwargs, expected):
    assert testing._is_grammar_accept_string(grammar, text, **kwargs) is expected
    assert testing._is_grammar_accept_string(xmask.Grammar.from_ebnf(grammar), text, **kwargs) is expected
    if not kwargs:  # the reference recognizer agrees
        assert testing.is_grammar_accept_string(grammar, text) is expected


def test_is_grammar_accept_string_prints(capsys):
    assert testing._is_grammar_accept_string('root ::= "a"', "a", debug_print=True, print_time=True)
    out = capsys.readouterr().out
    assert "result: True" in out and "terminated: True" in out


def test_get_matcher_from_grammar():
    m = testing._get_matcher_from_grammar('root ::= "ab" | "abc"')
    assert m.accept_string("ab") and m.is_terminated()  # terminate_without_stop_token
    assert m.accept_string("c") and m.is_terminated()
    m2 = testing._get_matcher_from_grammar_and_tokenizer_info('root ::= "x"')
    assert m2.accept_string("x") and not m2.is_terminated()  # needs a stop token by default


def test_schema_and_regex_to_ebnf():
    text = testing._json_schema_to_ebnf({"type": "boolean"}, any_whitespace=False)
    assert text == 'root ::= "true" | "false"'
    obj = testing._json_schema_to_ebnf(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        any_whitespace=False,
    )
    assert testing.is_grammar_accept_string(obj, '{"a": 12}')
    assert not testing.is_grammar_accept_string(obj, '{"a": "x"}')
    assert testing._regex_to_ebnf("ab?") == 'root ::= "a" "b"?'
    assert testing._regex_to_ebnf("ab?", with_rule_name=False) == '"a" "b"?'
    assert testing.is_grammar_accept_string(testing._regex_to_ebnf("[a-c]{2}"), "ca")
    with pytest.raises(ValueError, match="json_format"):
        testing._json_schema_to_ebnf({"type": "boolean"}, json_format="qwen_xml")


def test_bitmask_helper_errors():
    bm = np.zeros((2, 2), np.int32)
    with pytest.raises(xmask.BitmaskError, match="int32"):
        testing._get_masked_tokens_from_bitmask(bm.astype(np.int64), 64)
    with pytest.raises(xmask.BitmaskError, match="index 2"):
        testing._get_masked_tokens_from_bitmask(bm, 64, 2)
    with pytest.raises(xmask.BitmaskError, match="exceeds"):
        testing._is_single_token_bitmask(bm, 65)
    with pytest.raises(xmask.BitmaskError, match="exceeds"):
        testing.bitmask_to_bool_mask(bm, 65)
    with pytest.raises(xmask.BitmaskError, match="2-D"):
        testing.bool_mask_to_bitmask(np.ones(5, bool))
    with pytest.raises(xmask.BitmaskError, match="list"):
        testing.bitmask_to_bool_mask([[0]])
