"""Strongly connected components (Tarjan, iterative: grammars nest deeper than Python's stack).

Example::

    >>> strongly_connected_components("abc", {"a": "b", "b": "a", "c": "a"}.get)
    [['b', 'a'], ['c']]
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, Iterable, List, Sequence


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
