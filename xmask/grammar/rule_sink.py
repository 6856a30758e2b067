"""A collector of the named rules an emitted expression needs.

Front ends that lower an automaton or a schema to IR build some pieces as rules of their own
(a DFA state on a cycle, a shared subschema); :class:`RuleSink` hands out fresh, valid,
unique rule names (``fresh``) and keeps the definitions (``define``).

Example::

    >>> from xmask.grammar.ir import Bytes
    >>> sink = RuleSink()
    >>> a, b = sink.fresh("key: name"), sink.fresh("key: name")
    >>> a, b
    ('key_name', 'key_name_2')
    >>> sink.define(a, Bytes(b"x")); sorted(sink.rules)
    ['key_name']
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from ..errors import GrammarLimitError
from .ir import Expr

__all__ = ["RuleSink"]


class RuleSink:
    """Collects the extra rules an emitted expression needs (``fresh`` + ``define``)."""

    def __init__(self, rules: Optional[Dict[str, Expr]] = None, prefix: str = "r",
                 max_rules: Optional[int] = None):
        self.rules: Dict[str, Expr] = {} if rules is None else rules
        self._used = set(self.rules)
        self._next: Dict[str, int] = {}
        self.prefix = prefix
        self.max_rules = max_rules

    def fresh(self, hint: str) -> str:
        """A rule name made from ``hint`` that no earlier call returned (nor ``rules`` holds)."""
        if self.max_rules is not None and len(self._used) >= self.max_rules:
            # checked per rule: one schema location can emit very many (e.g. DFA emission)
            raise GrammarLimitError(f"JSON Schema grammar exceeds {self.max_rules} rules "
                                    "(CompileLimits.max_schema_rules)")
        base = _CLEAN_NAMES.get(hint) or _clean_name(hint) or self.prefix
        if base not in self._used:
            # the usual case; no earlier call made a name from ``base`` (it would be used), so
            # there is no probe position to record (the default is 1)
            self._used.add(base)
            return base
        name, i = base, self._next.get(base, 1)
        while name in self._used:  # resumes where the last probe for this base stopped
            i += 1
            name = f"{base}_{i}"
        self._next[base] = i
        self._used.add(name)
        return name

    def can_replay(self, calls) -> bool:
        """Whether ``fresh(hint)`` for each ``(hint, name)`` of ``calls``, in order, would
        return exactly ``name`` now (each name the clean form of its hint and unused, within
        ``max_rules``): a recorded emission can then be replayed name for name
        (:mod:`.emission_memo`).

        Example::

            >>> sink = RuleSink()
            >>> sink.can_replay([("a", "a")]), sink.fresh("a"), sink.can_replay([("a", "a")])
            (True, 'a', False)
        """
        if self.max_rules is not None and len(self._used) + len(calls) > self.max_rules:
            return False
        seen = set()
        for hint, name in calls:
            if name in self._used or name in seen or (_clean_name(hint) or self.prefix) != name:
                return False
            seen.add(name)
        return True

    def define(self, name: str, expr: Expr) -> None:
        """Record the body of rule ``name``."""
        self.rules[name] = expr


_NAME_JUNK = re.compile(r"[^A-Za-z0-9_-]+")


def _clean_name(hint: str) -> str:
    s = _CLEAN_NAMES.get(hint)
    if s is None:
        if len(_CLEAN_NAMES) >= 4096:
            _CLEAN_NAMES.clear()  # bounded (hints repeat: state and member names)
        s = _CLEAN_NAMES[hint] = _clean_name_uncached(hint)
    return s


_CLEAN_NAMES: Dict[str, str] = {}


def _clean_name_uncached(hint: str) -> str:
    # the usual hint (a member name) is clean already: ASCII letters, digits and single
    # underscores inside
    if (len(hint) <= 60 and hint.isascii() and hint.isidentifier() and hint[0] != "_"
            and hint[-1] != "_" and "__" not in hint):
        return hint
    s = _NAME_JUNK.sub("_", hint).strip("_-")
    s = re.sub(r"__+", "_", s)
    if s and not (s[0].isalpha() or s[0] == "_"):
        s = "r_" + s
    return s[:60]

