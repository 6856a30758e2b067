"""Grammar IR: the one representation every front-end (EBNF, JSON Schema, regex) produces.

A grammar is an ordered mapping of rule names to expressions (:class:`Grammar`).  The
expressions are the immutable, hashable trees of :mod:`.ir_expr` (``Bytes``, ``CharClass``,
``Seq``, ``Choice``, ``RuleRef``, ``Repeat``, ``TokenSet``), re-exported here.

This module is the bottom of the grammar layer: it imports no front end.  The public
``xmask.Grammar`` with XGrammar's ``from_ebnf`` / ``from_json_schema`` / ... constructors is a
subclass, in :mod:`xmask.grammar_api`, above the front ends.

Example::

    >>> g = Grammar({"root": Seq((Bytes(b"a"), Repeat(RuleRef("b"), 0, None))),
    ...              "b": CharClass(((48, 57),))}, root="root")
    >>> print(g)
    root ::= "a" b*
    b ::= [0-9]
"""

from __future__ import annotations

from typing import Dict, Iterator, Optional, Tuple

from ..errors import GrammarError
from ..serialization.format import dump_document, format_error, load_document
from ..serialization.grammar_codec import grammar_to_body, rules_from_body
from ._ir_walk import first_undefined_ref
from .ir_expr import (  # noqa: F401  (re-exported: the IR is nodes + Grammar)
    EPSILON,
    MAX_CODE_POINT,
    SURROGATES,
    Bytes,
    CharClass,
    Choice,
    Expr,
    Repeat,
    RuleRef,
    Seq,
    TokenSet,
    WordComplement,
    complement_ranges,
    intersect_ranges,
    iter_nodes,
    iter_refs,
    make_choice,
    make_seq,
    merge_ranges,
    node_kind,
)
from .printer import grammar_to_ebnf

__all__ = [
    "Bytes",
    "CharClass",
    "Choice",
    "EPSILON",
    "Expr",
    "Grammar",
    "MAX_CODE_POINT",
    "Repeat",
    "RuleRef",
    "SURROGATES",
    "Seq",
    "TokenSet",
    "WordComplement",
    "complement_ranges",
    "intersect_ranges",
    "iter_nodes",
    "iter_refs",
    "make_choice",
    "grammar_from_body",
    "make_seq",
    "merge_ranges",
    "node_kind",
]


