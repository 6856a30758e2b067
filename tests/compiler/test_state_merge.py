"""States no token can tell apart share one classification walk, exactly (issue 10).

``token_equivalent_states`` (C kernel ``compiler/_state_merge.pyx``, GIL released) merges the
states of one rule with the same flags and calls whose behaviour agrees on every input up to the
longest token; the return states of non-nullable calls count as behaviour (refinement columns),
so a long bounded string -- one state per character position, each calling the shared character
tail and returning to the next position -- merges its positions far from the bound.  The warm-up
walks one state per block and one (state, return state) pair per class of such pairs, and
shares the entries.

Checked here: the kernel equals its pure-Python twin on real grammars and random automata (for
short horizons too, where the rounds stop before the partition is stable); every merged state's
shared entry equals the entry of a walk from that state itself; masks of warmed-up grammars
equal lazily built ones and the slow reference at every token boundary of documents with
multi-byte characters and escapes (where the pair entries are read), on Llama-3 and Qwen2.5;
and a warm-up's walks do not grow with ``maxLength``.
"""

import json
import random
import types

import numpy as np
import pytest

from lazy_walks import GBNF_FILES, MASKBENCH_SAMPLE, compile_case, tok, walk_modes

from xmask.compiler.mask_cache import (
    new_mask_cache, precompute_mask_cache, token_equivalent_states,
    token_equivalent_states_reference, top_states)

pytest.importorskip("tokenizers")


def _string(lo=0, hi=None):
    bounds = {"minLength": lo, "maxLength": hi}
    return {"type": "string", **{k: v for k, v in bounds.items() if v}}


def _object(*fields):
    return {"type": "object", "properties": {f"k{i}": f for i, f in enumerate(fields)},
            "required": [f"k{i}" for i in range(len(fields))]}


SCHEMAS = {
    "str64": _string(0, 64),
    "str255": _string(0, 255),
    "str1000": _string(0, 1000),
    "str3000": _string(0, 3000),
    "min300max1000": _string(300, 1000),
    "min70max100": _string(70, 100),
    "obj": _object(_string(0, 255), {"type": "integer"}, _string(10, 1000),
                   {"type": "array", "items": _string(0, 80)}),
}


@pytest.fixture(scope="module")
def llama3():
    return tok("llama3")


def _compiled(t, schema, **kw):
    # the whole grammar's automaton (a two-part compile holds its first part until needed)
    return t.compiler(**kw).compile_json_schema(schema)._resolved()


# -- the C kernel and its Python twin -------------------------------------------------------

TWIN_CASES = ["builtin-json"] + [f"gbnf-{g}" for g in GBNF_FILES] + [
    f"mb-{f[:-5]}" for f in MASKBENCH_SAMPLE]


@pytest.mark.parametrize("case", TWIN_CASES + [f"schema-{k}" for k in SCHEMAS])
def test_kernel_equals_python_twin_on_grammars(llama3, case):
    if case.startswith("schema-"):
        automaton = _compiled(llama3, SCHEMAS[case[7:]])._automaton
    else:
        automaton = compile_case(llama3.compiler(), case)._automaton
    for horizon in (0, 1, 3, 129):
        got = token_equivalent_states(automaton, horizon)
        want = token_equivalent_states_reference(automaton, horizon)
        assert got.dtype == np.int32 and np.array_equal(got, want), (case, horizon)
    rep = token_equivalent_states(automaton, 129)
    assert (rep <= np.arange(automaton.n_states)).all() and (rep[rep] == rep).all()
    assert (automaton.state_rule[rep] == automaton.state_rule).all()


def _random_automaton(rng: random.Random):
    n = rng.randint(1, 40)
    nc = rng.randint(1, 4)
    n_rules = rng.randint(1, 3)
    rule = np.array([rng.randrange(n_rules) for _ in range(n)], dtype=np.int32)
    # few distinct targets, so that states often agree
    pool = [-1] + [rng.randrange(n) for _ in range(3)]
    trans = np.array([rng.choice(pool) if rng.random() < 0.8 else rng.randrange(-1, n)
                      for _ in range(n * nc)], dtype=np.int32)
    counts = [rng.choice([0, 0, 1, 1, 2]) for _ in range(n)]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    targets = [rng.choice([0, min(1, n - 1)]) for _ in range(offsets[-1])]
    rets = [rng.choice([-1] + pool[1:]) for _ in range(offsets[-1])]
    token_set = np.array([rng.choice([-1] * 9 + [0, 1]) for _ in range(n)], dtype=np.int32)
    return types.SimpleNamespace(
        n_states=n, n_classes=nc, state_rule=rule, trans=trans,
        flags=np.array([rng.choice([0, 1, 2, 3, 2, 3, 4, 10]) for _ in range(n)], dtype=np.uint8),
        call_offsets=offsets, call_target=np.array(targets, dtype=np.int32),
        call_ret=np.array(rets, dtype=np.int32),
        nullable=np.array([rng.random() < 0.3 for _ in range(n)]),
        token_set_of=token_set, token_target=np.where(token_set >= 0, 0, -1).astype(np.int32))


