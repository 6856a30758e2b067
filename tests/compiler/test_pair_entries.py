"""Pair entries of states with many uncertain tokens are exact (issue 10, steady-state masks).

A state whose own cache entry leaves at least ``pair_min_unc`` tokens uncertain (a string's
closing quote and what follows it: the caller decides) is classified, on top of the stack over a
plain frame, with that frame too: only the own entry's uncertain tokens are walked from the two
frames, and later fills use that (state, return state) entry.  Masks must not change: on
Llama-3, Qwen2.5 (padded) and Llama-2, the built-in JSON grammar, GBNF grammars and MaskBench
schemas give bit-identical masks with pairs off, on for every state (threshold 0), at the
default threshold and in eager mode (the warm-up classifies the states, fills the overlays),
and equal the slow reference; overlays survive serialization.
"""

import base64
import contextlib
import json

import numpy as np
import pytest

from lazy_walks import case_docs, compile_case, tok, walk_modes

pytest.importorskip("tokenizers")

import xmask  # noqa: E402
from xmask.runtime import _mask_cache  # noqa: E402
from xmask.serialization.format import dump_document  # noqa: E402

DEFAULT = _mask_cache.set_pair_min_uncertain(-1)
_mask_cache.set_pair_min_uncertain(DEFAULT)

COMBOS = ([("llama3", c) for c in ("builtin-json", "gbnf-json", "gbnf-c", "mb-Github_easy---o13111",
                                    "mb-Github_medium---o27154", "mb-Kubernetes---kb_18_Normalized",
                                    "mb-Glaiveai2K---search_jobs_3eee6557")]
          + [("qwen2.5", c) for c in ("builtin-json", "mb-Github_hard---o74005")]
          + [("llama2", c) for c in ("builtin-json", "mb-Github_medium---o27154")])


@contextlib.contextmanager
def pair_threshold(n):
    old = _mask_cache.set_pair_min_uncertain(n)
    try:
        yield
    finally:
        _mask_cache.set_pair_min_uncertain(old)


def compiled_with(t, case, threshold, **kw):
    with pair_threshold(threshold):  # (a cache reads the threshold when it is built)
        return compile_case(t.compiler(**kw), case)._resolved()  # (the whole grammar too)


def pair_bytes(compiled):
    return compiled._mask_cache.memory_parts().get("pair_entries", 0)


def test_the_default_pairs_states():
    assert DEFAULT >= 0


@pytest.mark.parametrize("tokenizer,case", COMBOS, ids=[f"{t}-{c}" for t, c in COMBOS])
def test_masks_are_the_same_with_and_without_pairs(tokenizer, case):
    t = tok(tokenizer)
    compiled = {
        "off": compiled_with(t, case, -1),
        "all": compiled_with(t, case, 0),
        "default": compiled_with(t, case, DEFAULT),
        "eager-all": compiled_with(t, case, 0, precompute=True),
    }
    base_pairs = pair_bytes(compiled["off"])  # (a long bounded string's many-caller pairs)
    checked = 0
    for i, doc in enumerate(case_docs(case)):
        checked += walk_modes(t, compiled, t.encode(doc), f"[{tokenizer} {case} doc {i}]", every=4)
    assert checked > 5
    # pairs were made where allowed, and never with the threshold off
    assert pair_bytes(compiled["all"]) > base_pairs
    assert pair_bytes(compiled["off"]) == base_pairs
    assert pair_bytes(compiled["eager-all"]) > 0


def test_pairs_leave_fewer_tokens_to_check_and_stay_classified():
    """Along JSON documents (strings in nested objects and arrays: the string rule is called
    from many places), fills with pairs check fewer uncertain tokens (``_debug_fill_cost``:
    the fill's estimated work), allow the same tokens, and a second walk classifies nothing."""
    t = tok("llama3")
    c_off, c_on = compiled_with(t, "builtin-json", -1), compiled_with(t, "builtin-json", 0)
    cost = {"off": 0, "on": 0}
    lower = 0
    bm = t.bitmask(2)
    for doc in case_docs("builtin-json"):
        m_off, m_on = xmask.GrammarMatcher(c_off), xmask.GrammarMatcher(c_on)
        for tid in t.encode(doc):
            m_off.fill_next_token_bitmask(bm, 0)
            m_on.fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1])
            off, on = m_off._debug_fill_cost(), m_on._debug_fill_cost()
            cost["off"] += off
            cost["on"] += on
            lower += on < off
            assert m_off.accept_token(tid) and m_on.accept_token(tid)
    assert cost["on"] < 0.85 * cost["off"], cost
    assert lower >= 10
    assert pair_bytes(c_on) > 0 and pair_bytes(c_off) == 0
    before = c_on._mask_cache.memory_parts()
    for doc in case_docs("builtin-json"):
        m = xmask.GrammarMatcher(c_on)
        for tid in t.encode(doc):
            m.fill_next_token_bitmask(bm, 0)
            assert m.accept_token(tid)
    assert c_on._mask_cache.memory_parts() == before


