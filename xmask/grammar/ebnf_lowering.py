"""Lowering of EBNF ``TagDispatch(...)`` / ``TokenTagDispatch(...)`` atoms into IR rules.

The parser leaves one placeholder rule per dispatch; this module replaces it with the rules
of "free text until a trigger, then the trigger's rule" built by
:mod:`xmask.grammar.free_text` (shared with structural tags).

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> g = parse_ebnf('root ::= TagDispatch(("<a>", a))\\na ::= "1</a>"')
    >>> sorted(g.rules)[:2]
    ['a', 'root']
"""

from __future__ import annotations

from typing import Callable, Dict

from ..errors import GrammarError
from .ebnf_builtins import TokenTagDispatchSpec
from .ir import Expr

__all__ = ["lower_dispatches"]


def lower_dispatches(rules: Dict[str, Expr], dispatches: Dict[str, object], fresh_rule: Callable[[str], str],
                     line_col) -> None:
    """Replace each placeholder rule in ``dispatches`` by its lowered free-text rules."""
    try:
        from . import free_text
    except ImportError:  # pragma: no cover - until the free-text module is merged
        free_text = None
    for name, spec in dispatches.items():
        line, col = line_col(spec.pos)
        kind = "TokenTagDispatch" if isinstance(spec, TokenTagDispatchSpec) else "TagDispatch"
        if free_text is None:
            raise GrammarError(f"{kind}(...) at line {line}, column {col} is not supported yet "
                               "(free-text lowering is missing)", rule=name)
        rules[name] = free_text.lower_tag_dispatch(
            rules, spec.pairs, loop_after_dispatch=spec.loop_after_dispatch, excludes=spec.excludes,
            tokens=kind == "TokenTagDispatch", fresh_rule=fresh_rule)
