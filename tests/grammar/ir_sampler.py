"""Random strings of a grammar IR (a test helper): sample sentences of a Grammar and mutate
them, to compare two implementations on strings both inside and just outside the language."""

from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet

_INF = float("inf")


class NoText(Exception):
    """The grammar needs a whole-token element (no text spells it) or has no string."""


def _shortest(rules):
    """(rule -> length of its shortest string, the same for any expression): a fixpoint, used
    to steer the sampler towards ending once it is deep enough."""
    best = {r: _INF for r in rules}

    def length(e):
        t = type(e)
        if t is Bytes:
            return len(e.data)
        if t is CharClass:
            return 1 if e.positive_ranges() else _INF
        if t is Seq:
            return sum(length(x) for x in e.items)
        if t is Choice:
            return min(length(x) for x in e.items)
        if t is Repeat:
            return 0 if e.min == 0 else e.min * length(e.item)
        if t is RuleRef:
            return best[e.name]
        return _INF  # TokenSet

    changed = True
    while changed:
        changed = False
        for r, e in rules.items():
            v = length(e)
            if v < best[r]:
                best[r] = v
                changed = True
    return length


def sample(grammar, rng, depth_budget=60, size_budget=400) -> str:
    """A random string of ``grammar`` (mostly printable ASCII where a class allows it)."""
    rules = grammar.rules
    length = _shortest(rules)
    out = []

    def gen(e, depth):
        t = type(e)
        if t is Bytes:
            out.append(e.data)
        elif t is CharClass:
            lo, hi = rng.choice(e.positive_ranges())
            if rng.random() < 0.7 and max(lo, 0x20) <= min(hi, 0x7E):
                lo, hi = max(lo, 0x20), min(hi, 0x7E)
            out.append(chr(rng.randint(lo, hi)).encode("utf-8"))
        elif t is Seq:
            for x in e.items:
                gen(x, depth)
        elif t is Choice:
            items = [x for x in e.items if length(x) != _INF]
            if not items:
                raise NoText()
            if depth > depth_budget or sum(map(len, out)) > size_budget:
                items = [min(items, key=length)]
            gen(rng.choice(items), depth + 1)
        elif t is Repeat:
            hi = e.min + 3 if e.max is None else min(e.max, e.min + 3)
            for _ in range(e.min if depth > depth_budget else rng.randint(e.min, hi)):
                gen(e.item, depth + 1)
        elif t is RuleRef:
            gen(rules[e.name], depth + 1)
        elif t is TokenSet:
            raise NoText()
        else:
            raise TypeError(f"not a grammar expression: {e!r}")

    gen(rules[grammar.root], 0)
    return b"".join(out).decode("utf-8")


def near_misses(s: str, rng, alphabet='{}"<>x1 ,:\n'):
    """Two edits of ``s``: one character deleted, one inserted."""
    if not s:
        return [rng.choice(alphabet)]
    i = rng.randrange(len(s))
    return [s[:i] + s[i + 1:], s[:i] + rng.choice(alphabet) + s[i:]]
