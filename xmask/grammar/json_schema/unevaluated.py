"""``unevaluatedProperties``/``unevaluatedItems`` bookkeeping: which schema objects' annotations
reach them.

The merge (:mod:`.merge`) applies ``unevaluated*`` like ``additional*`` over the names,
patterns and prefix lengths that :func:`evaluated_subtree` collects: the subschemas applied
in place through ``allOf`` and ``$ref``, and through the branch of ``anyOf``/``oneOf``/``if``/
``dependentSchemas`` the grammar alternative took (its ``("chose", node, branch)`` atom,
recorded by :mod:`.combinators` while distributing).

Example::

    >>> from .document import Document
    >>> doc = Document({"allOf": [{"properties": {"a": True}}], "unevaluatedProperties": False})
    >>> has_unevaluated(doc, 2), [doc.nodes[k][2] for k in evaluated_subtree(doc, 2, frozenset(), None)]
    (True, ['#/allOf/0'])
"""

from __future__ import annotations

from typing import FrozenSet, List, Optional

from ...errors import UnsupportedSchemaError
from .document import Document, escape_pointer

__all__ = ["has_unevaluated", "in_place_applicators", "evaluated_subtree"]


def has_unevaluated(doc: Document, n: int) -> bool:
    """Whether node ``n`` has ``unevaluatedProperties`` or ``unevaluatedItems``."""
    obj = doc.nodes[n][0]
    return isinstance(obj, dict) and ("unevaluatedProperties" in obj or "unevaluatedItems" in obj)


def in_place_applicators(obj) -> bool:
    """Whether ``obj`` applies subschemas in place (whose annotations ``unevaluated*`` sees)."""
    return any(k in obj for k in ("allOf", "anyOf", "oneOf", "$ref", "if", "not",
                                  "dependentSchemas", "dependencies", "$dynamicRef"))


def evaluated_subtree(doc: Document, n: int, merge_atoms: FrozenSet, m) -> Optional[List[int]]:
    """The schema objects whose annotations reach the ``unevaluated*`` keywords of node
    ``n`` in the alternative being merged (``merge_atoms``): those applied in place through ``allOf`` and
    ``$ref``, and through the branch of ``anyOf``/``oneOf``/``if``/``dependentSchemas``
    that the alternative took (its "chose" marker); ``not`` discards its annotations.
    This is a subset of the evaluated set (exact unless an ``anyOf``, whose other
    branches may hold too, or an ``if`` without ``then``/``else`` is met, or a marker is
    missing), so ``unevaluated*`` is applied at least as strictly as the schema says;
    ``m.uneval_approx`` records a strict subset.  None for dynamic references."""
    chosen = {(a[1], a[2]) for a in merge_atoms if a[0] == "chose"}
    out: List[int] = []
    seen, stack = {n}, [n]
    while stack:
        k = stack.pop()
        obj, base, p = doc.nodes[k]
        if not isinstance(obj, dict):
            continue
        if "$dynamicRef" in obj or "$recursiveRef" in obj:
            return None
        nexts = []
        if isinstance(obj.get("$ref"), str):
            try:
                nexts.append(doc.resolve(obj["$ref"], base, f"{p}/$ref"))
            except UnsupportedSchemaError:
                return None
            if doc.draft <= 7:  # siblings of $ref are ignored
                for t in nexts:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
                continue
        if k != n:
            out.append(k)
        if isinstance(obj.get("allOf"), list):
            nexts += [doc.nid(x, base, f"{p}/allOf/{i}") for i, x in enumerate(obj["allOf"])]
        for kw in ("anyOf", "oneOf"):
            if isinstance(obj.get(kw), list):
                m.uneval_approx |= kw == "anyOf"
                hit = [i for i in range(len(obj[kw])) if (k, i) in chosen]
                m.uneval_approx |= not hit
                nexts += [doc.nid(obj[kw][i], base, f"{p}/{kw}/{i}") for i in hit]
        if "if" in obj:
            if (k, "then") in chosen:
                nexts.append(doc.nid(obj["if"], base, f"{p}/if"))
                if "then" in obj:
                    nexts.append(doc.nid(obj["then"], base, f"{p}/then"))
            elif (k, "else") in chosen:
                if "else" in obj:
                    nexts.append(doc.nid(obj["else"], base, f"{p}/else"))
            else:
                m.uneval_approx = True
        for kw in ("dependentSchemas", "dependencies"):
            deps = obj.get(kw)
            if isinstance(deps, dict):
                for name, dep in deps.items():
                    if isinstance(dep, (dict, bool)):
                        if (k, (kw, name)) in chosen:
                            nexts.append(doc.nid(dep, base, f"{p}/{kw}/{escape_pointer(name)}"))
                        else:
                            # absent: no annotations; or not distributed here
                            m.uneval_approx = True
        for t in nexts:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return out
