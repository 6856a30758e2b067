"""Grammar IR: the one representation every front-end (EBNF, JSON Schema, regex) produces.

A grammar is an ordered mapping of rule names to expressions.  Expressions are immutable,
hashable trees made of six node kinds:

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

Example::

    >>> g = Grammar({"root": Seq((Bytes(b"a"), Repeat(RuleRef("b"), 0, None))),
    ...              "b": CharClass(((48, 57),))}, root="root")
    >>> print(g)
    root ::= "a" b*
    b ::= [0-9]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple, Union

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


class _Node:
    """Base of the node kinds: a node caches its hash (the value the dataclass would compute),
    as converters put deep trees in sets and dict keys again and again.  The cache is not
    part of the pickled state (string hashes differ between processes).  Each kind writes its
    fields in its own ``__init__`` (half the cost of the frozen dataclass one; converters
    build many thousands of nodes)."""

    _FIELDS: Tuple[str, ...] = ()

    def _cached_hash(self) -> int:
        d = self.__dict__
        h = d.get("_h")
        if h is None:
            h = d["_h"] = hash(tuple([getattr(self, f) for f in self._FIELDS]))
        return h

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_h"}


@dataclass(frozen=True, init=False)
class Bytes(_Node):
    data: bytes

    _FIELDS = ("data",)
    __hash__ = _Node._cached_hash

    def __init__(self, data: bytes):
        self.__dict__["data"] = data


@dataclass(frozen=True, init=False)
class CharClass(_Node):
    ranges: Tuple[Tuple[int, int], ...]
    negated: bool = False
    byte_level: bool = False

    _FIELDS = ("ranges", "negated", "byte_level")
    __hash__ = _Node._cached_hash

    def __init__(self, ranges: Tuple[Tuple[int, int], ...], negated: bool = False,
                 byte_level: bool = False):
        d = self.__dict__
        d["ranges"] = ranges = merge_ranges(ranges)
        d["negated"] = negated
        d["byte_level"] = byte_level
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
        self.__dict__["items"] = items


@dataclass(frozen=True, init=False)
class Choice(_Node):
    items: Tuple["Expr", ...]

    _FIELDS = ("items",)
    __hash__ = _Node._cached_hash

    def __init__(self, items: Tuple["Expr", ...]):
        self.__dict__["items"] = items


@dataclass(frozen=True, init=False)
class RuleRef(_Node):
    name: str

    _FIELDS = ("name",)
    __hash__ = _Node._cached_hash

    def __init__(self, name: str):
        self.__dict__["name"] = name


@dataclass(frozen=True, init=False)
class Repeat(_Node):
    item: "Expr"
    min: int
    max: Optional[int]

    _FIELDS = ("item", "min", "max")
    __hash__ = _Node._cached_hash

    def __init__(self, item: "Expr", min: int, max: Optional[int]):  # noqa: A002 (field names)
        d = self.__dict__
        d["item"] = item
        d["min"] = min
        d["max"] = max
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
        d = self.__dict__
        d["ids"] = ids
        d["negated"] = bool(negated)


Expr = Union[Bytes, CharClass, Seq, Choice, RuleRef, Repeat, TokenSet]

EPSILON = Seq(())


class Grammar:
    """An immutable grammar: ordered ``rules`` (name -> Expr) and the ``root`` rule name.

    Build one with :meth:`from_ebnf` or :meth:`builtin_json_grammar`; ``str(grammar)``
    prints normalized EBNF that parses back to an equivalent grammar.

    Example::

        >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
        >>> print(g)
        root ::= "yes" | "no"
    """

    __slots__ = ("_rules", "_root", "_captures")

    def __init__(self, rules: Dict[str, Expr], root: str = "root",
                 captures: Optional[Dict[str, str]] = None):
        from ..errors import GrammarError

        if root not in rules:
            raise GrammarError(f"root rule '{root}' is not defined", rule=root)
        self._rules = dict(rules)
        self._root = root
        # rule -> capture name (XGrammar's ``rule[capture="name"]``), in rule order
        self._captures = {r: captures[r] for r in self._rules if r in captures} if captures else {}
        missing = _first_undefined_ref(self._rules)
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
    def root_rule_name(self) -> str:
        return self._root

    def __iter__(self) -> Iterator[Tuple[str, Expr]]:
        return iter(self._rules.items())

    def __len__(self) -> int:
        return len(self._rules)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Grammar) and self._root == other._root
                and self._rules == other._rules and self._captures == other._captures)

    def __hash__(self) -> int:
        return hash((self._root, tuple(self._rules.items()), tuple(self._captures.items())))

    def __str__(self) -> str:
        from .printer import grammar_to_ebnf

        return grammar_to_ebnf(self)

    def __repr__(self) -> str:
        return f"<Grammar root={self._root!r} rules={len(self._rules)}>"

    def serialize_json(self) -> str:
        """This grammar as a JSON string (XGrammar's name and role), exact for every node kind
        (raw-byte classes and non-UTF-8 literals included), in the versioned, checksummed
        format of :mod:`xmask.serialization.format`.

        Example::

            >>> g = Grammar.from_ebnf('root ::= "a" [0-9]+')
            >>> Grammar.deserialize_json(g.serialize_json()) == g
            True
        """
        from ..serialization.format import dump_document
        from ..serialization.grammar_codec import grammar_to_body

        return dump_document("grammar", grammar_to_body(self))

    @staticmethod
    def deserialize_json(json_string: str) -> "Grammar":
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
        from ..serialization.format import load_document
        from ..serialization.grammar_codec import grammar_from_body

        return grammar_from_body(load_document(json_string, "grammar"), "Grammar")

    def __reduce__(self):
        return (Grammar.deserialize_json, (self.serialize_json(),))

    @staticmethod
    def from_ebnf(text: str, root_rule_name: str = "root") -> "Grammar":
        """Parse GBNF / XGrammar-dialect EBNF text.

        Example::

            >>> Grammar.from_ebnf('root ::= [a-z]+ ("," [a-z]+)*').root
            'root'
        """
        from .._recursion import deep_recursion
        from .ebnf import parse_ebnf

        with deep_recursion("EBNF grammar"):
            return parse_ebnf(text, root_rule_name=root_rule_name)

    @staticmethod
    def from_regex(pattern: str) -> "Grammar":
        """A grammar matching exactly the strings that fully match ``pattern`` (Python/JS regex
        syntax; backreferences and lookaround raise ``RegexSyntaxError`` with the position).

        Example::

            >>> print(Grammar.from_regex(r"[0-9]{2}-[a-z]+"))
            root ::= [0-9]{2} "-" [a-z]+
        """
        from .regex import regex_to_grammar

        return regex_to_grammar(pattern)

    @staticmethod
    def from_lark(lark_string: str, *, tokenizer_info=None, named_grammars=None) -> "Grammar":
        """A grammar from Lark text (the dialect vLLM sends; llguidance's extensions ``%json``,
        ``@name``, special tokens).  ``start`` is the root.  ``tokenizer_info`` resolves named
        special tokens such as ``<|python_tag|>`` (without it they raise); ``named_grammars``
        maps the names used as ``@name`` to a ``Grammar`` or Lark text.  Priorities are
        ignored with a warning; the mapping of ``%ignore`` and every construct are described
        in :mod:`xmask.grammar.lark`.  Errors are ``GrammarSyntaxError`` with line and column.

        Example::

            >>> g = Grammar.from_lark('start: "yes" | "no"')
            >>> print(g)
            root ::= "yes" | "no"
        """
        from .._recursion import deep_recursion
        from .lark import parse_lark

        with deep_recursion("Lark grammar"):
            return parse_lark(lark_string, tokenizer_info=tokenizer_info,
                              named_grammars=named_grammars)

    @staticmethod
    def from_json_schema(schema, *, any_whitespace=True, indent=None, separators=None,
                         strict_mode=True, max_whitespace_cnt=None, lenient=False,
                         any_order=False, limits=None) -> "Grammar":
        """A grammar of the JSON texts valid under ``schema`` (str, dict, or pydantic model).

        Keywords that cannot be enforced exactly raise ``UnsupportedSchemaError`` naming the
        JSON pointer, unless ``lenient=True`` (then they are loosened, with a warning each).
        ``limits`` (an ``xmask.CompileLimits``) caps enum sizes, alternatives and rule counts.

        Example::

            >>> g = Grammar.from_json_schema({"type": "integer", "minimum": 1})
            >>> g.root
            'root'
        """
        from .json_schema import json_schema_to_grammar

        return json_schema_to_grammar(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, lenient=lenient,
            any_order=any_order, limits=limits,
        )

    @staticmethod
    def from_structural_tag(*args, **kwargs) -> "Grammar":
        """A grammar from a structural tag: ``from_structural_tag(structural_tag)`` with a
        ``StructuralTag``, its JSON text or a dict, or the deprecated
        ``from_structural_tag(tags, triggers)`` (``StructuralTagItem`` list + trigger strings).
        Every XGrammar 0.2.8 format; see :mod:`xmask.structural.lower` for the semantics.
        Malformed input raises ``InvalidStructuralTagError`` naming the JSON path.  Token
        *strings* need a tokenizer: use ``GrammarCompiler.compile_structural_tag``.

        Example::

            >>> g = Grammar.from_structural_tag({"type": "structural_tag", "format": {
            ...     "type": "triggered_tags", "triggers": ["<f"], "tags": [{"begin": "<f>",
            ...     "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
            ...     "end": "</f>"}]}})
            >>> g.root
            'root'
        """
        from ..structural.lower import structural_tag_to_grammar
        from ..structural.spec import structural_tag_argument

        return structural_tag_to_grammar(structural_tag_argument(args, kwargs))

    @staticmethod
    def builtin_json_grammar() -> "Grammar":
        """The built-in grammar of any JSON value (RFC 8259), with any JSON whitespace.

        Example::

            >>> g = Grammar.builtin_json_grammar()
            >>> g.root
            'root'
        """
        from .builtin_json import builtin_json_grammar

        return builtin_json_grammar()

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """A grammar matching what any of ``grammars`` matches (XGrammar's ``Grammar.union``):
        ``root ::= g1 | g2 | ...``, each part's rules copied under fresh names.  At least one
        grammar is needed (the union of none would match nothing).

        Example::

            >>> print(Grammar.union(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("b+")))
            root ::= root_1 | root_2
            root_1 ::= "a"
            root_2 ::= "b"+
        """
        return _combine("union", grammars)

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """A grammar matching a string of each of ``grammars`` in turn (XGrammar's
        ``Grammar.concat``): ``root ::= g1 g2 ...``; with no grammar, the empty string.

        Example::

            >>> print(Grammar.concat(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("b+")))
            root ::= root_1 root_2
            root_1 ::= "a"
            root_2 ::= "b"+
        """
        return _combine("concat", grammars)


def _combine(kind: str, grammars) -> "Grammar":
    from ..errors import GrammarError
    from .combine import RuleNamer, embed_grammar

    for i, g in enumerate(grammars):
        if not isinstance(g, Grammar):
            raise TypeError(f"Grammar.{kind}() takes Grammar objects; argument {i} is {type(g).__name__}")
    if kind == "union" and not grammars:
        raise GrammarError("Grammar.union() needs at least one grammar (the union of none matches nothing)")
    rules: Dict[str, Expr] = {"root": EPSILON}
    namer = RuleNamer(rules)
    captures: Dict[str, str] = {}
    refs = tuple(embed_grammar(rules, g, namer, "root", captures) for g in grammars)
    if len(refs) == 1:
        rules["root"] = refs[0]
    elif refs:
        rules["root"] = Choice(refs) if kind == "union" else Seq(refs)
    return Grammar(rules, root="root", captures=captures)


def iter_nodes(expr: Expr) -> Iterator[Expr]:
    """Yield every distinct sub-expression object of ``expr`` (itself included), each once.

    Sub-expression objects shared inside ``expr`` are visited once: converters share them
    freely, and walking such a DAG as a tree can take exponential time.

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
    sub-expressions are visited once, see :func:`iter_nodes`)."""
    for e in iter_nodes(expr):
        if isinstance(e, RuleRef):
            yield e.name


def _first_undefined_ref(rules: Dict[str, Expr]) -> Optional[Tuple[str, str]]:
    """``(rule, name)`` of the first reference to an undefined rule, in the order ``iter_refs``
    meets them rule after rule; None when all are defined.  Sub-expressions shared between
    rules are walked once (one seen-set for the whole grammar: a shared part with a bad
    reference raises at its first rule already)."""
    seen = set()
    for rule, expr in rules.items():
        stack = [expr]
        while stack:
            e = stack.pop()
            t = type(e)
            if t is RuleRef:
                if e.name not in rules:
                    return rule, e.name
                continue
            if t is Seq or t is Choice:
                items = e.items
            elif t is Repeat:
                items = (e.item,)
            else:
                continue
            for item in items:
                ti = type(item)
                if ti is Bytes or ti is CharClass or ti is TokenSet:
                    continue  # leaves
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
    return None


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
