"""Adaptive token-mask cache: per automaton state, the context-independent token sets.

For each state that can be a stack top, the kernel in ``_kernels.pyx`` classifies every token as
accepted / rejected / uncertain.  Each state's entry is stored in the smallest of three forms

* ``accepted``: accepted ids + uncertain positions
* ``rejected``: rejected ids + uncertain positions (accepted = eligible - rejected - uncertain)
* ``bitset``:   accepted bitset (ceil(vocab/32) words) + uncertain positions

and identical entries are stored once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import List

import numpy as np

from .. import _deadline as deadline
from ..runtime._tables import MaskCacheTables
from ._kernels import classify_states, split_verdicts
from .automaton import FLAG_HAS_BYTES, refine_partition

KIND_NAMES = ("accepted", "rejected", "bitset")
_CHUNK = 8


@dataclass(frozen=True)
class StateCacheRecord:
    """One state's cache entry, for notebooks (``CompiledGrammar.cache_stats()``)."""

    rule: str
    state: int
    accepted: int
    rejected: int
    uncertain: int
    storage: str
    bytes: int
    shared: bool  # the entry is identical to an earlier state's and stored once


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
        new_block = refine_partition(block, trans)
        if new_block.max() + 1 == n_blocks:
            break
        block, n_blocks = new_block, int(new_block.max()) + 1
    rep_of_block = np.full(n_blocks, -1, dtype=np.int64)
    order = np.arange(n)
    # first state of each block is its representative
    rep_of_block[block[::-1]] = order[::-1]
    return rep_of_block[block].astype(np.int32)


def build_unclassified_cache(automaton, vocab_tables) -> "MaskCacheTables":
    """A cache that classifies nothing: every state shares one entry whose accepted set is empty
    and whose uncertain set is the whole eligible vocabulary, so ``fill_next_token_bitmask``
    checks every token against the real stack.  Masks stay exact (the runtime check is the
    ground truth the cache only shortcuts); compile skips the per-state walks.  For scoring
    acceptance over many grammars (``accept_token`` never reads the cache), not for serving.
    """
    n_sorted = len(vocab_tables.arrays["sorted_ids"])
    state_entry = np.zeros(automaton.n_states, dtype=np.int32)
    return MaskCacheTables(
        {
            "state_entry": state_entry,
            "entry_kind": np.zeros(1, dtype=np.uint8),  # accepted list (empty)
            "entry_off": np.zeros(1, dtype=np.int64),
            "entry_len": np.zeros(1, dtype=np.int64),
            "unc_off": np.zeros(1, dtype=np.int64),
            "unc_len": np.asarray([n_sorted], dtype=np.int64),
            "data": np.zeros(0, np.int32),
            "unc": np.arange(n_sorted, dtype=np.int32),
        }
    )


def build_mask_cache(automaton, automaton_tables, vocab_tables, max_threads: int = 1):
    """Classify the vocabulary for every top-capable state; returns (MaskCacheTables, records)."""
    flags = automaton.flags
    all_states = np.nonzero(flags & FLAG_HAS_BYTES)[0].astype(np.int32)
    rep = token_equivalent_states(automaton, int(vocab_tables.max_token_len) + 1)
    states = np.unique(rep[all_states]).astype(np.int32)
    rules = automaton.state_rule[states]
    follow = automaton.rule_ctx_follow[rules]

    def chunk(i):
        sub = states[i : i + _CHUNK]
        ctx = [automaton.rule_ctx_states[r] for r in rules[i : i + _CHUNK].tolist()]
        offsets = np.zeros(len(sub) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in ctx], out=offsets[1:])
        flat = np.asarray([x for c in ctx for x in c], dtype=np.int32)
        return (np.ascontiguousarray(sub), offsets, flat, np.ascontiguousarray(follow[i : i + _CHUNK]))

    chunks = [chunk(i) for i in range(0, len(states), _CHUNK)]

    limit = deadline.current()  # worker threads do not inherit the context variable

    def run(c):
        deadline.check(limit)
        return classify_states(automaton_tables, vocab_tables, *c)

    if max_threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=max_threads) as pool:
            results = list(pool.map(run, chunks))
    else:
        results = [run(c) for c in chunks]

    sorted_ids = vocab_tables.arrays["sorted_ids"]
    # eligible ids in ascending id order and their sorted positions: gathering a row through
    # these yields id-ordered verdicts, so the id lists come out sorted without a sort
    ids_ascending = np.sort(sorted_ids).astype(np.int32)
    pos_of_ids = np.ascontiguousarray(vocab_tables.arrays["id_pos"][ids_ascending])
    vocab_size = len(vocab_tables.arrays["id_pos"])
    n_words = (vocab_size + 31) // 32
    state_entry = np.full(automaton.n_states, -1, dtype=np.int32)
    kinds: List[int] = []
    data_parts: List[np.ndarray] = []
    unc_parts: List[np.ndarray] = []
    dedupe = {}
    records: List[StateCacheRecord] = []
    data_len = 0
    unc_len = 0
    entry_off, entry_len, unc_off, unc_len_l = [], [], [], []
    rows = (row for res in results for row in res)
    rep_record = {}
    for s, row in zip(states.tolist(), rows):
        kind, payload, unc_pos, n_acc, n_rej = split_verdicts(row, ids_ascending, pos_of_ids, n_words)
        key = (kind, payload.tobytes(), unc_pos.tobytes())
        entry = dedupe.get(key)
        shared = entry is not None
        if entry is None:
            entry = dedupe[key] = len(kinds)
            kinds.append(kind)
            entry_off.append(data_len)
            entry_len.append(len(payload))
            unc_off.append(unc_len)
            unc_len_l.append(len(unc_pos))
            data_parts.append(payload)
            unc_parts.append(unc_pos)
            data_len += len(payload)
            unc_len += len(unc_pos)
        state_entry[s] = entry
        rep_record[s] = (
            StateCacheRecord(
                rule=automaton.rule_names[int(automaton.state_rule[s])],
                state=int(s),
                accepted=n_acc,
                rejected=n_rej,
                uncertain=len(unc_pos),
                storage=KIND_NAMES[kind],
                bytes=4 * (len(payload) + len(unc_pos)),
                shared=shared,
            )
        )
    for s in all_states.tolist():
        r = int(rep[s])
        state_entry[s] = state_entry[r]
        base = rep_record[r]
        records.append(base if r == s else StateCacheRecord(
            rule=base.rule, state=s, accepted=base.accepted, rejected=base.rejected,
            uncertain=base.uncertain, storage=base.storage, bytes=base.bytes, shared=True))
    tables = MaskCacheTables(
        {
            "state_entry": state_entry,
            "entry_kind": np.asarray(kinds, dtype=np.uint8),
            "entry_off": np.asarray(entry_off, dtype=np.int64),
            "entry_len": np.asarray(entry_len, dtype=np.int64),
            "unc_off": np.asarray(unc_off, dtype=np.int64),
            "unc_len": np.asarray(unc_len_l, dtype=np.int64),
            "data": np.concatenate(data_parts) if data_parts else np.zeros(0, np.int32),
            "unc": np.concatenate(unc_parts) if unc_parts else np.zeros(0, np.int32),
        }
    )
    return tables, records
