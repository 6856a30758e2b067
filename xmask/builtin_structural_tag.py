"""Structural tags for models' tool-call formats, from OpenAI-style ``tools`` / ``tool_choice``.

Same names, arguments and results as XGrammar 0.2.8's ``xgrammar.builtin_structural_tag``:
``get_model_structural_tag`` (alias ``get_builtin_structural_tag``), ``normalize_tool_choice``
and ``register_model_structural_tag``. Model formats (``builtin_model_names()``): ``llama``,
``qwen_3``, ``qwen_3_5``, ``qwen_3_coder``, ``exaone``, ``mimo``, ``glm_4_7``, ``kimi``,
``kimi_k3``, ``deepseek_r1``, ``deepseek_v3_1``, ``deepseek_v3_2``, ``deepseek_v4``,
``deepseek_v4_1``, ``minimax``, ``minimax_m3``, ``cohere``, ``harmony`` (each described in its
module under ``xmask/structural/families/``).

Bad arguments raise ``InvalidStructuralTagError`` (a ``ValueError``, as XGrammar's errors here)
whose ``path`` names the argument (``model``, ``reasoning``, ``tools[0].function.name``...).
Deliberate differences from XGrammar (all stricter): builtin tools are an error for formats
that have no place for them (XGrammar drops them silently except for MiMo and MiniMax-M3);
Harmony's ``required`` / forced choices need at least one call; see
``xmask/structural/tool_params.py`` for the ``tools`` checks.

Example::

    >>> import xmask
    >>> tools = [{"type": "function", "function": {"name": "get_time", "parameters": {
    ...     "type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}]
    >>> stag = xmask.get_model_structural_tag("qwen_3", tools, "required", reasoning="disabled")
    >>> stag.format.type
    'triggered_tags'
"""

from .errors import InvalidStructuralTagError
from .structural.families import builtin_model_names, get_builder
from .structural.families.common import CallOptions
from .structural.tool_params import normalize_tool_choice, parse_tools

__all__ = [
    "builtin_model_names",
    "get_cohere_structural_tag",
    "get_deepseek_r1_structural_tag",
    "get_deepseek_v3_1_structural_tag",
    "get_deepseek_v3_2_structural_tag",
    "get_deepseek_v4_1_structural_tag",
    "get_deepseek_v4_structural_tag",
    "get_exaone_structural_tag",
    "get_glm_4_7_structural_tag",
    "get_harmony_structural_tag",
    "get_kimi_k3_structural_tag",
    "get_kimi_structural_tag",
    "get_llama_structural_tag",
    "get_mimo_structural_tag",
    "get_minimax_m3_structural_tag",
    "get_minimax_structural_tag",
    "get_qwen_3_5_structural_tag",
    "get_qwen_3_coder_structural_tag",
    "get_qwen_3_structural_tag",
    "get_builtin_structural_tag",
    "get_model_structural_tag",
    "get_model_structural_tag_format",
    "normalize_tool_choice",
    "register_model_structural_tag",
]

REASONING_MODES = ("enabled", "disabled", "auto")

# Formats registered by users; they take precedence over the built-in ones of the same name.
_user_formats = {}


def register_model_structural_tag(name):
    """Decorator: register a model format under ``name`` (it replaces a built-in of that name).

    The function is called as XGrammar calls it: ``fn(function_tools, builtin_tools,
    choice, reasoning, any_order=..., exclude_special_tokens=..., max_whitespace_cnt=...,
    parallel_tool_calls=...)`` with the results of ``normalize_tool_choice`` and a reasoning
    mode in ``"enabled"``/``"disabled"``/``"auto"``; it returns a ``StructuralTag`` (or its
    JSON dict).

    Example::

        >>> import xmask
        >>> @xmask.register_model_structural_tag("plain_text")
        ... def plain(tools, builtin_tools, choice, reasoning, **options):
        ...     return {"type": "structural_tag", "format": {"type": "any_text"}}
        >>> xmask.get_model_structural_tag("plain_text").format.type
        'any_text'
    """
    if not isinstance(name, str) or not name:
        raise InvalidStructuralTagError(f"must be a non-empty string, got {name!r}", "name")

    def decorator(fn):
        _user_formats[name] = fn
        return fn

    return decorator


def _check_bool(value, field):
    if not isinstance(value, bool):
        raise InvalidStructuralTagError(f"must be a bool, got {value!r}", field)


