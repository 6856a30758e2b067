"""A lazy fill reuses the entry of a state that classifies every token alike.

Before classifying a state, a fill checks it against the state its rule classified last
(runtime/_token_equivalence.pyx): equal flags, callees and live transitions for every string
up to the longest token, return states agreeing in turn.  Here the check is compared with a
pure-Python twin on real grammars, every pair it calls equivalent is classified apart and the
two entries must be identical, and a long bounded string's positions far from the bound are
found equivalent (those near it are not).  Masks along such strings are compared with the slow
reference in tests/compiler/test_bounded_string_masks.py.
"""

import json
import random

import numpy as np
import pytest
from conftest import require_data, tokenizer_json
from maskutil import cache_entries

import xmask
from xmask.compiler.mask_cache import new_mask_cache, top_states
from xmask.runtime._token_equivalence import states_token_equivalent

FLAG_FINAL, FLAG_TOKEN = 1, 8


def reference_equivalent(at, s, t, horizon):
    """The check by definition, without bounds (breadth-first over state pairs)."""
    A = at.arrays
    nc = len(A["trans"]) // len(A["flags"])
    trans, flags, co = A["trans"].reshape(-1, nc), A["flags"], A["call_offsets"]
    budget = A.get("call_budget")
    best, queue = {}, [(s, t, 0)]
    while queue:
        x, y, d = queue.pop()
        if x == y or d > horizon or best.get((x, y), horizon + 1) <= d:
            continue
        if x < 0 or y < 0:
            return False
        best[(x, y)] = d
        if flags[x] != flags[y] or flags[x] & FLAG_TOKEN:
            return False
        cx, cy = range(co[x], co[x + 1]), range(co[y], co[y + 1])
        if len(cx) != len(cy):
            return False
        for i, j in zip(cx, cy):
            tgt = A["call_target"][i]
            if tgt != A["call_target"][j] or (budget is not None and budget[i] != budget[j]):
                return False
            reads = not (flags[tgt] & FLAG_FINAL) and co[tgt + 1] == co[tgt]
            queue.append((A["call_ret"][i], A["call_ret"][j], d + int(reads)))
        if d < horizon:
            for tx, ty in zip(trans[x].tolist(), trans[y].tolist()):
                if (tx < 0) != (ty < 0):
                    return False
                if tx >= 0:
                    queue.append((tx, ty, d + 1))
    return True


@pytest.fixture(scope="module")
def compiler():
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    return xmask.GrammarCompiler(info, cache_enabled=False)


def _grammars(compiler):
    string = lambda **k: {"type": "object", "properties": {"s": {"type": "string", **k}},  # noqa: E731
                          "required": ["s"]}
    yield compiler.compile_json_schema(string(maxLength=300))
    yield compiler.compile_json_schema(string(maxLength=40, minLength=5))
    yield compiler.compile_json_schema(string(minLength=70))
    yield compiler.compile_builtin_json_grammar()
    yield compiler.compile_grammar('root ::= ("a" [0-9]){0,150} "b" | "c" [a-z]{2,200}')
    for name in ("Github_trivial---o75594.json", "Glaiveai2K---calculate_area_b4863a84.json"):
        schema = json.loads(require_data("maskbench", name).read_text())["schema"]
        yield compiler.compile_json_schema(schema, strict_mode=False)


def _whole(compiled):
    # a schema compiled in two parts holds only its first part until the whole is built
    # (compiler/lazy_schema.py); the check is about the whole grammar's states
    return compiled._resolved()


def _entry(compiled, state):
    # the state classified on its own (precompute walks it; no entry is shared)
    cache = new_mask_cache(compiled._automaton)
    cache.precompute(compiled._automaton_tables, compiled._vocab_tables,
                     np.array([state], dtype=np.int32))
    snap = cache.export()
    k = int(snap["state_entry"][state])
    lo, n = int(snap["entry_off"][k]), int(snap["entry_len"][k])
    ulo, un = int(snap["unc_off"][k]), int(snap["unc_len"][k])
    return int(snap["entry_kind"][k]), snap["data"][lo:lo + n].tobytes(), snap["unc"][ulo:ulo + un].tobytes()


