"""Embedding one grammar inside another: copy its rules under fresh names.

Front-ends that assemble a grammar from parts (structural tags, ``Grammar.union`` /
``Grammar.concat``, Lark's imported grammars) each hold a rule table being built; a part that
is itself a whole :class:`~xmask.grammar.ir.Grammar` (a JSON schema's, a regex's, an EBNF
text's) is copied in with every rule renamed, so two parts never share a rule name by accident.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> rules = {}
    >>> names = RuleNamer(rules)
    >>> ref = embed_grammar(rules, parse_ebnf('root ::= "a" b\\nb ::= "b"'), names, "tag")
    >>> ref, sorted(rules)
    (RuleRef(name='tag'), ['tag', 'tag_b'])
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

from ..errors import GrammarError
from .ir import EPSILON, Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq, TokenSet, node_kind

__all__ = ["RuleNamer", "combine_grammars", "embed_grammar", "map_leaves", "rename_refs"]


class RuleNamer:
    """Hands out rule names not yet used in ``rules`` (nor handed out before): ``hint``,
    then ``hint_1``, ``hint_2``...  Names keep to EBNF's rule-name characters."""

    def __init__(self, rules: Dict[str, Expr]):
        self._rules = rules
        self._taken = set(rules)

    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c in "_-" else "_" for c in hint) or "r"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "r_" + base
        name, k = base, 0
        while name in self._taken or name in self._rules:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name


def map_leaves(expr: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """``expr`` with every leaf (``Bytes``, ``CharClass``, ``RuleRef``, ``TokenSet``) ``x``
    replaced by ``fn(x)``; shared sub-expressions are rewritten once (converters share them
    freely)."""
    memo: Dict[int, Expr] = {}

    def walk(e: Expr) -> Expr:
        out = memo.get(id(e))
        if out is not None:
            return out
        t = node_kind(e)
        if t is Seq:
            out = Seq(tuple(walk(x) for x in e.items))
        elif t is Choice:
            out = Choice(tuple(walk(x) for x in e.items))
        elif t is Repeat:
            out = Repeat(walk(e.item), e.min, e.max)
        elif t is RuleRef or t is Bytes or t is CharClass or isinstance(e, TokenSet):
            out = fn(e)
        else:
            raise TypeError(f"not a grammar expression: {e!r}")
        memo[id(e)] = out
        return out

    out = walk(expr)
    walk = None  # noqa: F841  (a recursive closure: drop the cycle now, not in a GC pass)
    return out


def rename_refs(expr: Expr, names: Dict[str, str]) -> Expr:
    """``expr`` with every ``RuleRef(a)`` replaced by ``RuleRef(names[a])``."""
    return map_leaves(expr, lambda e: RuleRef(names[e.name]) if type(e) is RuleRef else e)


def embed_grammar(rules: Dict[str, Expr], grammar: Grammar, namer: RuleNamer,
                  hint: str, captures: Optional[Dict[str, str]] = None,
                  budgets: Optional[Dict[str, int]] = None) -> RuleRef:
    """Copy every rule of ``grammar`` into ``rules`` under fresh names (its root becomes
    ``hint`` or ``hint_N``, another rule ``r`` becomes ``<root name>_r``) and return a
    reference to the copied root.  ``captures`` / ``budgets``: receive the copied rules'
    capture names and token budgets."""
    names: Dict[str, str] = {}
    root = grammar.root
    names[root] = namer.fresh(hint)
    for name, _ in grammar:
        if name != root:
            names[name] = namer.fresh(f"{names[root]}_{name}")
    for name, expr in grammar:
        rules[names[name]] = rename_refs(expr, names)
    if captures is not None:
        for name, capture in grammar.captures.items():
            captures[names[name]] = capture
    if grammar.budgets:
        if budgets is None:
            raise GrammarError("a grammar with a token budget (max_tokens over text) cannot be "
                               "embedded here", rule=next(iter(grammar.budgets)))
        for name, n in grammar.budgets.items():
            budgets[names[name]] = n
    return RuleRef(names[root])


def combine_grammars(kind: str, grammars: Sequence[Grammar]) -> Grammar:
    """The ``"union"`` (``root ::= g1 | g2 | ...``) or ``"concat"`` (``root ::= g1 g2 ...``) of
    ``grammars``, each part's rules copied under fresh names (``Grammar.union`` /
    ``Grammar.concat``).  The union of no grammar is an error; their concatenation is the
    empty string.

    Example::

        >>> from xmask.grammar.ebnf import parse_ebnf
        >>> print(combine_grammars("concat", [parse_ebnf('root ::= "a"'), parse_ebnf('root ::= "b"')]))
        root ::= root_1 root_2
        root_1 ::= "a"
        root_2 ::= "b"
    """
    for i, g in enumerate(grammars):
        if not isinstance(g, Grammar):
            raise TypeError(f"Grammar.{kind}() takes Grammar objects; argument {i} is {type(g).__name__}")
    if kind == "union" and not grammars:
        raise GrammarError("Grammar.union() needs at least one grammar (the union of none matches nothing)")
    rules: Dict[str, Expr] = {"root": EPSILON}
    namer = RuleNamer(rules)
    captures: Dict[str, str] = {}
    budgets: Dict[str, int] = {}
    refs = tuple(embed_grammar(rules, g, namer, "root", captures, budgets) for g in grammars)
    if len(refs) == 1:
        rules["root"] = refs[0]
    elif refs:
        rules["root"] = Choice(refs) if kind == "union" else Seq(refs)
    return Grammar(rules, root="root", captures=captures, budgets=budgets)
