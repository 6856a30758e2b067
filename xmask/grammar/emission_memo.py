"""A bounded, process-wide memo for pure emissions that name rules in a :class:`~.rule_sink.RuleSink`.

Lowering an automaton to IR (``dfa_to_expr``, ``word_complement_expr``) is a pure function of
its inputs except for the rule names the sink hands out.  :class:`EmissionMemo` runs the
emission once through a recording proxy of the sink, keeps the result and the sink calls
(``fresh`` hints with the names they got, ``define`` bodies), and answers a later call with
the same key by replaying those calls on the new sink -- only when each ``fresh`` is sure to
return the very name recorded (the name is the hint's clean form and still unused), so the
result, the rules and their order are identical to a fresh emission.  Otherwise it emits
again (and keeps the newer record).  Errors are never memoized: a failing emission raises
again.

Example::

    >>> from xmask.grammar.ir import Bytes, RuleRef
    >>> from xmask.grammar.rule_sink import RuleSink
    >>> memo = EmissionMemo(8)
    >>> def emit(sink):
    ...     name = sink.fresh("x")
    ...     sink.define(name, Bytes(b"x"))
    ...     return RuleRef(name)
    >>> a, b = RuleSink(), RuleSink()
    >>> memo.run("k", a, emit) == memo.run("k", b, emit), a.rules == b.rules
    (True, True)
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Tuple

from .ir import Expr
from .rule_sink import RuleSink

__all__ = ["EmissionMemo"]

_FRESH, _DEFINE = 0, 1


class _Recorder:
    """The sink as an emission sees it, recording its calls."""

    __slots__ = ("sink", "ops")

    def __init__(self, sink: RuleSink):
        self.sink = sink
        self.ops: List[tuple] = []

    def fresh(self, hint: str) -> str:
        name = self.sink.fresh(hint)
        self.ops.append((_FRESH, hint, name))
        return name

    def define(self, name: str, expr: Expr) -> None:
        self.sink.define(name, expr)
        self.ops.append((_DEFINE, name, expr))

    def can_replay(self, calls) -> bool:
        # (a memoized emission inside a recorded one: its replay is recorded too)
        return self.sink.can_replay(calls)


class EmissionMemo:
    """Key -> (result, sink calls) of an emission; at most ``max_entries`` (emptied when full)."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._memo: Dict[Hashable, Tuple[Optional[Expr], tuple, str]] = {}

    def __len__(self) -> int:
        return len(self._memo)

    def clear(self) -> None:
        self._memo.clear()

    def run(self, key: Hashable, sink: Optional[RuleSink],
            emit: Callable[[Optional[RuleSink]], Optional[Expr]], hint: str = "") -> Optional[Expr]:
        """``emit(sink)``, or its recorded result replayed on ``sink`` (see the module).
        ``hint``: what the emission derives its rule names from (a record that names rules is
        replayed only for the same hint)."""
        hit = self._memo.get(key)
        if hit is not None:
            out, ops, rec_hint = hit
            if not ops:
                return out
            if sink is not None and rec_hint == hint and sink.can_replay([(op[1], op[2]) for op in ops if op[0] == _FRESH]):
                for op in ops:
                    if op[0] == _FRESH:
                        sink.fresh(op[1])
                    else:
                        sink.define(op[1], op[2])
                return out
        if sink is None:
            out = emit(None)
            ops: tuple = ()
        else:
            rec = _Recorder(sink)
            out = emit(rec)
            ops = tuple(rec.ops)
        if len(self._memo) >= self.max_entries:
            self._memo.clear()
        self._memo[key] = (out, ops, hint)
        return out
