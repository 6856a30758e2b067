"""The table of built-in model formats: ``model name -> builder``.

A builder is ``build(function_tools, builtin_tools, choice, reasoning, options) -> format``
where ``format`` is a structural-tag format as a plain JSON dict (XGrammar's JSON form, no
pydantic), ``choice`` is ``"auto"``/``"required"``/``"forced"`` (from ``normalize_tool_choice``)
and ``reasoning`` is ``"enabled"``/``"disabled"``/``"auto"``.

Example::

    >>> from xmask.structural.families import get_builder
    >>> from xmask.structural.families.common import CallOptions
    >>> get_builder("llama")([], [], "auto", "enabled", CallOptions())["type"]
    'any_text'
"""

_BUILDERS = {}


def register_builtin(*names):
    """Decorator: register a format builder under one or more model names."""

    def decorator(build):
        for name in names:
            _BUILDERS[name] = build
        return build

    return decorator


def get_builder(name):
    """The builder registered for ``name``, or ``None``."""
    return _BUILDERS.get(name)


def builtin_model_names():
    """The built-in model names, in registration order."""
    return list(_BUILDERS)