def _reasoning_mode(reasoning):
    if isinstance(reasoning, bool):  # deprecated aliases, as XGrammar
        return "enabled" if reasoning else "disabled"
    if reasoning not in REASONING_MODES:
        raise InvalidStructuralTagError(
            f"must be one of {REASONING_MODES} (or a bool), got {reasoning!r}", "reasoning")
    return reasoning


def _options(any_order, exclude_special_tokens, max_whitespace_cnt, parallel_tool_calls):
    _check_bool(any_order, "any_order")
    _check_bool(exclude_special_tokens, "exclude_special_tokens")
    _check_bool(parallel_tool_calls, "parallel_tool_calls")
    if max_whitespace_cnt is not None and (
            isinstance(max_whitespace_cnt, bool) or not isinstance(max_whitespace_cnt, int)
            or max_whitespace_cnt < 1):
        raise InvalidStructuralTagError(
            f"must be None or a positive int, got {max_whitespace_cnt!r}", "max_whitespace_cnt")
    return CallOptions(any_order=any_order, exclude_special_tokens=exclude_special_tokens,
                       max_whitespace_cnt=max_whitespace_cnt,
                       parallel_tool_calls=parallel_tool_calls)


def _unknown_model(model):
    known = sorted(set(builtin_model_names()) | set(_user_formats))
    raise InvalidStructuralTagError(f"unknown model format {model!r}; known: {known}", "model")


def get_model_structural_tag_format(model, tools=None, tool_choice="auto", reasoning="enabled",
                                    force_reasoning=False, any_order=False,
                                    exclude_special_tokens=True, max_whitespace_cnt=None,
                                    parallel_tool_calls=True):
    """The ``format`` of a built-in model's structural tag as a plain JSON dict (no pydantic):
    same arguments as ``get_model_structural_tag``, for built-in formats only.

    Example::

        >>> get_model_structural_tag_format("llama")
        {'type': 'any_text', 'excludes': ['<think>', '</think>']}
    """
    build = get_builder(model) if isinstance(model, str) else None
    if build is None:
        _unknown_model(model)
    options = _options(any_order, exclude_special_tokens, max_whitespace_cnt,
                       parallel_tool_calls)
    mode = _reasoning_mode(reasoning)
    functions, builtins, choice = normalize_tool_choice(tools, tool_choice)
    return build(functions, builtins, choice, mode, options)


def get_model_structural_tag(model, tools=None, tool_choice="auto", reasoning="enabled",
                             force_reasoning=False, any_order=False, exclude_special_tokens=True,
                             max_whitespace_cnt=None, parallel_tool_calls=True):
    """The ``StructuralTag`` of a model's reasoning and tool-call output (XGrammar 0.2.8).

    ``tools``: Chat Completions function tools ``{"type": "function", "function": {"name",
    "parameters", "strict"...}}`` and builtin tools ``{"type", "name", "parameters"}``.
    ``tool_choice``: ``"auto"`` (or ``None``), ``"none"``, ``"required"``, a named function
    ``{"type": "function", "function": {"name": N}}``, a builtin ``{"type": T}``, or
    ``{"type": "allowed_tools", "allowed_tools": {"mode", "tools"}}``. ``reasoning``:
    ``"enabled"`` (the prompt opened the block), ``"disabled"``, ``"auto"`` (a block or none);
    ``True``/``False`` are deprecated aliases. ``force_reasoning`` is accepted and ignored
    (deprecated in XGrammar). ``any_order`` / ``max_whitespace_cnt`` apply to every tool's
    arguments; ``exclude_special_tokens`` keeps the model's special markers out of free text;
    ``parallel_tool_calls=False`` allows at most one call.

    Example::

        >>> import xmask
        >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {
        ...     "type": "object"}}}]
        >>> stag = xmask.get_model_structural_tag("llama", tools, parallel_tool_calls=False)
        >>> stag.format.stop_after_first
        True
    """
    from .structural_tag import StructuralTag  # pydantic: imported on use only

    user_format = _user_formats.get(model) if isinstance(model, str) else None
    if user_format is None:
        fmt = get_model_structural_tag_format(
            model, tools, tool_choice, reasoning, force_reasoning, any_order,
            exclude_special_tokens, max_whitespace_cnt, parallel_tool_calls)
        return StructuralTag.model_validate({"type": "structural_tag", "format": fmt})
    options = _options(any_order, exclude_special_tokens, max_whitespace_cnt,
                       parallel_tool_calls)
    functions, builtins, choice = normalize_tool_choice(tools, tool_choice)
    result = user_format(functions, builtins, choice, _reasoning_mode(reasoning),
                         any_order=options.any_order,
                         exclude_special_tokens=options.exclude_special_tokens,
                         max_whitespace_cnt=options.max_whitespace_cnt,
                         parallel_tool_calls=options.parallel_tool_calls)
    return result if isinstance(result, StructuralTag) else StructuralTag.model_validate(result)


