"""xmask: fast, exact grammar-constrained decoding masks with a Cython core.

A drop-in for XGrammar's core Python API: change the import, keep the code.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    >>> matcher = xmask.GrammarMatcher(compiled)
    >>> bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    >>> matcher.fill_next_token_bitmask(bitmask)
    True
"""

from ._version import __version__
from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, get_bitmask_shape
from .compiler.compiled import CompiledGrammar
from .compiler.grammar_compiler import GrammarCompiler
from .errors import (
    BitmaskError,
    DeserializeFormatError,
    DeserializeVersionError,
    GrammarError,
    GrammarLimitError,
    GrammarSyntaxError,
    InvalidJSONError,
    InvalidTokenError,
    RegexSyntaxError,
    TokenizerError,
    UnsupportedSchemaError,
    XmaskError,
)
from . import testing
from .grammar.ir import Grammar
from .limits import CompileLimits
from .runtime.matcher import GrammarMatcher
from .tokenizer.default import default_tokenizer, default_tokenizer_info
from .tokenizer.info import TokenizerInfo, VocabType

__all__ = [
    "BitmaskError",
    "CompileLimits",
    "CompiledGrammar",
    "DeserializeFormatError",
    "DeserializeVersionError",
    "Grammar",
    "GrammarCompiler",
    "GrammarError",
    "GrammarLimitError",
    "GrammarMatcher",
    "GrammarSyntaxError",
    "InvalidJSONError",
    "InvalidTokenError",
    "RegexSyntaxError",
    "TokenizerError",
    "TokenizerInfo",
    "UnsupportedSchemaError",
    "VocabType",
    "XmaskError",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "default_tokenizer",
    "default_tokenizer_info",
    "get_bitmask_shape",
    "testing",
]
