"""Which rules a lazy compile's first part builds: those the first tokens can reach.

A JSON Schema's first part (:mod:`.lazy_schema`) must *generate* every rule that cannot wait
(its errors and its productivity are the compile's), but its automaton needs only the rules a
first token can step into.  :func:`first_part_rules` walks the grammar from the root, tracking a
lower bound of how many bytes come before each rule reference, and turns every generated rule
that is only referenced ``horizon`` bytes or more from the start into a stub, like a rule still
pending.  Nothing here decides a mask: a token that does reach a stub sets the automaton's
stub flag and the matcher builds the whole grammar (the horizon only trades first-part size
against how often that happens).  The offsets are lower bounds (a cycle, or a helper rule not
measured yet, counts 0 bytes), so a bound can only make the first part larger, never wrong.

A pending rule referenced within :data:`NEAR_HORIZON` bytes is reported (``near``): a first
token would likely step into its stub and cost the whole build, so the lazy compile generates
it first.

A generated rule is stubbed only when it is productive (a stub stands for a rule with some
sentence: the automaton prunes members whose value has none).  Its placeholder
(``lazy_schema.partial_grammar``) claims no more than that: a value rule's (a JSON value, never
empty, whose first byte is ASCII) is one ASCII byte, any other rule's (a key, a member chain,
possibly empty, possibly starting with any byte) one byte of any value, so that no lookahead
rejects a token the real rule might take and every path past the rule steps into the stub.

Example::

    >>> from xmask.grammar.ir import Bytes, RuleRef, Seq
    >>> rules = {"root": Seq((Bytes(b'{"a":'), RuleRef("va"), Bytes(b"}"))),
    ...          "va": Seq((Bytes(b"["), RuleRef("vb"), Bytes(b"]"))), "vb": Bytes(b"1")}
    >>> built, stubs, near = first_part_rules(rules, [], horizon=4)
    >>> sorted(built), sorted(stubs), near
    (['root'], ['va'], [])
    >>> sorted(first_part_rules(rules, [], horizon=8)[0])
    ['root', 'va', 'vb']
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from ..grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, node_kind
from ..grammar.ir_expr import WordComplement
from ._first_reach import productive_rule_names, walk_offsets

__all__ = ["first_part_rules", "walk_offsets_reference", "FIRST_HORIZON", "NEAR_HORIZON"]

# Bytes from the start within which rules are built.  Llama-3's longest JSON-structure
# tokens that open a value after the start (``{"``, ``[{"``, ``":"``, `` [\n``) are a few bytes;
# a token that reaches further only costs the whole build (the stub flag).
FIRST_HORIZON = 6
# Bytes from the start within which a pending value is reported (``near``): the tokens that
# step into a value right after the start are short structure (``[{``, ``["``, ``[[``, ``[{"``:
# an array's item is 1 byte in).  Further in, the bound is loose (an unmeasured key rule counts
# 0 bytes: a non-strict object's any-value rule looks 2 bytes in), a first token rarely spells
# a key, and generating such a value costs ~1 ms: on the bench sample, 2 leaves no first fill
# meeting a stub and generates no any-value rule.
NEAR_HORIZON = 2


def first_part_rules(rules: Dict[str, object], pending: Iterable[str], *,
                     horizon: Optional[int] = None, root: str = "root"
                     ) -> Tuple[Dict[str, object], List[str], List[str]]:
    """``(built, stubs, near)``: the generated rules the first part builds (name -> expression,
    the root first), the names it stubs (``pending`` ones it references and the generated
    rules cut at ``horizon``), and the ``pending`` ones among those referenced within
    :data:`NEAR_HORIZON` bytes (a first token may well step into them: generate them and
    ask again).
    ``rules``: the generated rules; ``pending``: rules not generated yet (a value each)."""
    if horizon is None:
        horizon = FIRST_HORIZON
    pending = set(pending)
    keep: Set[str] = set()  # rules that must be built although cut (not productive)
    productive = None
    while True:
        best, cut, met = walk_offsets(rules, pending, None, keep, horizon, root)
        cut -= best.keys()  # (reached within the horizon on another path)
        if not cut:
            break
        if productive is None:
            productive = productive_rule_names(rules, pending)
        dead = cut - productive
        if not dead:
            break
        keep |= dead  # built and walked: the automaton's pruning sees what they reject
    built = {n: rules[n] for n in best}
    stubs = sorted(cut | met.keys())
    near = sorted(n for n, at in met.items() if at < min(horizon, NEAR_HORIZON))
    return built, stubs, near


def walk_offsets_reference(rules, pending, values, keep, horizon, root):
    """The pure-Python twin of the compiled walk (``_first_reach.walk_offsets``, the tests'
    reference): the least offset found per rule to build, and the rules that may be cut (in
    ``values``, any with None) met only at the horizon or past it.  Rules are walked in order
    of offset (a bucket per offset, saturated at the horizon), so each is walked once, at its
    least offset."""
    best: Dict[str, int] = {root: 0}
    cut: Set[str] = set()
    met: Dict[str, int] = {}
    lens: Dict[str, int] = {}
    memo: Dict[int, int] = {}
    buckets: List[List[str]] = [[] for _ in range(horizon + 1)]
    buckets[0].append(root)
    walked: Set[str] = set()
    for off in range(horizon + 1):
        todo = buckets[off]
        while todo:
            name = todo.pop()
            if name in walked:
                continue
            walked.add(name)
            body = rules[name]
            for ref, at in _refs_at(body, off, horizon, lens, pending, memo):
                if ref in pending:
                    if met.get(ref, horizon + 1) > at:
                        met[ref] = at
                    continue
                if (at >= horizon and (values is None or ref in values) and ref not in keep
                        and ref != root):
                    cut.add(ref)
                elif best.get(ref, horizon + 1) > at:
                    best[ref] = at
                    buckets[at].append(ref)
            lens[name] = _min_len(body, lens, pending, horizon, memo)
    return best, cut, met


def _refs_at(expr, off: int, horizon: int, lens, pending, memo):
    """``(rule name, lower bound of the bytes before it)`` for the references in ``expr``
    starting ``off`` bytes in (offsets saturate at ``horizon``)."""
    out = []
    stack = [(expr, off)]
    seen = set()
    while stack:
        e, at = stack.pop()
        key = (id(e), at)
        if key in seen:
            continue
        seen.add(key)
        if type(e) is WordComplement:
            continue  # (no references; its expression is never built here)
        kind = node_kind(e)
        if kind is RuleRef:
            out.append((e.name, at))
        elif kind is Seq:
            for item in e.items:
                stack.append((item, at))
                if at < horizon:
                    at = min(horizon, at + _min_len(item, lens, pending, horizon, memo))
        elif kind is Choice:
            stack.extend((item, at) for item in e.items)
        elif kind is Repeat:
            if e.max != 0:
                stack.append((e.item, at))
    return out


def _min_len(e, lens, pending, horizon: int, memo: Dict[int, int]) -> int:
    """A lower bound of the bytes of any sentence of ``e``, capped at ``horizon``."""
    key = id(e)
    hit = memo.get(key)
    if hit is not None:
        return hit
    kind = node_kind(e)
    if type(e) is WordComplement:
        n = 0
    elif kind is Bytes:
        n = len(e.data)
    elif kind is CharClass:
        n = 1
    elif kind is RuleRef:
        n = 1 if e.name in pending else lens.get(e.name, 0)
    elif kind is Seq:
        n = 0
        for item in e.items:
            n += _min_len(item, lens, pending, horizon, memo)
            if n >= horizon:
                break
    elif kind is Choice:
        n = min((_min_len(item, lens, pending, horizon, memo) for item in e.items), default=0)
    elif kind is Repeat:
        n = e.min * _min_len(e.item, lens, pending, horizon, memo) if e.min else 0
    else:
        n = 0  # token sets, word complements: no bound claimed
    n = min(n, horizon)
    memo[key] = n
    return n
