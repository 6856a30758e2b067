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
from .automaton import FLAG_HAS_BYTES, refine_partition
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
    ``pair_entries``, the entries a long bounded string's character tail gets per position), so
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
    """Representative state per state, merging states no token can tell apart.

    Two states of the same rule with the same calls, whose byte behaviour agrees on every string
    of up to ``horizon`` bytes (the longest token), classify every token identically, so one
    walk serves both.  Bounded Moore refinement: ``horizon`` rounds at most, stopping early when
    the partition is stable.  This is what keeps ``x{0,2000}`` at ~horizon walks, not 2000.
    """
    n, nc = automaton.n_states, automaton.n_classes
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    offsets = automaton.call_offsets
    calls = [
        tuple(zip(automaton.call_target[offsets[i] : offsets[i + 1]].tolist(),
                  automaton.call_ret[offsets[i] : offsets[i + 1]].tolist()))
        for i in range(n)
    ]
    keys = {}
    block = np.fromiter(
        (keys.setdefault((int(automaton.flags[i]) & 3, int(automaton.state_rule[i]), calls[i]), len(keys))
         for i in range(n)),
        dtype=np.int64,
        count=n,
    )
    trans = automaton.trans.reshape(n, nc)
    n_blocks = len(keys)
    for _ in range(horizon):
        deadline.check()  # a round is one pass over the transition table
        new_block = refine_partition(block, trans)
        if new_block.max() + 1 == n_blocks:
            break
        block, n_blocks = new_block, int(new_block.max()) + 1
    rep_of_block = np.full(n_blocks, -1, dtype=np.int64)
    order = np.arange(n)
    # first state of each block is its representative
    rep_of_block[block[::-1]] = order[::-1]
    return rep_of_block[block].astype(np.int32)


def top_states(automaton) -> np.ndarray:
    """The states that can be on top of a stack (they read bytes): the ones with cache entries."""
    return np.nonzero(automaton.flags & FLAG_HAS_BYTES)[0].astype(np.int32)


def new_mask_cache(automaton, limits=None) -> MaskCache:
    """An empty (lazy) token-mask cache for ``automaton``: fills classify states on demand,
    each within the bounds of ``limits`` (a ``CompileLimits``; default: the default limits)."""
    return MaskCache(automaton, DEFAULT_LIMITS if limits is None else limits)


#: Pair walks a warm-up makes at most (beyond, the grammar's pairs stay lazy): about 0.1 ms
#: each, so a few seconds.
MAX_PAIR_WALKS = 20_000


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
    it) unless that takes more than :data:`MAX_PAIR_WALKS` walks, on up to ``max_threads`` C threads (no more than :func:`usable_cpus`; the warm-up
    pool's threads, at a lower OS priority, while the caller waits), under the compile
    deadline in force (``GrammarLimitError`` past it).  States that no token can tell apart
    share one walk (``token_equivalent_states``).  ``progress(done, total)``, when given, is
    called after each chunk of walks (about 1% of them, at least a few per thread: one C call
    per chunk keeps the threads busy)."""
    tops = top_states(automaton)
    # too many pairs to warm up (a long bounded string's character tail called from thousands
    # of positions): fills classify those on first use
    pair_states, pair_rets = context_pairs(cache, automaton, tops, MAX_PAIR_WALKS)
    if cache.summary()[0] == len(tops) and not len(pair_states):
        if progress is not None:
            progress(0, 0)
        return  # all classified (by fills or an earlier call): nothing to walk
    rep = token_equivalent_states(automaton, int(vocab_tables.max_token_len) + 1)
    reps = np.unique(rep[tops]).astype(np.int32)
    walk_states, walk_rets = pair_states, pair_rets
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


def context_pairs(cache: MaskCache, automaton, tops, limit: int = -1):
    """``(states, rets)``: every top-capable state of a rule with more return states than
    ``cache.max_ctx_walk``, paired with each of them (int32 arrays, rule by rule); empty when
    there are more than ``limit`` (>= 0) pairs (counted before any array is made: a recursive
    rule inside a big repeat has 10,000 return states)."""
    empty = np.zeros(0, dtype=np.int32)
    ctx_off = np.asarray(automaton.rule_ctx_offsets, dtype=np.int64)
    many = np.flatnonzero(np.diff(ctx_off) > cache.max_ctx_walk)
    if not many.size:
        return empty, empty
    flat = np.asarray(automaton.rule_ctx_flat, dtype=np.int32)
    top_rule = np.asarray(automaton.state_rule)[tops]
    own = {r: tops[top_rule == r] for r in many.tolist()}
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
