"""A compiled grammar's automaton, token-mask cache and cache records <-> JSON, validated.

What is stored is what the runtime and introspection read: the automaton's flat tables
(``byte_class``, ``trans``, ``flags``, calls), the rule names and per-state rule ids (for
``cache_stats()``), the per-rule FOLLOW sets and nullable flags, the mask-cache arrays, and the
cache records as columns.  Compile-time scratch (per-state FIRST sets, raw call lists, return
contexts) is not kept: nothing reads it after compiling.

Loading never trusts the data: besides the envelope checksum, every index the C runtime will
follow is range-checked here (transition targets, call targets are rule starts, cache offsets
lie inside their arrays, token ids inside the vocabulary, every state that can be a stack top
has a cache entry) and left recursion, which would make the runtime's stack grow without bound,
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
from ..compiler.automaton import FLAG_FINAL, FLAG_HAS_BYTES, Automaton
from ..compiler.mask_cache import KIND_NAMES, StateCacheRecord
from ..runtime._tables import MaskCacheTables
from .fields import encode_array, get_array, get_field, get_int, get_list
from .format import format_error

__all__ = [
    "automaton_from_body",
    "automaton_to_body",
    "mask_cache_from_body",
    "mask_cache_to_body",
    "records_from_body",
    "records_to_body",
]

_I4, _I8, _U1 = "<i4", "<i8", "|u1"
_AUTOMATON_ARRAYS = {  # name -> (dtype, ndim)
    "rule_start": (_I4, 1), "state_rule": (_I4, 1), "byte_class": (_U1, 1), "trans": (_I4, 1),
    "flags": (_U1, 1), "call_offsets": (_I4, 1), "call_target": (_I4, 1),
    "call_ret": (_I4, 1), "nullable": (_U1, 1), "rule_follow": (_U1, 2),
    "rule_ctx_follow": (_U1, 2),
}
_CACHE_ARRAYS = {
    "state_entry": _I4, "entry_kind": _U1, "entry_off": _I8, "entry_len": _I8, "unc_off": _I8,
    "unc_len": _I8, "data": _I4, "unc": _I4,
}
_RECORD_COLUMNS = {
    "state": _I4, "accepted": _I8, "rejected": _I8, "uncertain": _I8, "storage": _U1,
    "bytes": _I8, "shared": _U1,
}


# ---------------------------------------------------------------------------------- automaton


def automaton_to_body(automaton) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "rule_names": list(automaton.rule_names),
        "n_states": int(automaton.n_states),
        "n_classes": int(automaton.n_classes),
    }
    for name in _AUTOMATON_ARRAYS:
        value = getattr(automaton, name)
        if name == "nullable":
            value = np.asarray(value, dtype=np.uint8)
        body[name] = encode_array(value)
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
    _check_range(arr["flags"], 0, 8, w + "flags")
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
    _check_no_left_recursion(arr, n_states, names, where)
    rule_start = arr.pop("rule_start")
    arr["nullable"] = arr["nullable"].astype(np.bool_)
    return Automaton(rule_names=list(names), root_start=int(rule_start[0]),
                     rule_start=rule_start, n_states=n_states, n_classes=n_classes, **arr)


# -------------------------------------------------------------------------------- mask cache


def mask_cache_to_body(tables: MaskCacheTables) -> Dict[str, Any]:
    return {name: encode_array(tables.arrays[name][: _stored_len(tables, name)])
            for name in _CACHE_ARRAYS}


def _stored_len(tables: MaskCacheTables, name: str) -> int:
    # the tables pad empty arrays to one element (a valid pointer); the real lengths follow
    # from the entry ranges, which is what we store
    a = tables.arrays
    if name == "data":
        return int((a["entry_off"] + a["entry_len"]).max(initial=0)) if len(a["entry_kind"]) else 0
    if name == "unc":
        return int((a["unc_off"] + a["unc_len"]).max(initial=0)) if len(a["entry_kind"]) else 0
    return len(a[name])


def mask_cache_from_body(body: Any, where: str, automaton: Automaton,
                         vocab_tables) -> MaskCacheTables:
    """Rebuild and validate the token-mask cache for ``automaton`` over ``vocab_tables``."""
    arr = {name: get_array(body, name, where, dt) for name, dt in _CACHE_ARRAYS.items()}
    w = where + "."
    vocab_size = int(vocab_tables.vocab_size)
    n_sorted = len(vocab_tables.arrays["sorted_ids"])
    n_words = (vocab_size + 31) // 32
    kind = arr["entry_kind"]
    n_entries = kind.shape[0]
    _check_len(arr["state_entry"], automaton.n_states, w + "state_entry")
    _check_range(arr["state_entry"], -1, n_entries, w + "state_entry")
    tops = (automaton.flags & FLAG_HAS_BYTES) != 0
    if (arr["state_entry"][tops] < 0).any():
        raise format_error(w + "state_entry", "a state that can be a stack top has no entry")
    _check_range(kind, 0, len(KIND_NAMES), w + "entry_kind")
    for name in ("entry_off", "entry_len", "unc_off", "unc_len"):
        _check_len(arr[name], n_entries, w + name)
        _check_range(arr[name], 0, 2**62, w + name)
    for lo, ln, data in (("entry_off", "entry_len", "data"), ("unc_off", "unc_len", "unc")):
        end = arr[lo] + arr[ln]
        if n_entries and int(end.max()) > arr[data].shape[0]:
            raise format_error(w + ln, f"an entry runs past the end of {data} "
                               f"({int(end.max())} > {arr[data].shape[0]})")
    is_bitset = kind == 2
    if (arr["entry_len"][is_bitset] != n_words).any():
        raise format_error(w + "entry_len", f"a bitset entry is not {n_words} words long")
    # token ids of accepted / rejected lists: mark their spans in data with a difference array
    span = np.zeros(arr["data"].shape[0] + 1, dtype=np.int64)
    lists = ~is_bitset
    np.add.at(span, arr["entry_off"][lists], 1)
    np.add.at(span, arr["entry_off"][lists] + arr["entry_len"][lists], -1)
    ids = arr["data"][np.cumsum(span[:-1]) > 0]
    _check_range(ids, 0, vocab_size, w + "data")
    _check_range(arr["unc"], 0, n_sorted, w + "unc")
    return MaskCacheTables(arr)


# ----------------------------------------------------------------------------------- records


def records_to_body(records) -> Dict[str, Any]:
    cols = {name: [] for name in _RECORD_COLUMNS}
    for r in records:
        cols["state"].append(r.state)
        cols["accepted"].append(r.accepted)
        cols["rejected"].append(r.rejected)
        cols["uncertain"].append(r.uncertain)
        cols["storage"].append(KIND_NAMES.index(r.storage))
        cols["bytes"].append(r.bytes)
        cols["shared"].append(int(r.shared))
    return {name: encode_array(np.asarray(cols[name], dtype=dt))
            for name, dt in _RECORD_COLUMNS.items()}


def records_from_body(body: Any, where: str, automaton: Automaton) -> List[StateCacheRecord]:
    cols = {name: get_array(body, name, where, dt) for name, dt in _RECORD_COLUMNS.items()}
    n = cols["state"].shape[0]
    for name, col in cols.items():
        _check_len(col, n, f"{where}.{name}")
    _check_range(cols["state"], 0, automaton.n_states, f"{where}.state")
    _check_range(cols["storage"], 0, len(KIND_NAMES), f"{where}.storage")
    names = automaton.rule_names
    rule_of = automaton.state_rule[cols["state"]].tolist()
    lists = {name: col.tolist() for name, col in cols.items()}
    return [
        StateCacheRecord(
            rule=names[rule_of[i]], state=lists["state"][i], accepted=lists["accepted"][i],
            rejected=lists["rejected"][i], uncertain=lists["uncertain"][i],
            storage=KIND_NAMES[lists["storage"][i]], bytes=lists["bytes"][i],
            shared=bool(lists["shared"][i]),
        )
        for i in range(n)
    ]
