"""XGrammar's rule attributes ``name[max_chars=n] ::= ...`` / ``name[max_tokens=n] ::= ...``,
lowered exactly to bounded rules.

``max_chars=n``: the rule matches only strings of at most ``n`` characters (code points).
``max_tokens=n``: the rule consumes at most ``n`` tokens; xmask lowers it when the rule
consumes nothing but whole tokens (``Token`` / ``ExcludeToken``, XGrammar's ``any_tokens``
shape), and keeps a text rule of at most ``n`` bytes unchanged (a token counts only if it
starts inside the rule's match, as in XGrammar, so such a budget never binds).  Any other text
rule keeps its body and gets a *runtime* token budget (``Grammar.budgets``): the compiler
never inlines it and the matcher counts the tokens read inside each occurrence (see
``xmask/runtime/_stack_budget.pyx``).  ``max_tokens=0`` on a text rule raises (the rule could only
read the rest of the token it starts in, which no cached mask can know), and so does a
``max_chars`` rule that uses a budgeted rule.

The lowering unfolds the rule (and every rule it uses) with a budget: a state is a set of
"what remains to match" configurations plus the units used so far; one new rule per reachable
state, so the result is exact and its size is about (states of the rule) x (n + 1).  When the
rule can never exceed the budget the attribute changes nothing and the rule is kept as is.

Deliberate difference: XGrammar 0.2.8 *relaxes* the budget when the rule cannot end where the
budget runs out (it warns, then lets the rule run on to its next possible end); xmask keeps the
budget: ``x[max_chars=3] ::= [a-z]{4,}`` matches nothing in xmask, ``"abcd"`` in XGrammar.
A rule whose unfolding is not finite (left recursion) or too large raises
:class:`~xmask.errors.GrammarError` naming the rule and the attribute.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> print(parse_ebnf('root[max_chars=2] ::= [a-z]*'))
    root ::= "" | [a-z] root_c1
    root_c1 ::= "" | [a-z] root_c2
    root_c2 ::= ""
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from ..errors import GrammarError, GrammarLimitError
from .ir import (EPSILON, MAX_CODE_POINT, SURROGATES, Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq,
                 TokenSet, complement_ranges, iter_refs, node_kind)

__all__ = ["apply_rule_attributes", "limit_rule"]

_MAX_CONF_LEN = 4096
_MAX_WORK = 200_000
_UNIVERSE = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE_POINT))


def _units(kind: str):
    return TokenSet if kind == "max_tokens" else (Bytes, CharClass)


class _Unfolder:
    def __init__(self, rules: Dict[str, Expr], rule: str, kind: str, where: str):
        self.rules = rules
        self.rule = rule
        self.kind = kind
        self.where = where
        self.work = 0

    def fail(self, why: str) -> GrammarError:
        return GrammarError(f"{self.kind} on rule '{self.rule}' ({self.where}): {why}", rule=self.rule)

    def is_unit(self, e) -> bool:
        t = node_kind(e)
        if self.kind == "max_tokens":
            if t is TokenSet:
                return True
            if t is Bytes or t is CharClass:
                raise self.fail("the rule matches text, and xmask counts tokens only for rules made of "
                                "whole tokens (Token/ExcludeToken): a runtime token budget is not available")
            return False
        if t is Bytes:
            try:
                e.data.decode("utf-8")
            except UnicodeDecodeError:
                raise self.fail("the rule matches bytes that are not UTF-8 text") from None
            return True
        if t is CharClass:
            if e.byte_level:
                raise self.fail("the rule matches raw bytes, whose characters cannot be counted")
            return True
        if t is TokenSet:
            raise self.fail("the rule matches whole tokens, whose characters depend on the tokenizer")
        return False

    def closure(self, conf: tuple) -> frozenset:
        """The configurations ``conf`` can become without consuming anything, each either
        empty (the rule may end) or headed by a unit."""
        out = set()
        seen = {conf}
        stack = [conf]
        while stack:
            c = stack.pop()
            self.work += 1
            if self.work > _MAX_WORK:
                raise GrammarLimitError(f"{self.kind} on rule '{self.rule}' ({self.where}): the bounded "
                                        "rule would be too large", rule=self.rule)
            if not c:
                out.add(c)
                continue
            h, rest = c[0], c[1:]
            if self.is_unit(h):
                out.add(c)
                continue
            t = node_kind(h)
            if t is Seq:
                nxt = [h.items + rest]
            elif t is Choice:
                nxt = [(alt,) + rest for alt in h.items]
            elif t is RuleRef:
                nxt = [(self.rules[h.name],) + rest]
            elif t is Repeat:
                if h.max == 0:
                    nxt = [rest]
                else:
                    more = (Repeat(h.item, max(h.min - 1, 0), None if h.max is None else h.max - 1),)
                    nxt = [(h.item,) + more + rest] + ([rest] if h.min == 0 else [])
            else:
                raise self.fail(f"cannot bound a {t.__name__}")
            for n in nxt:
                if len(n) > _MAX_CONF_LEN:
                    raise self.fail("the rule is left-recursive (its unfolding never consumes a unit)")
                if n not in seen:
                    seen.add(n)
                    stack.append(n)
        return frozenset(out)

    def step(self, conf: tuple) -> Tuple[Expr, tuple]:
        """(the first unit of ``conf``'s head, what remains after it)."""
        h, rest = conf[0], conf[1:]
        if type(h) is Bytes:
            text = h.data.decode("utf-8")
            if len(text) > 1:
                return Bytes(text[0].encode("utf-8")), (Bytes(text[1:].encode("utf-8")),) + rest
        return h, rest


def limit_rule(rules: Dict[str, Expr], rule: str, kind: str, n: int, fresh_rule: Callable[[str], str],
               where: str = "") -> None:
    """Replace ``rules[rule]`` by its strings of at most ``n`` units (``kind`` is
    ``"max_chars"`` or ``"max_tokens"``), adding the helper rules to ``rules``."""
    u = _Unfolder(rules, rule, kind, where)
    start = u.closure((rules[rule],))
    layers: List[Dict[frozenset, None]] = [{start: None}]
    edges: Dict[Tuple[frozenset, int], List[Tuple[Expr, frozenset]]] = {}
    over_budget = False
    for c in range(n + 1):
        nxt: Dict[frozenset, None] = {}
        for state in layers[c]:
            out = []
            for conf in sorted(state, key=repr):
                if not conf:
                    continue
                if c == n:
                    over_budget = True
                    break
                unit, rest = u.step(conf)
                target = u.closure(rest)
                out.append((unit, target))
                nxt[target] = None
            edges[(state, c)] = out
        if c < n:
            layers.append(nxt)
    if not over_budget:
        return  # the rule never exceeds the budget: nothing to bound
    # Emit from the last layer back, sharing one rule among states with the same body (the
    # states near the budget's end mostly only differ in what they can no longer reach).
    names: Dict[Tuple[frozenset, int], str] = {}
    by_body: Dict[Expr, str] = {}
    emitted: List[Tuple[str, Expr]] = []
    for c in range(len(layers) - 1, -1, -1):
        for state in sorted(layers[c], key=repr):
            alts: List[Expr] = [EPSILON] if () in state else []
            alts += _merged_edges([(unit, names[(target, c + 1)]) for unit, target in edges[(state, c)]])
            if not alts:
                alts = [CharClass(())]  # no string fits the budget here
            body = alts[0] if len(alts) == 1 else Choice(tuple(alts))
            if c == 0 and state == start:
                rules[rule] = body
                names[(state, c)] = rule
                continue
            name = by_body.get(body)
            if name is None:
                name = by_body[body] = fresh_rule(f"{rule}_{'c' if kind == 'max_chars' else 't'}{c}")
                emitted.append((name, body))
            names[(state, c)] = name
    for name, body in reversed(emitted):  # in budget order
        rules[name] = body


def _merged_edges(edges: List[Tuple[Expr, str]]) -> List[Expr]:
    """``unit target`` alternatives, one per target where the units are characters (their
    classes united)."""
    chars: Dict[str, List[Tuple[int, int]]] = {}
    out: List[Expr] = []
    for unit, target in edges:
        if type(unit) is CharClass and not unit.byte_level:
            ranges = list(unit.positive_ranges())
        elif type(unit) is Bytes:
            cp = ord(unit.data.decode("utf-8"))
            ranges = [(cp, cp)]
        else:
            out.append(Seq((unit, RuleRef(target))))
            continue
        if target not in chars:
            out.append(target)  # placeholder, filled below
            chars[target] = []
        chars[target] += ranges
    for i, item in enumerate(out):
        if type(item) is str:
            rs = CharClass(tuple(chars[item])).ranges
            rest = complement_ranges(rs, _UNIVERSE)
            if len(rs) == 1 and rs[0][0] == rs[0][1]:
                unit = Bytes(chr(rs[0][0]).encode("utf-8"))
            else:  # the shorter spelling: [^<] rather than [\x00-;=-\uD7FF\uE000-\U0010FFFF]
                unit = CharClass(rest, negated=True) if len(rest) < len(rs) else CharClass(rs)
            out[i] = Seq((unit, RuleRef(item)))
    return out


def apply_rule_attributes(rules: Dict[str, Expr], attributes: Dict[str, Dict[str, Tuple[object, int]]],
                          fresh_rule: Callable[[str], str], line_col,
                          budgets: Optional[Dict[str, int]] = None) -> None:
    """Lower every ``max_chars`` / ``max_tokens`` attribute in place (``temperature`` does
    not change the language and is dropped); a text rule's ``max_tokens`` goes to
    ``budgets`` (rule -> n, enforced at run time)."""
    bounded = {}
    for rule, attrs in attributes.items():
        kinds = [k for k in ("max_chars", "max_tokens") if k in attrs]
        if len(kinds) == 2:
            line, col = line_col(attrs["max_tokens"][1])
            raise GrammarError(f"rule '{rule}' has both max_chars and max_tokens (line {line}, column {col}); "
                               "xmask supports one of them per rule", rule=rule)
        if kinds:
            bounded[rule] = (kinds[0],) + attrs[kinds[0]]
    # inner bounded rules first: an outer rule's unfolding must see their bounded bodies
    reach = {r: _reachable(rules, r) for r in bounded}
    order: List[str] = []
    pending = set(bounded)
    while pending:
        ready = [r for r in bounded if r in pending and not (reach[r] & (pending - {r}))]
        if not ready:
            r = sorted(pending)[0]
            raise GrammarError(f"rule '{r}' and another rule with a max_chars/max_tokens attribute use "
                               "each other; xmask cannot bound such mutually recursive rules", rule=r)
        for r in ready:
            order.append(r)
            pending.discard(r)
    runtime: Dict[str, int] = {}
    for rule in order:
        kind, n, pos = bounded[rule]
        if kind == "max_tokens" and _text_budget_never_binds(rules, rule, n):
            continue
        line, col = line_col(pos)
        where = f"line {line}, column {col}"
        if kind == "max_tokens" and _matches_text(rules, rule):
            if n == 0:
                raise GrammarError(f"max_tokens=0 on rule '{rule}' ({where}), which matches text: "
                                   "xmask needs a token budget of at least 1 there", rule=rule)
            runtime[rule] = n
            continue
        inner = sorted(reach[rule] & set(runtime))
        if inner:
            raise GrammarError(f"{kind} on rule '{rule}' ({where}) uses rule '{inner[0]}', which has a "
                               "runtime token budget (max_tokens over text); xmask cannot bound both",
                               rule=rule)
        limit_rule(rules, rule, kind, n, fresh_rule, where)
    if runtime:
        if budgets is None:
            rule = next(iter(runtime))
            raise GrammarError(f"max_tokens on rule '{rule}' matches text and needs a runtime token "
                               "budget, which this grammar source cannot carry", rule=rule)
        budgets.update(runtime)


def _matches_text(rules: Dict[str, Expr], rule: str) -> bool:
    """Whether ``rule`` (or a rule it uses) reads bytes, not only whole tokens."""
    seen = {rule}
    stack = [rules[rule]]
    while stack:
        e = stack.pop()
        t = node_kind(e)
        if t is Bytes and e.data or t is CharClass:
            return True
        if t is Seq or t is Choice:
            stack.extend(e.items)
        elif t is Repeat:
            stack.append(e.item)
        elif t is RuleRef and e.name not in seen:
            seen.add(e.name)
            stack.append(rules[e.name])
    return False


def _text_budget_never_binds(rules: Dict[str, Expr], rule: str, n: int) -> bool:
    # A token counts for the rule when it starts inside the rule's match (XGrammar 0.2.8), so
    # the budget can only bind once the rule has read n + 1 bytes: a text rule of at most n
    # bytes is unchanged by it (exact).  Longer text needs a runtime budget (the unfolding
    # raises for text).
    memo: Dict[str, object] = {}

    def longest(e) -> Optional[int]:  # None: unbounded (a cycle or an unbounded repeat)
        t = node_kind(e)
        if t is Bytes:
            return len(e.data)
        if t is CharClass:
            ranges = e.positive_ranges()
            top = ranges[-1][1] if ranges else 0
            return 1 if e.byte_level or top < 0x80 else 2 if top < 0x800 else 3 if top < 0x10000 else 4
        if t is TokenSet:
            return None  # whole tokens in a text rule: not this case
        if t is Seq:
            total = 0
            for x in e.items:
                k = longest(x)
                if k is None:
                    return None
                total += k
            return total
        if t is Choice:
            best = 0
            for x in e.items:
                k = longest(x)
                if k is None:
                    return None
                best = max(best, k)
            return best
        if t is Repeat:
            k = longest(e.item)
            return None if k is None or (e.max is None and k > 0) else k * (e.max or 0)
        if t is RuleRef:
            if e.name in memo:
                return memo[e.name]  # in progress (a cycle): None
            memo[e.name] = None
            memo[e.name] = longest(rules[e.name])
            return memo[e.name]
        return None

    k = longest(RuleRef(rule))
    return k is not None and k <= n


def _reachable(rules: Dict[str, Expr], rule: str) -> set:
    seen = set()
    stack = [rule]
    while stack:
        for ref in iter_refs(rules[stack.pop()]):
            if ref not in seen:
                seen.add(ref)
                stack.append(ref)
    return seen
