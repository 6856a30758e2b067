"""Per-model tool-call formats (structural tags in XGrammar's JSON form), one module per
family or group of similar families. Importing this package registers every built-in family in
``registry``; ``xmask.builtin_structural_tag`` is the public entry point."""

# Importing a family module registers its formats.
from . import cohere, deepseek, harmony, json_calls, kimi, minimax, xml_calls  # noqa: F401
from .registry import builtin_model_names, get_builder

__all__ = ["builtin_model_names", "get_builder"]
