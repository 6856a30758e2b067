"""A compiled grammar's automaton and token-mask cache <-> JSON, validated.

What is stored is what the runtime and introspection read: the automaton's flat tables
(``byte_class``, ``trans``, ``flags``, calls), the rule names and per-state rule ids (for
``cache_stats()``), the per-rule FOLLOW sets, return contexts and nullable flags (a loaded
grammar keeps classifying states lazily), and the entries classified so far.  Compile-time
scratch (per-state FIRST sets, raw call lists) is not kept: nothing reads it after compiling.

Loading never trusts the data: besides the envelope checksum, every index the C runtime will
follow is range-checked here (transition targets, call targets are rule starts, cache offsets
lie inside their arrays, token ids inside the vocabulary, entry sizes agree with their kinds)
and left recursion, which would make the runtime's stack grow without bound,
is rejected, so a crafted file with a matching checksum still cannot crash or hang a matcher.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
    >>> a = automaton_from_body(automaton_to_body(cg._automaton), "automaton")
    >>> a.n_states == cg._automaton.n_states
    True
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .._graph import strongly_connected_components
from ..compiler.automaton import FLAG_FINAL, FLAG_HAS_BYTES, FLAG_TOKEN, Automaton
from ..compiler.mask_cache import KIND_NAMES
from .fields import encode_array, get_array, get_field, get_int, get_list
from .format import format_error

__all__ = [
    "automaton_from_body",
    "automaton_to_body",
    "mask_cache_from_body",
    "mask_cache_to_body",
]

_I4, _I8, _U1 = "<i4", "<i8", "|u1"
_AUTOMATON_ARRAYS = {  # name -> (dtype, ndim)
    "rule_start": (_I4, 1), "state_rule": (_I4, 1), "byte_class": (_U1, 1), "trans": (_I4, 1),
    "flags": (_U1, 1), "call_offsets": (_I4, 1), "call_target": (_I4, 1),
    "call_ret": (_I4, 1), "nullable": (_U1, 1), "rule_follow": (_U1, 2),
    "rule_ctx_follow": (_U1, 2), "rule_ctx_offsets": (_I8, 1), "rule_ctx_flat": (_I4, 1),
    "token_set_of": (_I4, 1), "token_target": (_I4, 1), "token_bits": ("<u4", 2),
}
_CACHE_ARRAYS = {
    "state_entry": _I4, "entry_kind": _U1, "entry_off": _I8, "entry_len": _I8, "unc_off": _I8,
    "unc_len": _I8, "data": _I4, "unc": _I4, "entry_accepted": _I8, "entry_rejected": _I8,
}
# (state, return state) pair entries (MaskCache.export): absent in documents of caches without
# them, so older documents read as before
_PAIR_ARRAYS = {"pair_state": _I4, "pair_slot": _I4, "pair_entry": _I4}


# ---------------------------------------------------------------------------------- automaton


def automaton_to_body(automaton) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "rule_names": list(automaton.rule_names),
        "n_states": int(automaton.n_states),
        "n_classes": int(automaton.n_classes),
    }
    flat_ctx = {"rule_ctx_offsets": automaton.rule_ctx_offsets,
                "rule_ctx_flat": automaton.rule_ctx_flat}
    for name in _AUTOMATON_ARRAYS:
        value = flat_ctx[name] if name in flat_ctx else getattr(automaton, name)
        if name == "nullable":
            value = np.asarray(value, dtype=np.uint8)
        body[name] = encode_array(value)
    budget = getattr(automaton, "rule_budget", None)
    if budget is not None and (np.asarray(budget) >= 0).any():  # optional: runtime token budgets
        body["rule_budget"] = encode_array(np.asarray(budget, dtype=np.int32))
    return body


def _check_range(a: np.ndarray, lo: int, hi: int, where: str) -> None:
    """Every value of ``a`` in ``[lo, hi)``."""
    if a.size and (int(a.min()) < lo or int(a.max()) >= hi):
        bad = a[(a < lo) | (a >= hi)][0]
        raise format_error(where, f"value {int(bad)} outside [{lo}, {hi})")


def _check_len(a: np.ndarray, n: int, where: str) -> None:
    if a.shape[0] != n:
        raise format_error(where, f"has {a.shape[0]} entries, expected {n}")


def _check_no_left_recursion(arr: Dict[str, np.ndarray], n_states: int, names: List[str],
                             where: str) -> None:
    """Reject a rule that reaches itself without reading a byte: the runtime's closure would
    push frames forever.  (The compiler rejects such grammars; this re-checks the tables.)"""
    flags = arr["flags"]
    offsets = arr["call_offsets"].tolist()
    target = arr["call_target"].tolist()
    ret = arr["call_ret"].tolist()
    rule_start = arr["rule_start"].tolist()
    rule_of_start = {s: r for r, s in enumerate(rule_start)}
    callers = np.nonzero(np.diff(arr["call_offsets"]) > 0)[0].tolist()
    nullable = ((flags & FLAG_FINAL) != 0).tolist()
    changed = True
    while changed:
        changed = False
        for s in callers:
            if not nullable[s]:
                for k in range(offsets[s], offsets[s + 1]):
                    if nullable[target[k]] and (ret[k] < 0 or nullable[ret[k]]):
                        nullable[s] = changed = True
                        break
    edges: List[List[int]] = []
    for start in rule_start:
        out, seen, todo = set(), {start}, [start]
        while todo:
            s = todo.pop()
            for k in range(offsets[s], offsets[s + 1]):
                out.add(rule_of_start[target[k]])
                r = ret[k]
                if nullable[target[k]] and r >= 0 and r not in seen:
                    seen.add(r)
                    todo.append(r)
        edges.append(sorted(out))
    for comp in strongly_connected_components(range(len(rule_start)), edges.__getitem__):
        if len(comp) > 1 or comp[0] in edges[comp[0]]:
            raise format_error(where, "left recursion through rule(s) "
                               + ", ".join(repr(names[r]) for r in comp))


def _check_token_edges(arr: Dict[str, np.ndarray], n_states: int, n_classes: int, w: str) -> None:
    """Token edges: exactly the FLAG_TOKEN states have one, to a valid state, from a token set
    that exists, and such a state reads no byte (its token set's width is checked against the
    vocabulary with the mask cache)."""
    set_of, target = arr["token_set_of"], arr["token_target"]
    _check_len(set_of, n_states, w + "token_set_of")
    _check_len(target, n_states, w + "token_target")
    _check_range(set_of, -1, arr["token_bits"].shape[0], w + "token_set_of")
    has = set_of >= 0
    if ((arr["flags"] & FLAG_TOKEN) != 0).tolist() != has.tolist():
        raise format_error(w + "token_set_of", "token edges and FLAG_TOKEN states differ")
    _check_range(target[has], 0, n_states, w + "token_target")
    if (target[~has] != -1).any():
        raise format_error(w + "token_target", "a state without a token edge has a target")
    if has.any() and (arr["trans"].reshape(n_states, n_classes)[has] >= 0).any():
        raise format_error(w + "trans", "a token-edge state also reads bytes")


def automaton_from_body(body: Any, where: str) -> Automaton:
    """Rebuild and validate an :class:`~xmask.compiler.automaton.Automaton`."""
    names = get_list(body, "rule_names", where)
    if not names or not all(isinstance(n, str) for n in names):
        raise format_error(f"{where}.rule_names", "expected a non-empty list of strings")
    n_states = get_int(body, "n_states", where, minimum=1, maximum=2**31 - 2)
    n_classes = get_int(body, "n_classes", where, minimum=1, maximum=256)
    arr = {name: get_array(body, name, where, dt, nd) for name, (dt, nd) in _AUTOMATON_ARRAYS.items()}
    n_rules = len(names)
    w = where + "."
    _check_len(arr["rule_start"], n_rules, w + "rule_start")
    _check_range(arr["rule_start"], 0, n_states, w + "rule_start")
    if len(set(arr["rule_start"].tolist())) != n_rules:
        raise format_error(w + "rule_start", "two rules start at the same state")
    _check_len(arr["state_rule"], n_states, w + "state_rule")
    _check_range(arr["state_rule"], 0, n_rules, w + "state_rule")
    _check_len(arr["byte_class"], 256, w + "byte_class")
    _check_range(arr["byte_class"], 0, n_classes, w + "byte_class")
    _check_len(arr["trans"], n_states * n_classes, w + "trans")
    _check_range(arr["trans"], -1, n_states, w + "trans")
    _check_len(arr["flags"], n_states, w + "flags")
    _check_range(arr["flags"], 0, 16, w + "flags")
    off = arr["call_offsets"]
    _check_len(off, n_states + 1, w + "call_offsets")
    n_calls = arr["call_target"].shape[0]
    if off[0] != 0 or off[-1] != n_calls or (np.diff(off) < 0).any():
        raise format_error(w + "call_offsets", f"not a non-decreasing range 0..{n_calls}")
    _check_len(arr["call_ret"], n_calls, w + "call_ret")
    _check_range(arr["call_ret"], -1, n_states, w + "call_ret")
    if n_calls and not np.isin(arr["call_target"], arr["rule_start"]).all():
        raise format_error(w + "call_target", "a call target is not the start of a rule")
    _check_len(arr["nullable"], n_states, w + "nullable")
    for name in ("rule_follow", "rule_ctx_follow"):
        if arr[name].shape != (n_rules, 256):
            raise format_error(w + name, f"shape {arr[name].shape}, expected ({n_rules}, 256)")
    ctx_off = arr.pop("rule_ctx_offsets")
    ctx_flat = arr.pop("rule_ctx_flat")
    _check_len(ctx_off, n_rules + 1, w + "rule_ctx_offsets")
    if ctx_off[0] != 0 or ctx_off[-1] != ctx_flat.shape[0] or (np.diff(ctx_off) < 0).any():
        raise format_error(w + "rule_ctx_offsets",
                           f"not a non-decreasing range 0..{ctx_flat.shape[0]}")
    _check_range(ctx_flat, 0, n_states, w + "rule_ctx_flat")
    arr["rule_ctx_offsets"] = ctx_off
    arr["rule_ctx_flat"] = ctx_flat
    _check_token_edges(arr, n_states, n_classes, w)
    _check_no_left_recursion(arr, n_states, names, where)
    if isinstance(body, dict) and "rule_budget" in body:
        budget = get_array(body, "rule_budget", where, _I4, 1)
        _check_len(budget, n_rules, w + "rule_budget")
        _check_range(budget, -1, 2**31 - 1, w + "rule_budget")
        if (budget == 0).any():
            raise format_error(w + "rule_budget", "a token budget of 0")
    else:
        budget = np.full(n_rules, -1, dtype=np.int32)
    arr["rule_budget"] = budget
    rule_start = arr.pop("rule_start")
    arr["nullable"] = arr["nullable"].astype(np.bool_)
    return Automaton(rule_names=list(names), root_start=int(rule_start[0]),
                     rule_start=rule_start, n_states=n_states, n_classes=n_classes, **arr)


# -------------------------------------------------------------------------------- mask cache


def mask_cache_to_body(arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """``MaskCache.export()`` arrays as JSON fields (the pair arrays only when there are pairs)."""
    body = {name: encode_array(np.asarray(arrays[name], dtype=dt))
            for name, dt in _CACHE_ARRAYS.items()}
    if len(arrays.get("pair_state", ())):
        body.update((name, encode_array(np.asarray(arrays[name], dtype=dt)))
                    for name, dt in _PAIR_ARRAYS.items())
    return body


def mask_cache_from_body(body: Any, where: str, automaton: Automaton,
                         vocab_tables) -> Dict[str, np.ndarray]:
    """Read and validate token-mask cache arrays for ``automaton`` over ``vocab_tables`` (for
    ``MaskCache.load``).  States without an entry (-1) are classified lazily after loading."""
    arr = {name: get_array(body, name, where, dt) for name, dt in _CACHE_ARRAYS.items()}
    w = where + "."
    vocab_size = int(vocab_tables.vocab_size)
    n_sorted = len(vocab_tables.arrays["sorted_ids"])
    n_words = (vocab_size + 31) // 32
    kind = arr["entry_kind"]
    n_entries = kind.shape[0]
    _check_len(arr["state_entry"], automaton.n_states, w + "state_entry")
    _check_range(arr["state_entry"], -1, n_entries, w + "state_entry")
    bits = automaton.token_bits
    if bits.shape[0] and bits.shape[1] != n_words:
        raise format_error(where.rsplit(".", 1)[0] + ".automaton.token_bits",
                           f"rows of {bits.shape[1]} words, expected {n_words}")
    if bits.shape[0] and vocab_size % 32:  # ids past the vocabulary never allowed
        last = bits[:, -1] & np.uint32((1 << (vocab_size % 32)) - 1)
        if (last != bits[:, -1]).any():
            raise format_error(where.rsplit(".", 1)[0] + ".automaton.token_bits",
                               f"a token set holds an id >= {vocab_size}")
    not_top = (automaton.flags & FLAG_HAS_BYTES) == 0
    if (arr["state_entry"][not_top] >= 0).any():
        raise format_error(w + "state_entry", "a state that cannot be a stack top has an entry")
    _check_range(kind, 0, len(KIND_NAMES), w + "entry_kind")
    for name in ("entry_off", "entry_len", "unc_off", "unc_len", "entry_accepted",
                 "entry_rejected"):
        _check_len(arr[name], n_entries, w + name)
        _check_range(arr[name], 0, 2**62, w + name)
    for lo, ln, data in (("entry_off", "entry_len", "data"), ("unc_off", "unc_len", "unc")):
        end = arr[lo] + arr[ln]
        if n_entries and int(end.max()) > arr[data].shape[0]:
            raise format_error(w + ln, f"an entry runs past the end of {data} "
                               f"({int(end.max())} > {arr[data].shape[0]})")
    if n_entries and int((arr["entry_accepted"] + arr["entry_rejected"] + arr["unc_len"]).max()) \
            > n_sorted:
        raise format_error(w + "entry_accepted", "an entry counts more tokens than the vocabulary")
    expected_len = np.where(kind == 0, arr["entry_accepted"],
                            np.where(kind == 1, arr["entry_rejected"], n_words))
    if (arr["entry_len"] != expected_len).any():
        raise format_error(w + "entry_len", "an entry's length does not match its kind "
                           f"(accepted / rejected count, or {n_words} bitset words)")
    is_bitset = kind == 2
    # token ids of accepted / rejected lists: mark their spans in data with a difference array
    span = np.zeros(arr["data"].shape[0] + 1, dtype=np.int64)
    lists = ~is_bitset
    np.add.at(span, arr["entry_off"][lists], 1)
    np.add.at(span, arr["entry_off"][lists] + arr["entry_len"][lists], -1)
    ids = arr["data"][np.cumsum(span[:-1]) > 0]
    _check_range(ids, 0, vocab_size, w + "data")
    _check_range(arr["unc"], 0, n_sorted, w + "unc")
    _read_pairs(body, where, automaton, n_entries, arr)
    return arr


def _read_pairs(body, where: str, automaton: Automaton, n_entries: int, arr: dict) -> None:
    # The optional (state, return state) pair arrays into `arr`, validated: top-capable states,
    # slots within the state's rule's return states, entries in range, each pair once.
    w = where + "."
    if not isinstance(body, dict) or not any(name in body for name in _PAIR_ARRAYS):
        return
    for name, dt in _PAIR_ARRAYS.items():
        arr[name] = get_array(body, name, where, dt)
    states, slots = arr["pair_state"], arr["pair_slot"]
    for name in ("pair_slot", "pair_entry"):
        _check_len(arr[name], states.shape[0], w + name)
    _check_range(states, 0, automaton.n_states, w + "pair_state")
    _check_range(arr["pair_entry"], 0, n_entries, w + "pair_entry")
    if ((automaton.flags[states] & FLAG_HAS_BYTES) == 0).any():
        raise format_error(w + "pair_state", "a state that cannot be a stack top has a pair entry")
    ctx_off = np.asarray(automaton.rule_ctx_offsets, dtype=np.int64)
    rule = np.asarray(automaton.state_rule, dtype=np.int64)[states]
    if ((slots < 0) | (slots >= ctx_off[rule + 1] - ctx_off[rule])).any():
        raise format_error(w + "pair_slot", "a pair's slot is not a return state of its rule")
    if len(np.unique(states.astype(np.int64) * (1 << 32) + slots)) != states.shape[0]:
        raise format_error(w + "pair_slot", "a (state, slot) pair is listed twice")
