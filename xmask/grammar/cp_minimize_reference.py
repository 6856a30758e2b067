"""The pure-Python minimizer of code point automata: the twin of :mod:`._cp_minimize`
(``code_point_dfa.dfa_minimize`` runs the C one; tests compare the two) and its fallback for
input the C reader refuses.

Unreachable and dead states are trimmed, equivalent states merged (one pass when the only
cycles are self-loops, else Moore refinement), and the result numbered in BFS order from the
start with each state's edges in code point order and fused: the canonical form, so equal
languages give equal automata.

Example::

    >>> minimize_reference([((97, 97, 1), (98, 98, 1)), ()], [False, True])
    ([((97, 98, 1),), ()], [False, True])
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from .._graph import order_if_acyclic
from ..compiler._partition import refine_round
from .edge_runs import merge_edges

__all__ = ["acyclic_blocks", "canonical", "minimize_reference", "moore_blocks"]


def minimize_reference(a_edges, a_accept, one_pass: bool = True,
                       dense_cells: int = 16_000_000) -> Tuple[list, list]:
    """``(edges, accept)`` of the minimal automaton of ``(a_edges, a_accept)``, in canonical
    form (see the module).  ``one_pass=False``: Moore blocks even when the one-pass method
    applies; ``dense_cells``: the largest dense table Moore rounds use (else hashing).

    Example::

        >>> minimize_reference([((97, 97, 1), (98, 98, 2)), (), ()], [False, True, True])
        ([((97, 98, 1),), ()], [False, True])
    """
    # reachable states, in discovery order, and their predecessors (for liveness)
    seen = {0}
    stack = [0]
    preds: Dict[int, List[int]] = {}
    while stack:
        q = stack.pop()
        for _, _, t in a_edges[q]:
            pl = preds.get(t)
            if pl is None:
                preds[t] = [q]
            else:
                pl.append(q)
            if t not in seen:
                seen.add(t)
                stack.append(t)
    live = {q for q in seen if a_accept[q]}
    stack = list(live)
    while stack:
        for p in preds.get(stack.pop(), ()):
            if p not in live:
                live.add(p)
                stack.append(p)
    if 0 not in live:
        return [()], [False]
    if len(live) == len(a_edges):  # every state reachable and live (usual): nothing to trim
        edges, accept = a_edges, a_accept
    else:
        keep = sorted(live)  # (live states were all reached from the start)
        index = [-1] * len(a_edges)
        for i, q in enumerate(keep):
            index[q] = i
        edges = [[(lo, hi, index[t]) for lo, hi, t in a_edges[q] if index[t] >= 0] for q in keep]
        accept = [a_accept[q] for q in keep]
    block = acyclic_blocks(edges, accept) if one_pass else None
    if block is None:
        block = moore_blocks(edges, accept, dense_cells)
    return canonical(edges, accept, block)


def canonical(edges, accept, block) -> Tuple[list, list]:
    """The automaton of the blocks of a trimmed DFA (``block[q]``: the class of state q), states
    numbered in BFS order from the start (the edges of each state in code point order) and
    edges fused: the canonical form every minimal DFA is returned in."""
    order = {block[0]: 0}
    queue = [0]
    rep: Dict[int, int] = {block[0]: 0}
    head = 0
    while head < len(queue):
        q = queue[head]
        head += 1
        for _, _, t in edges[q]:
            bt = block[t]
            if bt not in order:
                order[bt] = len(order)
                rep[bt] = t
                queue.append(t)
    new_edges: List[tuple] = [()] * len(order)
    new_accept = [False] * len(order)
    for b, q in rep.items():
        new_edges[order[b]] = merge_edges((lo, hi, order[block[t]]) for lo, hi, t in edges[q])
        new_accept[order[b]] = accept[q]
    return new_edges, new_accept


def acyclic_blocks(edges, accept) -> Optional[List[int]]:
    """Equivalence blocks of a trimmed DFA whose only cycles are self-loops (tries, key
    complements, bounded lengths), in one pass; None when there is a longer cycle.

    States are classified successors first.  A state joins a block when its signature
    (acceptance and fused edges with targets replaced by their blocks) equals the block's, an
    edge into the block itself (a self-loop, or an edge to a member: a state can equal a
    successor, e.g. ``a -> a*``) counting as "same block".  The relation "q and the block" is
    then closed under transitions, so it is exactly language equivalence.
    """
    n = len(accept)
    order = order_if_acyclic([[t for _, _, t in es] for es in edges])
    if order is None:
        return None
    block = [-1] * n
    sigs: Dict[tuple, int] = {}
    uses: List[frozenset] = []  # per block: the other blocks its signature names
    for q in order:  # successors first
        es = edges[q]
        acc = accept[q]
        sig = (acc, merge_edges([(lo, hi, -1 if t == q else block[t]) for lo, hi, t in es]))
        b = sigs.get(sig)
        if b is None:
            succ = {block[t] for _, _, t in es if t != q}
            for c in succ:
                # q can equal its successor's block c only if both name the same other blocks
                if uses[c] != succ - {c}:
                    continue
                alt = (acc, merge_edges([(lo, hi, -1 if t == q or block[t] == c else block[t])
                                          for lo, hi, t in es]))
                if sigs.get(alt) == c:
                    b = c
                    break
            else:
                b = sigs[sig] = len(sigs)
                uses.append(frozenset(succ))
        block[q] = b
    return block


def moore_blocks(edges, accept, dense_cells: int) -> List[int]:
    """Equivalence blocks of a trimmed DFA (Moore refinement until stable).

    Rounds run in the Cython kernel over a dense ``states x symbol-classes`` table (a
    pattern x length product needs as many rounds as its length); a table too large for memory
    falls back to hashing each state's merged edge signature in Python.  Both are exact.
    """
    n = len(accept)
    cuts = sorted({x for es in edges for lo, hi, _ in es for x in (lo, hi + 1)})
    width = max(len(cuts) - 1, 1)
    block = np.asarray(accept, dtype=np.int64)
    n_blocks = len(set(accept))
    if n * width <= dense_cells:
        col = {c: i for i, c in enumerate(cuts)}
        table = np.full((n, width), -1, dtype=np.int32)
        for q, es in enumerate(edges):
            row = table[q]
            for lo, hi, t in es:
                row[col[lo]:col[hi + 1]] = t
        while True:
            new_block = refine_round(block, table)
            m = int(new_block.max()) + 1 if n else 0
            if m == n_blocks:
                return new_block.tolist()
            block, n_blocks = new_block, m
    blk = block.tolist()
    while True:
        sigs: Dict[tuple, int] = {}
        new_blk = []
        for q in range(n):
            sig = (blk[q], merge_edges((lo, hi, blk[t]) for lo, hi, t in edges[q]))
            b = sigs.get(sig)
            if b is None:
                b = sigs[sig] = len(sigs)
            new_blk.append(b)
        if len(sigs) == n_blocks:
            return new_blk
        blk, n_blocks = new_blk, len(sigs)
