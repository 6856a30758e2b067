"""Graph orders: strongly connected components (Tarjan) and the successors-first order of a
graph whose only cycles are self-loops.  Both iterative: grammars and automata nest deeper
than Python's stack.

Example::

    >>> strongly_connected_components("abc", {"a": "b", "b": "a", "c": "a"}.get)
    [['b', 'a'], ['c']]
    >>> order_if_acyclic([[1, 2], [1], []]), order_if_acyclic([[1], [0]])
    ([1, 2, 0], None)
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, Iterable, List, Optional, Sequence


def strongly_connected_components(
    nodes: Iterable[Hashable], successors: Callable[[Hashable], Sequence[Hashable]]
) -> List[List[Hashable]]:
    """Components in Tarjan's emission order: every component comes after all components its
    members can reach, so a pass over the result sees successors first."""
    index: Dict[Hashable, int] = {}
    low: Dict[Hashable, int] = {}
    on_stack: set = set()
    stack: List[Hashable] = []
    out: List[List[Hashable]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nbrs = successors(node)
            if i < len(nbrs):
                work.append((node, i + 1))
                nxt = nbrs[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def order_if_acyclic(succ: List[List[int]]) -> Optional[List[int]]:
    """Successors-first (DFS post-) order of the nodes ``0..len(succ)-1`` of a graph whose only
    cycles are self-loops; None when it has a longer cycle."""
    order: List[int] = []
    state = [0] * len(succ)  # 0 new, 1 on the DFS path, 2 done
    for root in range(len(succ)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            q, it = stack[-1]
            for t in it:
                if t == q:
                    continue
                st = state[t]
                if st == 1:
                    return None
                if st == 0:
                    state[t] = 1
                    stack.append((t, iter(succ[t])))
                    break
            else:
                stack.pop()
                state[q] = 2
                order.append(q)
    return order