get_builtin_structural_tag = get_model_structural_tag
"""Alias of ``get_model_structural_tag`` (deprecated in XGrammar)."""

SIMPLIFIED_CHOICES = ("auto", "required", "forced")


def _family_function(model, default_reasoning="enabled"):
    # XGrammar's per-model functions take tools already normalized (or their dicts) and a
    # simplified choice; a forced choice names its one tool by leaving only it.
    def get_family_structural_tag(tools=None, builtin_tools=None, tool_choice="auto",
                                  reasoning=default_reasoning, any_order=False,
                                  exclude_special_tokens=True, max_whitespace_cnt=None,
                                  parallel_tool_calls=True, **kwargs):
        from .structural_tag import StructuralTag

        functions = parse_tools(tools)[0]
        builtins = parse_tools(builtin_tools)[1]
        if tool_choice not in SIMPLIFIED_CHOICES:
            raise InvalidStructuralTagError(
                f"must be one of {SIMPLIFIED_CHOICES} (normalize_tool_choice's), got "
                f"{tool_choice!r}", "tool_choice")
        count = len(functions) + len(builtins)
        if tool_choice == "forced" and count != 1:
            raise InvalidStructuralTagError(f"'forced' needs exactly one tool, got {count}",
                                            "tools")
        if tool_choice == "required" and not count:
            raise InvalidStructuralTagError("'required' needs at least one tool", "tools")
        options = _options(any_order, exclude_special_tokens, max_whitespace_cnt,
                           parallel_tool_calls)
        fmt = get_builder(model)(functions, builtins, tool_choice, _reasoning_mode(reasoning),
                                 options)
        return StructuralTag.model_validate({"type": "structural_tag", "format": fmt})

    get_family_structural_tag.__name__ = f"get_{model}_structural_tag"
    get_family_structural_tag.__qualname__ = get_family_structural_tag.__name__
    get_family_structural_tag.__doc__ = f"""The structural tag of the ``{model}`` format from
    normalized tools (XGrammar's per-model function): ``tool_choice`` is ``"auto"``,
    ``"required"`` or ``"forced"`` (the one tool given).

    Example::

        >>> from xmask.builtin_structural_tag import get_{model}_structural_tag
        >>> get_{model}_structural_tag(reasoning="disabled").format.type in ("any_text",
        ...     "sequence", "tags_with_separator")
        True
    """
    return get_family_structural_tag


get_llama_structural_tag = _family_function("llama")
get_kimi_structural_tag = _family_function("kimi")
get_kimi_k3_structural_tag = _family_function("kimi_k3")
get_deepseek_r1_structural_tag = _family_function("deepseek_r1")
get_deepseek_v3_1_structural_tag = _family_function("deepseek_v3_1")
get_deepseek_v3_2_structural_tag = _family_function("deepseek_v3_2")
get_deepseek_v4_structural_tag = _family_function("deepseek_v4")
get_deepseek_v4_1_structural_tag = _family_function("deepseek_v4_1")
get_qwen_3_structural_tag = _family_function("qwen_3")
get_qwen_3_5_structural_tag = _family_function("qwen_3_5")
get_qwen_3_coder_structural_tag = get_qwen_3_5_structural_tag
get_mimo_structural_tag = _family_function("mimo")
get_harmony_structural_tag = _family_function("harmony")
get_minimax_structural_tag = _family_function("minimax")
get_minimax_m3_structural_tag = _family_function("minimax_m3", default_reasoning="auto")
get_glm_4_7_structural_tag = _family_function("glm_4_7")
get_cohere_structural_tag = _family_function("cohere")
get_exaone_structural_tag = _family_function("exaone")
