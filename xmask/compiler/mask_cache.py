"""Adaptive token-mask cache: per automaton state, the context-independent token sets.

For each state that can be a stack top, the kernel in ``runtime/_classify.pyx`` classifies every
token as accepted / rejected / uncertain, lazily (the first fill that meets the state, see
``runtime/_mask_cache.pyx``) or eagerly (``precompute_mask_cache``, the warm-up mode).  Each
state's entry is stored in the smallest of three forms

* ``accepted``: accepted ids + uncertain positions
* ``rejected``: rejected ids + uncertain positions (accepted = eligible - rejected - uncertain)
* ``bitset``:   accepted bitset (ceil(vocab/32) words) + uncertain positions

and identical entries are stored once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List

import numpy as np

from .. import _deadline as deadline
from ..limits import DEFAULT_LIMITS
from ..runtime._mask_cache import MaskCache
from ._state_merge import equivalent_states
from .automaton import FLAG_FINAL, FLAG_HAS_BYTES, FLAG_TOKEN, refine_partition_reference
from .state_positions import state_positions

KIND_NAMES = ("accepted", "rejected", "bitset")


@dataclass(frozen=True)
class StateCacheRecord:
    """One classified state's cache entry (``CompiledGrammar.cache_stats()``).

    ``rule`` and ``position`` place the state in the grammar: the rule whose automaton holds it
    (small rules are inlined into their callers) and a dotted item, the shortest input from the
    rule's start, ``•``, then what the state reads next (``xmask.compiler.state_positions``).
    ``accepted + rejected + uncertain`` is the number of grammar-eligible tokens.  ``bytes`` is
    the entry's payload; ``shared`` entries are stored once, by ``entry_owner`` (the lowest
    state holding that entry: the state itself when not shared), whose record counts them.
    """

    rule: str
    state: int
    accepted: int
    rejected: int
    uncertain: int
    storage: str
    bytes: int
    shared: bool  # the entry is identical to an earlier state's and stored once
    position: str = ""
    entry_owner: int = -1

    @property
    def stored_bytes(self) -> int:
        """Payload bytes this record adds to the cache (0 when ``shared``)."""
        return 0 if self.shared else self.bytes


class CacheStats(list):
    """``CompiledGrammar.cache_stats()``: a list of :class:`StateCacheRecord` (classified states
    in state order) with the memory they belong to.

    ``memory`` maps each part of ``memory_size_bytes`` to its bytes (``automaton``: byte classes,
    transitions, flags and calls; ``context_tables``; ``state_index``; ``dedup_table``;
    ``entry_headers``; ``entry_payloads``, the sum of the records' ``stored_bytes``;
    ``pair_entries``, the entries of (state, return state) pairs: a long bounded string's
    character tail per position, and states whose own entry leaves many tokens uncertain), so
    ``sum(stats.memory.values()) == stats.totals["memory_size_bytes"]``.  ``totals`` also counts
    ``states``, distinct ``entries``, ``shared_states`` and ``shared_bytes`` (payload the
    sharing saves).  One snapshot: while other threads fill, a later call may show more.

    Example::

        >>> stats = cg.precompute().cache_stats()                       # doctest: +SKIP
        >>> sum(stats.memory.values()) == cg.memory_size_bytes          # doctest: +SKIP
        True
        >>> sum(r.stored_bytes for r in stats) == stats.memory["entry_payloads"]  # doctest: +SKIP
        True
    """

    def __init__(self, records=(), memory=None):
        super().__init__(records)
        self.memory = dict(memory or {})

    @property
    def totals(self) -> dict:
        shared = [r for r in self if r.shared]
        return {
            "states": len(self),
            "entries": len(self) - len(shared),
            "shared_states": len(shared),
            "entry_bytes": sum(r.stored_bytes for r in self),
            "shared_bytes": sum(r.bytes for r in shared),
            "memory_size_bytes": sum(self.memory.values()),
        }


def token_equivalent_states(automaton, horizon: int) -> np.ndarray:
    """Representative state per state (the lowest of its block), merging states no token can
    tell apart.

    Two states of the same rule with the same flags, token edge and calls, whose byte behaviour agrees on
    every string of up to ``horizon`` bytes (the longest token), classify every token
    identically, so one walk serves both.  Return states count as behaviour like byte targets
    do: a non-nullable callee reads a byte before it returns, so two calls of one rule match
    when their return states do one round later (a nullable callee's return state is part of
    the first signature).  Bounded Moore refinement in C with the GIL released
    (``_state_merge``): ``horizon`` rounds at most, stopping early when the partition is
    stable.  This keeps ``x{0,2000}`` and a ``maxLength: 10000`` string (one state per
    position, each calling the shared character tail) at about ``horizon`` walks, not 2000 or
    10000.  ``token_equivalent_states_reference`` is its pure-Python twin.

    Example::

        >>> rep = token_equivalent_states(cg._automaton, 129)   # doctest: +SKIP
        >>> len(np.unique(rep)) <= cg._automaton.n_states        # doctest: +SKIP
        True
    """
    limit = deadline.current()
    rep = equivalent_states(*_merge_inputs(automaton), int(horizon),
                            limit[0] if limit is not None else 0.0)
    if rep is None:
        deadline.check(limit)  # raises: the deadline passed inside the C rounds
    return rep


def _merge_inputs(automaton):
    n, nc = automaton.n_states, automaton.n_classes
    i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
    nullable = getattr(automaton, "nullable", None)
    if nullable is None or len(nullable) != n:  # (every built automaton has it)
        nullable = np.ones(n, dtype=bool)  # as if nullable: return states in the first key
    none = np.full(n, -1, dtype=np.int32)
    return (np.ascontiguousarray(automaton.flags, dtype=np.uint8), i32(automaton.state_rule),
            i32(automaton.trans).reshape(n, nc), i32(automaton.call_offsets),
            i32(automaton.call_target), i32(automaton.call_ret),
            np.ascontiguousarray(nullable, dtype=np.uint8),
            i32(getattr(automaton, "token_set_of", none)),
            i32(getattr(automaton, "token_target", none)))


def token_equivalent_states_reference(automaton, horizon: int) -> np.ndarray:
    """Pure-Python twin of :func:`token_equivalent_states` (tests compare the two): the same
    first signature in a dict, the same rounds with ``refine_partition_reference`` over the
    byte targets and the non-nullable calls' return states as columns."""
    flags, rule, trans, offsets, target, ret, nullable, tset, ttarget = _merge_inputs(automaton)
    n = len(flags)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    keys: dict = {}
    first = []
    width = int(np.diff(offsets).max()) if n else 0
    ret_cols = np.full((n, width), -1, dtype=np.int32)
    for s in range(n):
        calls = []
        for k, j in enumerate(range(offsets[s], offsets[s + 1])):
            t = int(target[j])
            calls.append((t, int(ret[j]) if nullable[t] else -2))
            if not nullable[t]:
                ret_cols[s, k] = ret[j]
        key = (int(flags[s]) & (FLAG_FINAL | FLAG_HAS_BYTES | FLAG_TOKEN), int(rule[s]),
               int(tset[s]), int(ttarget[s]), tuple(calls))
        first.append(keys.setdefault(key, len(keys)))
    block = np.asarray(first, dtype=np.int64)
    table = np.concatenate([trans, ret_cols], axis=1)
    n_blocks = len(keys)
    for _ in range(horizon):
        new_block = refine_partition_reference(block, table)
        if new_block.max() + 1 == n_blocks:
            break
        block, n_blocks = new_block, int(new_block.max()) + 1
    rep_of_block = np.full(n_blocks, -1, dtype=np.int64)
    order = np.arange(n)
    rep_of_block[block[::-1]] = order[::-1]  # the first state of each block
    return rep_of_block[block].astype(np.int32)