def test_a_warm_up_leaves_the_overlays_to_the_fills():
    """The warm-up classifies every state; the overlays (one walk of a state's uncertain
    tokens per frame, what one fill's check of them costs) are made by the fills that meet
    them: they classify no state, the masks equal a lazy grammar's."""
    t = tok("llama3")
    case = "builtin-json"
    warm = compiled_with(t, case, DEFAULT, precompute=True)
    lazy = compiled_with(t, case, DEFAULT)
    summary = warm.cache_summary()
    assert summary["pending"] == 0
    before = warm._mask_cache.memory_parts()
    assert before.get("pair_entries", 0) == 0
    bm = t.bitmask(2)
    for doc in case_docs(case):
        m, ref = xmask.GrammarMatcher(warm), xmask.GrammarMatcher(lazy)
        for tid in t.encode(doc):
            m.fill_next_token_bitmask(bm, 0)
            ref.fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1])
            assert m.accept_token(tid) and ref.accept_token(tid)
    assert warm.cache_summary() == summary  # no state classified by a fill
    after = warm._mask_cache.memory_parts()
    assert after.pop("pair_entries") > 0
    assert after == before


def test_pairs_survive_serialization_and_bad_pairs_are_refused():
    t = tok("llama3")
    case = "builtin-json"
    warm = compiled_with(t, case, DEFAULT, precompute=True)
    ids = t.encode(case_docs(case)[0])
    m = xmask.GrammarMatcher(warm)
    for tid in ids:  # (the fills make the overlays)
        m.fill_next_token_bitmask(t.bitmask(1))
        assert m.accept_token(tid)
    exported = warm._mask_cache.export()
    assert len(exported["pair_state"]) > 0
    text = warm.serialize_json()
    clone = xmask.CompiledGrammar.deserialize_json(text, t.info)
    again = clone._mask_cache.export()
    for k in exported:
        np.testing.assert_array_equal(exported[k], again[k], err_msg=k)
    assert clone.memory_size_bytes == warm.memory_size_bytes
    before = clone._mask_cache.memory_parts()
    m, ref = xmask.GrammarMatcher(clone), xmask.GrammarMatcher(warm)
    bm = t.bitmask(2)
    for tid in ids:
        m.fill_next_token_bitmask(bm, 0)
        ref.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1])
        assert m.accept_token(tid) and ref.accept_token(tid)
    assert clone._mask_cache.memory_parts() == before  # the pairs came along: nothing to walk

    # crafted pair data (valid checksum) is refused, naming the field
    def crafted(name, change):
        doc = json.loads(text)
        field = doc["body"]["mask_cache"][name]
        arr = np.frombuffer(base64.b64decode(field["b64"]), dtype=np.dtype(field["dtype"])).copy()
        arr = change(arr)
        field["b64"] = base64.b64encode(arr.astype(field["dtype"]).tobytes()).decode()
        field["shape"] = list(arr.shape)
        return dump_document(doc["kind"], doc["body"])

    def first(value):
        def change(a):
            a[0] = value
            return a
        return change

    for name, change, what in [("pair_slot", first(10**6), "pair_slot"),
                               ("pair_slot", first(-1), "pair_slot"),
                               ("pair_entry", first(10**6), "pair_entry"),
                               ("pair_state", first(10**7), "pair_state"),
                               ("pair_state", lambda a: a[:-1], "pair_slot"),
                               ("pair_state", lambda a: np.full_like(a, a[0]), "pair_slot")]:
        with pytest.raises(xmask.DeserializeFormatError, match=what):
            xmask.CompiledGrammar.deserialize_json(crafted(name, change), t.info)
