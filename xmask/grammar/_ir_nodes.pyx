"""The grammar IR's node kinds as C-level constants for the compiled walks (cimported from
``_ir_nodes.pxd`` with its address hash table), and :func:`kind_of`.

Example::

    >>> from xmask.grammar.ir_expr import Seq
    >>> kind_of(Seq(())) is Seq
    True
"""

from xmask.grammar.ir_expr import EPSILON as _EPS
from xmask.grammar.ir_expr import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet, WordComplement

BYTES, SEQ, CHOICE, REF, CLASS, REPEAT, TOKENS, EPSILON, WORDS = (
    Bytes, Seq, Choice, RuleRef, CharClass, Repeat, TokenSet, _EPS, WordComplement)

# the node kinds the walks know (TokenSet: a leaf, handled apart)
NODE_KINDS = frozenset((Bytes, Seq, RuleRef, Choice, CharClass, Repeat))


def kind_of(expr):
    """The node kind of an instance of a subclass of one (built as that kind)."""
    for kind in NODE_KINDS:
        if isinstance(expr, kind):
            return kind
    raise TypeError(f"unknown grammar node {expr!r}")
