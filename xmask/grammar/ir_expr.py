"""The expressions of the grammar IR: immutable, hashable trees of seven node kinds.

* ``Bytes(b"...")``          a literal byte string (``Bytes(b"")`` is the empty string / epsilon)
* ``CharClass(ranges, negated)``  one UTF-8 encoded character whose code point lies in
  ``ranges`` (sorted, merged, inclusive ``(lo, hi)`` pairs); ``negated`` flips the set within
  ``[0, 0x10FFFF]`` minus surrogates.  A class whose ranges all lie in ``[0, 0xFF]`` may be
  flagged ``byte_level=True``: then it matches one raw *byte* instead of one UTF-8 character.
* ``Seq(items)``             concatenation (empty tuple = epsilon)
* ``Choice(items)``          alternation (at least one item)
* ``RuleRef(name)``          reference to another rule
* ``Repeat(item, min, max)`` ``item`` repeated ``min``..``max`` times (``max=None``: unbounded)
* ``TokenSet(ids, negated)``  one whole *token* (not bytes) whose id is in ``ids`` (sorted,
  unique, non-negative); ``negated`` flips the set within the vocabulary.  XGrammar's
  ``Token(...)`` / ``ExcludeToken(...)``: it matches at a token boundary only, and may name
  special tokens that no byte-level element ever allows.

Also here: the walks over an expression (:func:`iter_nodes`, :func:`iter_refs`), the
simplifying constructors every front end builds with (:func:`make_seq`, :func:`make_choice`)
and code point range arithmetic.  A whole grammar (a rule table) is :class:`~.ir.Grammar`;
:mod:`.ir` re-exports every name here.

Example::

    >>> make_seq([Bytes(b"a"), Seq((Bytes(b"b"), RuleRef("x")))])
    Seq(items=(Bytes(data=b'ab'), RuleRef(name='x')))
    >>> sorted(set(iter_refs(make_choice([RuleRef("x"), Repeat(RuleRef("y"), 0, None)]))))
    ['x', 'y']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Tuple, Union

__all__ = [
    "Bytes",
    "CharClass",
    "Choice",
    "EPSILON",
    "Expr",
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
    "make_seq",
    "merge_ranges",
    "node_kind",
]


MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


_set = object.__setattr__


class _Node:
    """Base of the node kinds: a node caches its hash (the value the dataclass would compute),
    as converters put deep trees in sets and dict keys again and again.  The cache is not
    part of the pickled state (string hashes differ between processes).  Each kind writes its
    fields in its own ``__init__`` (half the cost of the frozen dataclass one; converters
    build many thousands of nodes) with ``object.__setattr__``, never through ``__dict__``:
    the values then stay in the instance and no dict object is made per node (a third less
    time and memory per node, and half the objects the cyclic GC tracks)."""

    _FIELDS: Tuple[str, ...] = ()

    def _cached_hash(self) -> int:
        h = getattr(self, "_h", None)
        if h is None:
            h = hash(tuple([getattr(self, f) for f in self._FIELDS]))
            _set(self, "_h", h)
        return h

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_h"}


@dataclass(frozen=True, init=False)
class Bytes(_Node):
    data: bytes

    _FIELDS = ("data",)
    __hash__ = _Node._cached_hash

    def __init__(self, data: bytes):
        _set(self, "data", data)


@dataclass(frozen=True, init=False)
class CharClass(_Node):
    ranges: Tuple[Tuple[int, int], ...]
    negated: bool = False
    byte_level: bool = False

    _FIELDS = ("ranges", "negated", "byte_level")
    __hash__ = _Node._cached_hash

    def __init__(self, ranges: Tuple[Tuple[int, int], ...], negated: bool = False,
                 byte_level: bool = False):
        ranges = merge_ranges(ranges)
        _set(self, "ranges", ranges)
        _set(self, "negated", negated)
        _set(self, "byte_level", byte_level)
        limit = 0xFF if byte_level else MAX_CODE_POINT
        for lo, hi in ranges:
            if lo < 0 or hi > limit or lo > hi:
                raise ValueError(f"bad character range {lo:#x}-{hi:#x}")

    def positive_ranges(self) -> Tuple[Tuple[int, int], ...]:
        """The matched code points (or bytes) as sorted, merged inclusive ranges."""
        if self.byte_level:
            universe = ((0, 0xFF),)
        else:
            universe = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE_POINT))
        base = complement_ranges(self.ranges, universe) if self.negated else self.ranges
        return intersect_ranges(base, universe)


@dataclass(frozen=True, init=False)
class Seq(_Node):
    items: Tuple["Expr", ...]

    _FIELDS = ("items",)
    __hash__ = _Node._cached_hash

    def __init__(self, items: Tuple["Expr", ...]):
        _set(self, "items", items)


@dataclass(frozen=True, init=False)
class Choice(_Node):
    items: Tuple["Expr", ...]

    _FIELDS = ("items",)
    __hash__ = _Node._cached_hash

    def __init__(self, items: Tuple["Expr", ...]):
        _set(self, "items", items)


@dataclass(frozen=True, init=False)
class RuleRef(_Node):
    name: str

    _FIELDS = ("name",)
    __hash__ = _Node._cached_hash

    def __init__(self, name: str):
        _set(self, "name", name)


@dataclass(frozen=True, init=False)
class Repeat(_Node):
    item: "Expr"
    min: int
    max: Optional[int]

    _FIELDS = ("item", "min", "max")
    __hash__ = _Node._cached_hash

    def __init__(self, item: "Expr", min: int, max: Optional[int]):  # noqa: A002 (field names)
        _set(self, "item", item)
        _set(self, "min", min)
        _set(self, "max", max)
        if min < 0 or (max is not None and max < min):
            raise ValueError(f"bad repeat bounds {{{min},{max}}}")


@dataclass(frozen=True, init=False)
class TokenSet(_Node):
    ids: Tuple[int, ...]
    negated: bool = False

    _FIELDS = ("ids", "negated")
    __hash__ = _Node._cached_hash

    def __init__(self, ids, negated: bool = False):
        ids = tuple(sorted(set(ids)))
        for i in ids:
            if type(i) is not int or i < 0:
                raise ValueError(f"bad token id {i!r}: token ids are non-negative integers")
        _set(self, "ids", ids)
        _set(self, "negated", bool(negated))


class WordComplement(Choice):
    """The strings over ``alphabet`` (code point ranges) other than ``words``: a ``Choice``
    whose ``items`` are that language as a trie expression, built on first use.

    A JSON schema object that allows additional properties has one for its declared names
    (:func:`~.dfa_expr.word_complement_expr` makes them); over a MaskBench sample these
    expressions were half of all IR nodes.  The compiled walks (the reference check, the
    compiler's scans and size estimate, the NFA builder) read ``words`` and ``alphabet``
    instead, so a compile never builds the expression; anything else sees a ``Choice`` (its
    items built then) and an equal plain ``Choice`` compares and hashes equal.  Python code
    that dispatches on exact node types uses :func:`node_kind`.

    ``expand(words, alphabet)`` builds the expression (passed in by the maker: this module
    imports no front end).  ``words``: sorted distinct strings, ``alphabet``: sorted ranges.

    Example::

        >>> from xmask.grammar.dfa_expr import word_complement_expr
        >>> wc = word_complement_expr(["ab"], [(97, 98)], None)
        >>> type(wc).__name__, wc.words, wc == Choice(wc.items)
        ('WordComplement', ('ab',), True)
    """

    _FIELDS = ("items",)  # (equal to the plain Choice of its items, and hashed as one)

    def __init__(self, words: Tuple[str, ...], alphabet: Tuple[Tuple[int, int], ...], expand):
        _set(self, "words", words)
        _set(self, "alphabet", alphabet)
        _set(self, "expand", expand)

    def __getattr__(self, name):
        # only for attributes not set: ``items`` the first time, then it is an attribute too
        if name == "items":
            e = self.expand(self.words, self.alphabet)
            items = e.items if type(e) is Choice else (e,)
            _set(self, "items", items)
            return items
        raise AttributeError(name)

    def __eq__(self, other):
        if type(other) is WordComplement:
            # the expression is a function of the two (and different word sets, different
            # languages)
            return self.words == other.words and self.alphabet == other.alphabet
        if isinstance(other, Choice):
            return self.items == other.items
        return NotImplemented

    __hash__ = _Node._cached_hash


def node_kind(e) -> type:
    """The node class whose fields ``e`` has, for code that dispatches on exact types: a
    :class:`WordComplement` is a ``Choice``.

    Example::

        >>> node_kind(Seq(())) is Seq, node_kind(WordComplement((), ((97, 97),), None)) is Choice
        (True, True)
    """
    t = type(e)
    return Choice if t is WordComplement else t


Expr = Union[Bytes, CharClass, Seq, Choice, RuleRef, Repeat, TokenSet]

EPSILON = Seq(())



# the simplifying constructors run in C (their loops are a front end's most called code);
# _ir_build imports nothing of xmask and gets the node classes here
from ._ir_build import bind as _bind_nodes, make_choice, make_seq  # noqa: E402

_bind_nodes(Seq, Bytes, Choice, EPSILON)


def iter_nodes(expr: Expr, *, into_words: bool = True) -> Iterator[Expr]:
    """Yield every distinct sub-expression object of ``expr`` (itself included), each once.

    Sub-expression objects shared inside ``expr`` are visited once: converters share them
    freely, and walking such a DAG as a tree can take exponential time.  ``into_words=False``
    does not enter a :class:`WordComplement` (nor build its expression): a walk that looks
    for what only rules hold, such as references, finds nothing there.

    Example::

        >>> [type(e).__name__ for e in iter_nodes(Seq((Bytes(b"a"), RuleRef("b"))))]
        ['Seq', 'RuleRef', 'Bytes']
    """
    stack = [expr]
    seen = {id(expr)}
    while stack:
        e = stack.pop()
        yield e
        if isinstance(e, (Seq, Choice)):
            if not into_words and type(e) is WordComplement:
                continue
            items = e.items
        elif isinstance(e, Repeat):
            items = (e.item,)
        else:
            continue
        for item in items:
            if id(item) not in seen:
                seen.add(id(item))
                stack.append(item)


def iter_refs(expr: Expr) -> Iterator[str]:
    """Yield the rule names referenced inside ``expr`` (a name may repeat; shared
    sub-expressions are visited once, see :func:`iter_nodes`; a ``WordComplement`` holds none
    and is not expanded)."""
    for e in iter_nodes(expr, into_words=False):
        if isinstance(e, RuleRef):
            yield e.name



def merge_ranges(ranges) -> Tuple[Tuple[int, int], ...]:
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def complement_ranges(ranges, universe) -> Tuple[Tuple[int, int], ...]:
    out = []
    for ulo, uhi in universe:
        cur = ulo
        for lo, hi in ranges:
            if hi < cur or lo > uhi:
                continue
            if lo > cur:
                out.append((cur, lo - 1))
            cur = max(cur, hi + 1)
        if cur <= uhi:
            out.append((cur, uhi))
    return merge_ranges(out)


def intersect_ranges(a, b) -> Tuple[Tuple[int, int], ...]:
    out = []
    for alo, ahi in a:
        for blo, bhi in b:
            lo, hi = max(alo, blo), min(ahi, bhi)
            if lo <= hi:
                out.append((lo, hi))
    return merge_ranges(out)
