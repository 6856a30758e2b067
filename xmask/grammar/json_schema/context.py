"""What every part of the converter shares: the document, the options and limits, the rule
table (with the queue of value rules still to generate) and the lenient report.

Example::

    >>> ctx = Context({"type": "integer"}, Layout())
    >>> ctx.value_ref(frozenset(), 0, "value")
    RuleRef(name='value')
    >>> ctx.queue[0][0]
    'value'
"""

from __future__ import annotations

from collections import deque
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from ...errors import UnsupportedSchemaError
from ...limits import DEFAULT_LIMITS, CompileLimits
from ..ir import Bytes, Expr, RuleRef, Seq
from ..rule_sink import RuleSink
from .document import Document
from .layout import Layout
from .vocabulary import FALSE, MAX_INDENT_DEPTH

__all__ = ["Context"]

_MISSING = object()


class Context:
    """Options, limits, the schema document, the rule table and the report of one conversion.

    ``value_ref`` reserves a rule per (atom set, depth) and queues it; the converter's driver
    generates the queued rules (:meth:`.converter.Converter.drain`).
    """

    def __init__(self, schema, layout: Layout, *, strict_mode: bool = True, lenient: bool = False,
                 any_order: bool = False, limits: CompileLimits = DEFAULT_LIMITS, excludes: Sequence[str] = ()):
        self.doc = Document(schema)
        # substrings no string value without pattern/format and no key may contain (in its
        # JSON text), see :mod:`..text_exclusion`
        self.excludes = tuple(excludes)
        self.limits = limits
        self.layout = layout
        self.strict = strict_mode
        self.lenient = lenient
        self.any_order = any_order
        self.report: List[str] = []
        self._reported = set()
        self.rules: Dict[str, Optional[Expr]] = {"root": None}
        self.sink = RuleSink(self.rules, max_rules=limits.max_schema_rules)
        self.memo: Dict[Tuple[FrozenSet, int], str] = {}  # (atoms, depth) -> its value rule
        self.queue: deque = deque()  # (rule name, atoms, depth) still to generate
        self.shared: Dict[Any, Optional[Expr]] = {}  # see shared_rule

    def unsupported(self, message: str, path: str, action: str = "dropped") -> None:
        """Raise, or in lenient mode record the loosening."""
        if not self.lenient:
            raise UnsupportedSchemaError(message, path)
        item = f"{path}: {message} ({action})"
        if item not in self._reported:
            self._reported.add(item)
            self.report.append(item)

    def ptr(self, nid: int) -> str:
        """The JSON pointer of node ``nid``."""
        return self.doc.nodes[nid][2]

    def node(self, nid: int):
        """The schema object (or boolean) of node ``nid``."""
        return self.doc.nodes[nid][0]

    def where(self, m) -> str:
        """The pointer of the first schema object merged into ``m`` (a :class:`.merged.Merged`)."""
        return self.ptr(m.nids[0]) if m.nids else "#"

    def value_ref(self, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        """A reference to the rule of the values satisfying ``atoms`` (None: none can)."""
        if FALSE in atoms:
            return None
        if self.layout.depth_matters:
            if depth > MAX_INDENT_DEPTH:
                return None
        else:
            depth = 0
        key = (atoms, depth)
        name = self.memo.get(key)
        if name is None:
            name = self.sink.fresh(hint)
            self.rules[name] = None
            self.memo[key] = name
            self.queue.append((name, atoms, depth))
        return RuleRef(name)

    def shared_rule(self, key, hint: str, build) -> Optional[Expr]:
        """A rule for an expression shared by content (strings, numbers, key classes)."""
        hit = self.shared.get(key, _MISSING)  # (one hash of the key: keys are tuples, not cached)
        if hit is not _MISSING:
            return hit
        e = build()
        if e is None:
            self.shared[key] = None
            return None
        if isinstance(e, (Bytes, RuleRef)) or (type(e) is Seq and e.items == ()):  # (the last: e == EPSILON)
            self.shared[key] = e
            return e
        name = self.sink.fresh(hint)
        self.rules[name] = e
        ref = self.shared[key] = RuleRef(name)
        return ref
