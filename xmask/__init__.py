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
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    get_bitmask_shape,
    reset_token_bitmask,
)
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
    InvalidSchemaError,
    InvalidStructuralTagError,
    InvalidTokenError,
    RegexSyntaxError,
    RuntimeLimitError,
    SchemaKeywordWarning,
    TokenizerError,
    UnsupportedSchemaError,
    XmaskError,
)
from . import testing
from .grammar_api import Grammar
from .limits import CompileLimits, RuntimeLimits
from .runtime.batch import BatchGrammarMatcher
from .runtime.matcher import (
    GrammarMatcher,
    get_max_recursion_depth,
    max_recursion_depth,
    set_max_recursion_depth,
)
from .serialization.format import get_serialization_version
from .tokenizer.default import default_tokenizer, default_tokenizer_info
from .tokenizer.info import TokenizerInfo, VocabType

__all__ = [
    "BatchGrammarMatcher",
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
    "InvalidSchemaError",
    "InvalidStructuralTagError",
    "InvalidTokenError",
    "RegexSyntaxError",
    "RuntimeLimitError",
    "RuntimeLimits",
    "SchemaKeywordWarning",
    "StructuralTag",
    "StructuralTagItem",
    "TokenizerError",
    "TokenizerInfo",
    "UnsupportedSchemaError",
    "VocabType",
    "XmaskError",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "contrib",
    "default_tokenizer",
    "default_tokenizer_info",
    "get_bitmask_shape",
    "get_builtin_structural_tag",
    "get_max_recursion_depth",
    "get_model_structural_tag",
    "get_serialization_version",
    "max_recursion_depth",
    "normalize_tool_choice",
    "register_model_structural_tag",
    "reset_token_bitmask",
    "set_max_recursion_depth",
    "structural_tag",
    "testing",
]


_TOOL_CALL_NAMES = (
    "get_builtin_structural_tag",
    "get_model_structural_tag",
    "normalize_tool_choice",
    "register_model_structural_tag",
)


def __getattr__(name):
    # PEP 562: names that need torch / transformers resolve on first use, so `import xmask`
    # imports neither (``xmask.bitmask_dtype`` is torch.int32, or numpy.int32 without torch).
    if name == "bitmask_dtype":
        from . import bitmask

        return bitmask.bitmask_dtype
    if name in _TOOL_CALL_NAMES or name == "builtin_structural_tag":
        # they build pydantic StructuralTag objects (import_module: a from-import of the
        # submodule would come back here while it is not yet an attribute)
        import importlib

        module = importlib.import_module(".builtin_structural_tag", __name__)
        return module if name == "builtin_structural_tag" else getattr(module, name)
    if name in ("StructuralTag", "StructuralTagItem", "structural_tag"):
        # pydantic models: imported on first use only
        import importlib

        module = importlib.import_module(".structural_tag", __name__)
        return module if name == "structural_tag" else getattr(module, name)
    if name == "contrib":
        import importlib

        return importlib.import_module(".contrib", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