def top_states(automaton) -> np.ndarray:
    """The states that can be on top of a stack (they read bytes): the ones with cache entries."""
    return np.nonzero(automaton.flags & FLAG_HAS_BYTES)[0].astype(np.int32)


def new_mask_cache(automaton, limits=None) -> MaskCache:
    """An empty (lazy) token-mask cache for ``automaton``: fills classify states on demand,
    each within the bounds of ``limits`` (a ``CompileLimits``; default: the default limits)."""
    return MaskCache(automaton, DEFAULT_LIMITS if limits is None else limits)


#: Pair walks a warm-up makes at most (beyond, the grammar's pairs stay lazy): about 0.1 ms
#: each, so a few seconds.  Pairs that no token can tell apart share one walk.
MAX_PAIR_WALKS = 20_000

#: Pairs a warm-up fills at most, walked or shared (beyond, the grammar's pairs stay lazy):
#: each costs a pointer in its state's row (8 bytes), so 8 MB.
MAX_PAIRS = 1_000_000


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def precompute_mask_cache(cache: MaskCache, automaton, automaton_tables, vocab_tables,
                          max_threads: int = 1, progress=None) -> None:
    """Classify every top-capable state not classified yet (the warm-up mode), and every
    (state, return state) pair of the rules whose callers a walk does not follow (called from
    more than ``cache.max_ctx_walk`` places: fills classify such a state with the frame under
    it) unless that takes more than :data:`MAX_PAIR_WALKS` walks or :data:`MAX_PAIRS` pairs,
    on up to ``max_threads`` C threads (no more than :func:`usable_cpus`; the warm-up pool's
    threads, at a lower OS priority, while the caller waits), under the compile deadline in
    force (``GrammarLimitError`` past it).  States that no token can tell apart share one walk
    (``token_equivalent_states``), and so do pairs whose states and return states no token can
    tell apart (:func:`pair_walks`).  ``progress(done, total)``, when given, is called after
    each chunk of walks (about 1% of them, at least a few per thread: one C call per chunk
    keeps the threads busy)."""
    tops = top_states(automaton)
    if cache.summary()[0] == len(tops) and not has_pairs(cache, automaton):
        if progress is not None:
            progress(0, 0)
        return  # all classified (by fills or an earlier call): nothing to walk
    rep = token_equivalent_states(automaton, int(vocab_tables.max_token_len) + 1)
    # a block's representative is its lowest state, a top state when its members are (the
    # same flags): the tops that represent themselves, already sorted (no np.unique)
    reps = tops[rep[tops] == tops].astype(np.int32, copy=False)
    # too many pairs to warm up (a long bounded string's character tail called from thousands
    # of positions, far from the bound): fills classify those on first use
    walk_states, walk_rets, shared = pair_walks(cache, automaton, tops, rep, MAX_PAIR_WALKS,
                                                MAX_PAIRS)
    limit = deadline.current()
    threads = max(1, min(int(max_threads), usable_cpus()))
    total = len(reps) + len(walk_states)
    step = total if progress is None else max(4 * threads, -(-total // 100))
    for start in range(0, total, step):
        lo, hi = start, min(start + step, total)
        ok = True
        if lo < len(reps):  # states first, then pairs (a chunk may hold both)
            ok = cache.precompute(automaton_tables, vocab_tables, reps[lo:min(hi, len(reps))],
                                  threads, limit[0] if limit is not None else 0.0)
        if ok and hi > len(reps):
            p0, p1 = max(lo, len(reps)) - len(reps), hi - len(reps)
            ok = cache.precompute(automaton_tables, vocab_tables, walk_states[p0:p1], threads,
                                  limit[0] if limit is not None else 0.0, rets=walk_rets[p0:p1])
        if not ok:
            deadline.check(limit)  # raises: the deadline passed inside the C loop
        if progress is not None:
            progress(hi, total)
    members = tops[rep[tops] != tops]
    cache.share(members, rep[members])
    if len(shared[0]):
        cache.share_pairs(*shared)
    # (the overlays of states with many uncertain tokens stay with the fills: each walks those
    # tokens once, what one fill's check of them costs, MaskCacheC.pair_min_unc; warming up
    # every (state, return state) of them made the warm-up 1.3x slower, 2.3x at p50)


def _pair_rules(cache: MaskCache, automaton, tops):
    """``(ctx_off, flat, {rule: its top states})`` for the rules with pair entries."""
    ctx_off = np.asarray(automaton.rule_ctx_offsets, dtype=np.int64)
    many = np.flatnonzero(np.diff(ctx_off) > cache.max_ctx_walk)
    if not many.size:
        return ctx_off, None, {}
    flat = np.asarray(automaton.rule_ctx_flat, dtype=np.int32)
    top_rule = np.asarray(automaton.state_rule)[tops]
    return ctx_off, flat, {r: tops[top_rule == r] for r in many.tolist()}


def has_pairs(cache: MaskCache, automaton) -> bool:
    """Whether ``cache`` has (state, return state) pair entries to fill (see ``context_pairs``)."""
    ctx_off = np.asarray(automaton.rule_ctx_offsets, dtype=np.int64)
    return bool((np.diff(ctx_off) > cache.max_ctx_walk).any())


def pair_walks(cache: MaskCache, automaton, tops, rep, max_walks: int = -1, max_pairs: int = -1):
    """``(states, rets, shared)``: the (state, return state) pairs a warm-up walks (see
    :func:`context_pairs`), one per class of pairs no token can tell apart (``rep``, from
    :func:`token_equivalent_states`: the state's representative, and the lowest return state
    of the rule with the same representative), and ``shared = (states, rets, from_states,
    from_rets)``, every other pair and the walked pair whose entry it gets.  All empty when
    there are more than ``max_walks`` walks or ``max_pairs`` pairs (>= 0; counted before
    any pair array is made).

    Two pairs (s, r) and (s', r') of one rule classify every token alike when s, s' and r, r'
    are equivalent: a walk reads up to the longest token's bytes from s then, once the rule
    returns, from r over the same callers (r and r' are of one rule).

    Example::

        >>> tops = top_states(a); rep = token_equivalent_states(a, 129)   # doctest: +SKIP
        >>> states, rets, shared = pair_walks(cache, a, tops, rep)       # doctest: +SKIP
    """
    empty = np.zeros(0, dtype=np.int32)
    none = (empty, empty, (empty, empty, empty, empty))
    ctx_off, flat, own = _pair_rules(cache, automaton, tops)
    plans = []
    walks = pairs = 0
    for r, mine in own.items():
        ret = flat[ctx_off[r]:ctx_off[r + 1]]
        st_rep = rep[mine]
        # per return state the lowest return state equivalent to it (rep itself may not be
        # a return state of this rule)
        _, first, inverse = np.unique(rep[ret], return_index=True, return_inverse=True)
        ret_rep = ret[first][inverse.reshape(-1)]
        st_walk = np.unique(st_rep)
        plans.append((mine, st_rep, st_walk, ret, ret_rep, ret[first]))
        walks += len(st_walk) * len(first)
        pairs += len(mine) * len(ret)
    if walks == 0 or 0 <= max_walks < walks or 0 <= max_pairs < pairs:
        return none
    w_s, w_r, s_s, s_r, f_s, f_r = [], [], [], [], [], []
    for mine, st_rep, st_walk, ret, ret_rep, ret_walk in plans:
        w_s.append(np.repeat(st_walk, len(ret_walk)))
        w_r.append(np.tile(ret_walk, len(st_walk)))
        all_s, all_r = np.repeat(mine, len(ret)), np.tile(ret, len(mine))
        from_s, from_r = np.repeat(st_rep, len(ret)), np.tile(ret_rep, len(mine))
        other = (all_s != from_s) | (all_r != from_r)
        s_s.append(all_s[other])
        s_r.append(all_r[other])
        f_s.append(from_s[other])
        f_r.append(from_r[other])
    cat = lambda parts: np.concatenate(parts).astype(np.int32, copy=False)  # noqa: E731
    return cat(w_s), cat(w_r), (cat(s_s), cat(s_r), cat(f_s), cat(f_r))


def context_pairs(cache: MaskCache, automaton, tops, limit: int = -1):
    """``(states, rets)``: every top-capable state of a rule with more return states than
    ``cache.max_ctx_walk``, paired with each of them (int32 arrays, rule by rule); empty when
    there are more than ``limit`` (>= 0) pairs (counted before any array is made: a recursive
    rule inside a big repeat has 10,000 return states)."""
    empty = np.zeros(0, dtype=np.int32)
    ctx_off, flat, own = _pair_rules(cache, automaton, tops)
    count = sum(len(own[r]) * int(ctx_off[r + 1] - ctx_off[r]) for r in own)
    if count == 0 or 0 <= limit < count:
        return empty, empty
    states, rets = [], []
    for r, mine in own.items():
        ret = flat[ctx_off[r]:ctx_off[r + 1]]
        states.append(np.repeat(mine, len(ret)))
        rets.append(np.tile(ret, len(mine)))
    return (np.concatenate(states).astype(np.int32, copy=False),
            np.concatenate(rets).astype(np.int32, copy=False))


def cache_summary(cache: MaskCache, automaton) -> dict:
    """Classified vs pending states, distinct entries and their bytes."""
    classified, entries, nbytes = cache.summary()
    n_tops = len(top_states(automaton))
    return {"top_states": n_tops, "classified": int(classified),
            "pending": n_tops - int(classified), "entries": int(entries), "bytes": int(nbytes)}


def cache_records(cache: MaskCache, automaton, automaton_tables=None) -> CacheStats:
    """One record per classified state, in state order; ``shared`` when a lower state holds the
    same stored entry.  With ``automaton_tables`` the result's ``memory`` is filled from the
    same snapshot as the records."""
    for _ in range(8):  # entries only grow: equal parts around export() mean one snapshot
        before = cache.memory_parts()
        snap = cache.export()
        if cache.memory_parts() == before:
            break
    se = snap["state_entry"]
    owner = {}
    records = []
    names = automaton.rule_names
    classified = np.nonzero(se >= 0)[0].tolist()
    positions = dict(zip(classified, state_positions(automaton, classified)))
    for s in classified:
        k = int(se[s])
        first = owner.setdefault(k, s)
        records.append(StateCacheRecord(
            rule=names[int(automaton.state_rule[s])],
            state=s,
            accepted=int(snap["entry_accepted"][k]),
            rejected=int(snap["entry_rejected"][k]),
            uncertain=int(snap["unc_len"][k]),
            storage=KIND_NAMES[int(snap["entry_kind"][k])],
            bytes=4 * int(snap["entry_len"][k] + snap["unc_len"][k]),
            shared=first != s,
            position=positions[s],
            entry_owner=first,
        ))
    memory = {}
    if automaton_tables is not None:
        memory = {"automaton": int(automaton_tables.nbytes)}
        memory.update((k, int(v)) for k, v in before.items())
    return CacheStats(records, memory)