def test_equivalent_states_have_identical_entries(compiler):
    rng = random.Random(3)
    horizon = compiler._vocab_tables.max_token_len + 1
    found = 0
    for compiled in map(_whole, _grammars(compiler)):
        a, at = compiled._automaton, compiled._automaton_tables
        tops = top_states(a).tolist()
        by_rule = {}
        for s in tops:
            by_rule.setdefault(int(a.state_rule[s]), []).append(s)
        pairs = []
        for states in by_rule.values():
            pairs += list(zip(states, states[1:]))
            pairs += [tuple(rng.sample(states, 2)) for _ in range(min(20, len(states) // 2))]
        for s, t in pairs[:400]:
            got = states_token_equivalent(at, s, t, horizon)
            assert got == reference_equivalent(at, s, t, horizon), (s, t)
            if got:
                found += 1
                if found % 7 == 1:  # (classifying is the slow part: a sample)
                    assert _entry(compiled, s) == _entry(compiled, t), (s, t)
    assert found > 100  # long strings' and repeats' positions far from their bound


def test_bounded_string_positions_far_from_the_bound_are_equivalent(compiler):
    compiled = compiler.compile_json_schema({"type": "string", "maxLength": 600})
    horizon = compiler._vocab_tables.max_token_len + 1  # Llama-3: 128 bytes and one
    matcher = xmask.GrammarMatcher(compiled)
    assert matcher.accept_string('"')
    tail = int(compiled._automaton.rule_start[compiled._automaton.rule_names.index("str_char_tail")])
    positions = []
    for _ in range(600):
        (pos,) = [t for t in matcher._debug_top_states() if t != tail]
        positions.append(pos)
        assert matcher.accept_string("x")
    at = compiled._automaton_tables
    same = [states_token_equivalent(at, positions[k], positions[k + 1], horizon)
            for k in range(599)]
    # a position with more than `horizon` characters of room reads like the next one; one
    # with less does not (a long enough token tells them apart)
    assert all(same[:600 - horizon - 1]) and not any(same[600 - horizon:])
    assert _entry(compiled, positions[10]) == _entry(compiled, positions[300])


def test_bad_states_are_refused(compiler):
    compiled = compiler.compile_json_schema({"type": "string", "maxLength": 100})
    n = compiled._automaton.n_states
    with pytest.raises(ValueError, match="out of range"):
        states_token_equivalent(compiled._automaton_tables, 0, n, 10)



@pytest.mark.parametrize("schema,text", [
    ({"type": "string", "maxLength": 300}, "the quick fox é 中文 \\n \\u00e9 " * 12),
    ({"type": "string", "minLength": 5, "maxLength": 40}, "lazy dog, \\t naïve 日本"),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 90},
                                       "b": {"type": "array", "maxItems": 60,
                                             "items": {"type": "integer"}}}},
     None),
])
def test_lazily_shared_and_derived_entries_equal_own_walks(compiler, schema, text):
    # a fill reuses an entry (all tokens agree) or derives one (tokens up to a length agree,
    # the longer ones walked): every entry equals the state's own classification
    compiled = compiler.compile_json_schema(schema)
    if text is None:
        doc = json.dumps({"a": "x" * 80 + "éé", "b": list(range(58))})
    else:
        doc = '"' + text[: schema["maxLength"] - 2] + '"'
    matcher = xmask.GrammarMatcher(compiled)
    bitmask = np.asarray(xmask.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size))
    for ch in doc:  # character by character: every position's state is met
        matcher.fill_next_token_bitmask(bitmask)
        assert matcher.accept_string(ch), ch
    entries = cache_entries(compiled)
    assert len(entries) > 20
    for s, e in entries.items():
        assert e == _entry(compiled, s), s