class Grammar:
    """An immutable grammar: ordered ``rules`` (name -> Expr) and the ``root`` rule name.

    Every front end builds one; ``str(grammar)`` prints normalized EBNF that parses back to an
    equivalent grammar; ``serialize_json`` / ``deserialize_json`` and pickling keep it exactly.
    The public ``xmask.Grammar`` (:mod:`xmask.grammar_api`) is this class plus XGrammar's
    constructors (``from_ebnf``...) and ``union`` / ``concat``.

    Example::

        >>> g = Grammar({"root": Choice((Bytes(b"yes"), Bytes(b"no")))})
        >>> print(g)
        root ::= "yes" | "no"
    """

    __slots__ = ("_rules", "_root", "_captures", "_budgets")

    def __init__(self, rules: Dict[str, Expr], root: str = "root",
                 captures: Optional[Dict[str, str]] = None,
                 budgets: Optional[Dict[str, int]] = None):
        if root not in rules:
            raise GrammarError(f"root rule '{root}' is not defined", rule=root)
        self._rules = dict(rules)
        self._root = root
        # rule -> capture name (XGrammar's ``rule[capture="name"]``), in rule order
        self._captures = {r: captures[r] for r in self._rules if r in captures} if captures else {}
        # rule -> token budget (``rule[max_tokens=n]`` over text, enforced at run time)
        self._budgets = {r: int(budgets[r]) for r in self._rules if r in budgets} if budgets else {}
        missing = first_undefined_ref(self._rules)
        if missing is not None:
            raise GrammarError(f"rule '{missing[1]}' is referenced but not defined", rule=missing[0])

    @property
    def rules(self) -> Dict[str, Expr]:
        return dict(self._rules)

    @property
    def root(self) -> str:
        return self._root

    @property
    def captures(self) -> Dict[str, str]:
        """Rule name -> capture name for the rules with a ``capture`` attribute (their
        completions are what ``GrammarMatcher.get_captures`` reports)."""
        return dict(self._captures)

    @property
    def budgets(self) -> Dict[str, int]:
        """Rule name -> token budget for the rules with a ``max_tokens`` attribute that the
        compiler could not lower (text rules): the matcher enforces them token by token (see
        ``xmask.grammar.rule_attributes``).

        Example::

            >>> from xmask.grammar.ebnf import parse_ebnf
            >>> parse_ebnf('root ::= "(" a ")"\\na[max_tokens=3] ::= [a-z]*').budgets
            {'a': 3}
        """
        return dict(self._budgets)

    @property
    def root_rule_name(self) -> str:
        return self._root

    def __iter__(self) -> Iterator[Tuple[str, Expr]]:
        return iter(self._rules.items())

    def __len__(self) -> int:
        return len(self._rules)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Grammar) and self._root == other._root
                and self._rules == other._rules and self._captures == other._captures
                and self._budgets == other._budgets)

    def __hash__(self) -> int:
        return hash((self._root, tuple(self._rules.items()), tuple(self._captures.items()),
                     tuple(self._budgets.items())))

    def __str__(self) -> str:
        return grammar_to_ebnf(self)

    def __repr__(self) -> str:
        return f"<Grammar root={self._root!r} rules={len(self._rules)}>"

    def serialize_json(self) -> str:
        """This grammar as a JSON string (XGrammar's name and role), exact for every node kind
        (raw-byte classes and non-UTF-8 literals included), in the versioned, checksummed
        format of :mod:`xmask.serialization.format`.

        Example::

            >>> g = Grammar({"root": Seq((Bytes(b"a"), Repeat(CharClass(((48, 57),)), 1, None)))})
            >>> Grammar.deserialize_json(g.serialize_json()) == g
            True
        """
        return dump_document("grammar", grammar_to_body(self))

    @classmethod
    def deserialize_json(cls, json_string: str) -> "Grammar":
        """Rebuild a grammar from :meth:`serialize_json` text.

        Raises ``DeserializeVersionError`` for another format version (both named) and
        ``DeserializeFormatError`` for corrupt, truncated or malformed data or another kind of
        object (the field and the problem named).

        Example::

            >>> Grammar.deserialize_json('{"__VERSION__": "v16"}')
            Traceback (most recent call last):
                ...
            xmask.errors.DeserializeVersionError: cannot deserialize Grammar: serialization version 'v16' in the data, but this xmask reads version 'xmask-v3'; serialize it again with this version
        """
        return grammar_from_body(load_document(json_string, "grammar"), "Grammar", cls)

    def __reduce__(self):
        # through the checked, versioned JSON form; a subclass (xmask.Grammar) unpickles as itself
        return (type(self).deserialize_json, (self.serialize_json(),))

    @classmethod
    def of(cls, grammar: "Grammar") -> "Grammar":
        """``grammar`` as an instance of ``cls`` (e.g. the public ``xmask.Grammar``): the same
        rules and root, shared, without checking them again; ``grammar`` itself when it is a
        ``cls`` already.

        Example::

            >>> import xmask
            >>> g = Grammar({"root": Bytes(b"a")})
            >>> p = xmask.Grammar.of(g)
            >>> isinstance(p, xmask.Grammar), p == g, Grammar.of(g) is g
            (True, True, True)
        """
        if isinstance(grammar, cls):
            return grammar
        out = object.__new__(cls)
        out._rules = grammar._rules
        out._root = grammar._root
        out._captures = grammar._captures
        out._budgets = grammar._budgets
        return out



def grammar_from_body(body, where: str, cls: type = Grammar) -> Grammar:
    """A ``cls`` (a :class:`Grammar` class) from the rule table of
    :func:`~xmask.serialization.grammar_codec.grammar_to_body`; malformed data, an undefined rule
    included, raises ``DeserializeFormatError`` naming its place (``where``: the body's path).

    Example::

        >>> from xmask.serialization.grammar_codec import grammar_to_body
        >>> g = Grammar({"root": RuleRef("x"), "x": Bytes(b"x")})
        >>> grammar_from_body(grammar_to_body(g), "Grammar") == g
        True
    """
    rules, root, captures, budgets = rules_from_body(body, where)
    try:
        return cls(rules, root=root, captures=captures, budgets=budgets)
    except GrammarError as exc:
        raise format_error(where, str(exc)) from None