def test_kernel_equals_python_twin_on_random_automata():
    rng = random.Random(10)
    merged = 0
    for _ in range(400):
        a = _random_automaton(rng)
        for horizon in (0, 1, 2, 5, 50):
            got = token_equivalent_states(a, horizon)
            assert np.array_equal(got, token_equivalent_states_reference(a, horizon))
        merged += int((got != np.arange(a.n_states)).sum())
    assert merged > 100  # the random automata do have states to merge


def test_kernel_rejects_inconsistent_arrays():
    a = _random_automaton(random.Random(1))
    a.call_offsets = a.call_offsets[:-1]
    with pytest.raises(ValueError):
        token_equivalent_states(a, 5)


# -- exactness of the shared entries ---------------------------------------------------------

def _entries(cache, states):
    x = cache.export()
    out = {}
    for s in states:
        k = int(x["state_entry"][s])
        assert k >= 0, s
        o, n, uo, un = (int(x[f][k]) for f in ("entry_off", "entry_len", "unc_off", "unc_len"))
        out[s] = (int(x["entry_kind"][k]), x["data"][o:o + n].tobytes(),
                  x["unc"][uo:uo + un].tobytes(), int(x["entry_accepted"][k]),
                  int(x["entry_rejected"][k]))
    return out


@pytest.mark.parametrize("name", ["str1000", "min300max1000", "obj"])
def test_a_merged_state_classifies_as_its_own_walk(llama3, name):
    compiled = _compiled(llama3, SCHEMAS[name])
    a, at, vt = compiled._automaton, compiled._automaton_tables, compiled._vocab_tables
    tops = top_states(a)
    rep = token_equivalent_states(a, int(vt.max_token_len) + 1)
    merged = tops[rep[tops] != tops]
    assert len(merged) > 0.4 * len(tops)
    shared = new_mask_cache(a)
    precompute_mask_cache(shared, a, at, vt, max_threads=2)
    # a sample of the merged states (every one near the bounds), each walked by itself
    sample = np.unique(np.concatenate([merged[::40], merged[-12:], merged[:12]])).astype(np.int32)
    own = new_mask_cache(a)
    own.precompute(at, vt, sample, 2)
    assert _entries(shared, sample) == _entries(own, sample)


# -- masks: warmed-up grammars against lazy ones and the reference ---------------------------

PIECES = ["the", " quick", "\n", '"', "\\", "/", "\t", "é", "ß", "中文", "😀", "𝔘", " naïve", "Ω"]


def _text(n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        out.extend(rng.choice(PIECES))
    return "".join(out[:n])


MASK_CASES = [  # (tokenizer, schema, characters, ensure_ascii)
    ("llama3", "str64", 64, False), ("llama3", "str255", 250, True),
    ("llama3", "str1000", 1000, False), ("llama3", "str3000", 3000, False),
    ("llama3", "min70max100", 100, True), ("llama3", "obj", 120, False),
    ("qwen2.5", "str255", 255, False), ("qwen2.5", "str1000", 998, True),
    ("qwen2.5", "min300max1000", 320, False),
]


@pytest.mark.parametrize("tokenizer,name,n,ascii_only", MASK_CASES)
def test_warmed_up_masks_equal_lazy_and_reference(tokenizer, name, n, ascii_only):
    t = tok(tokenizer)
    schema = SCHEMAS[name]
    text = _text(n, n)
    if name == "obj":
        doc = json.dumps({"k0": text[:60], "k1": -12, "k2": text[:30], "k3": [text[:20], "x"]},
                         ensure_ascii=ascii_only)
    else:
        doc = json.dumps(text, ensure_ascii=ascii_only)
    compiled = {"eager": _compiled(t, schema, precompute=True), "lazy": _compiled(t, schema),
                "precomputed": _compiled(t, schema).precompute(max_threads=2)}
    before = {}
    for mode in ("eager", "precomputed"):
        assert compiled[mode].cache_summary()["pending"] == 0
        before[mode] = compiled[mode].cache_summary(), _without_pairs(compiled[mode])
    # every step: eager == lazy == precomputed; the reference every 60th step and at the ends
    checked = walk_modes(t, compiled, t.encode(doc), f"[{tokenizer} {name}]", every=60)
    assert checked > 5
    # the warm-up left no state to the fills (pairs mid-character: test_precompute_helpers;
    # the overlays of states with many uncertain tokens are the fills' own: test_pair_entries)
    for mode in ("eager", "precomputed"):
        assert (compiled[mode].cache_summary(), _without_pairs(compiled[mode])) == before[mode]


def _without_pairs(compiled):
    parts = compiled._mask_cache.memory_parts()
    parts.pop("pair_entries", None)
    return parts


def test_warm_up_walks_do_not_grow_with_max_length(llama3):
    totals = {}
    for n in (1000, 10_000):
        compiled = _compiled(llama3, _string(0, n))
        seen = []
        compiled.precompute(max_threads=2, progress=lambda done, total: seen.append(total))
        totals[n] = seen[-1]
        summary = compiled.cache_summary()
        assert summary["pending"] == 0
        assert compiled._mask_cache.memory_parts()["pair_entries"] > 0  # pairs warmed up too
    assert totals[1000] == totals[10_000] < 1000 * 20 // 4, totals
