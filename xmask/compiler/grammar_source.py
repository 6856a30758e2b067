"""How a compiled grammar gets its source grammar back without keeping its IR tree alive.

A large schema's grammar IR is tens of thousands of small Python objects.  A compiled grammar
only needs it for ``CompiledGrammar.grammar`` and serialization (the automaton and the token-mask
cache are flat arrays), yet while it lived every full collection of CPython's cyclic collector
scanned all of it: with 20 large compiled grammars alive a full collection took 195-306 ms, a
stall of every Python thread (issue 10).  So a compiler keeps a :class:`GrammarSource` instead:
the front end and its (immutable) input, a handful of objects, and rebuilds the IR on demand.
The front ends are deterministic (tests/compiler/test_grammar_source.py compares rebuilds), so
the rebuilt grammar equals the compiled one.  A ``Grammar`` passed in by the caller is kept as
is (the caller holds it anyway).

Example::

    >>> from xmask.grammar_api import Grammar
    >>> src = GrammarSource(Grammar.from_regex, "a+")
    >>> print(source_grammar(src))
    root ::= "a"+
"""

from __future__ import annotations

import warnings

from .._recursion import deep_recursion


class GrammarSource:
    """``make(*args)`` rebuilds the grammar; ``args`` must be immutable or never mutated
    (texts, option tuples, a ``TokenizerInfo``, ``CompileLimits``) and must not reference the
    compiler (it caches the compiled grammar: that would be a reference cycle)."""

    __slots__ = ("make", "args")

    def __init__(self, make, *args):
        self.make, self.args = make, args

    def build(self):
        # the first build already warned about the schema (unknown keywords, loosenings);
        # a rebuild for .grammar or serialization says nothing new
        with deep_recursion(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.make(*self.args)


def source_grammar(held):
    """The grammar IR behind what a compiled grammar holds (a ``Grammar`` or a source)."""
    return held.build() if isinstance(held, GrammarSource) else held
