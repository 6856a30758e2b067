"""OpenAI-style ``tools`` and ``tool_choice``, checked and normalized for the tool-call builders.

``normalize_tool_choice(tools, tool_choice)`` follows XGrammar 0.2.8 (same arguments, same
``(function_tools, builtin_tools, simplified_choice)`` result, simplified choice one of
``"auto"``, ``"required"``, ``"forced"``), without pydantic: the tools come back as the small
read-only records below, whose attributes are those of XGrammar's pydantic models
(``tool.function.name``, ``tool.function.parameters``, ``builtin.type``...), so a builder written
for XGrammar reads them unchanged.

Every bad value raises ``InvalidStructuralTagError`` whose ``path`` names the argument field
(``tools[1].function.name``, ``tool_choice.allowed_tools.mode``): it is a ``ValueError`` as
XGrammar's errors here are, and a ``RuntimeError`` as every xmask error is, so servers catch it
either way. Deliberately stricter than XGrammar (its pydantic union lets these through):

- a ``{"type": "function"}`` tool or tool choice without a ``function`` object is an error (XGrammar
  reads it as a builtin tool named ``"function"``);
- two function tools with the same name are an error (the calls could not be told apart);
- a function name must be a non-empty string.

Example::

    >>> from xmask.structural.tool_params import normalize_tool_choice
    >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    >>> fns, builtins, choice = normalize_tool_choice(tools, {"type": "function",
    ...                                                       "function": {"name": "f"}})
    >>> fns[0].function.name, builtins, choice
    ('f', [], 'forced')
"""

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import InvalidStructuralTagError


@dataclass(frozen=True)
class FunctionDefinition:
    """A function: ``name``, optional ``description``, ``parameters`` (JSON Schema),
    ``strict``."""

    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None

    def model_dump(self) -> dict:
        """The definition as a dict (as pydantic's ``model_dump``)."""
        return asdict(self)


@dataclass(frozen=True)
class FunctionToolParam:
    """A Chat Completions function tool: ``{"type": "function", "function": {...}}``."""

    function: FunctionDefinition
    type: str = "function"

    def model_dump(self) -> dict:
        """The tool as a dict (as pydantic's ``model_dump``)."""
        return asdict(self)


@dataclass(frozen=True)
class BuiltinToolParam:
    """A builtin (hosted) tool: provider ``type``, optional output ``name`` and ``parameters``."""

    type: str
    name: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None

    def model_dump(self) -> dict:
        """The tool as a dict (as pydantic's ``model_dump``)."""
        return asdict(self)

    @property
    def output_name(self) -> str:
        """The name the model writes for this tool (``name``, else ``type``)."""
        return self.name or self.type


ToolParam = Union[FunctionToolParam, BuiltinToolParam]
SIMPLE_CHOICES = ("none", "auto", "required")


def tool_arguments_schema(tool: ToolParam) -> Union[Dict[str, Any], bool]:
    """The JSON Schema that constrains a tool's arguments: ``True`` (any JSON value of the
    format) when ``parameters`` is absent or the function is ``strict=False``, as XGrammar."""
    if isinstance(tool, FunctionToolParam):
        if tool.function.strict is False or tool.function.parameters is None:
            return True
        return tool.function.parameters
    return True if tool.parameters is None else tool.parameters


def tool_output_name(tool: ToolParam) -> str:
    """The name the model writes for a function or builtin tool."""
    return tool.function.name if isinstance(tool, FunctionToolParam) else tool.output_name


def _fail(message, path):
    raise InvalidStructuralTagError(message, path)


def _as_dict(value, path, what):
    # pydantic models (XGrammar's, openai's) and these records are accepted as their dicts.
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, dict):
        value = dump()
    if not isinstance(value, dict):
        _fail(f"{what} must be an object (dict), got {type(value).__name__}", path)
    return value


def _optional(obj, key, types, path, type_name):
    value = obj.get(key)
    if value is not None and not isinstance(value, types):
        _fail(f"must be {type_name} or null, got {type(value).__name__}", f"{path}.{key}")
    return value


def _name(obj, key, path):
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        got = "missing" if key not in obj else f"{type(value).__name__} {value!r}"
        _fail(f"must be a non-empty string, got {got}", f"{path}.{key}")
    return value


def _parse_tool(raw, path) -> ToolParam:
    if isinstance(raw, (FunctionToolParam, BuiltinToolParam)):
        return raw
    tool = _as_dict(raw, path, "a tool")
    kind = tool.get("type", "function")
    if not isinstance(kind, str) or not kind:
        _fail(f"must be a non-empty string, got {kind!r}", f"{path}.type")
    if kind != "function":
        return BuiltinToolParam(
            type=kind,
            name=_optional(tool, "name", (str,), path, "a string"),
            parameters=_optional(tool, "parameters", (dict,), path, "a JSON Schema object"),
        )
    if "function" not in tool:
        _fail('a "function" tool needs a "function" object (Chat Completions shape '
              '{"type": "function", "function": {"name": ..., "parameters": ...}})',
              f"{path}.function")
    fpath = f"{path}.function"
    function = _as_dict(tool["function"], fpath, "the function")
    return FunctionToolParam(function=FunctionDefinition(
        name=_name(function, "name", fpath),
        description=_optional(function, "description", (str,), fpath, "a string"),
        parameters=_optional(function, "parameters", (dict,), fpath, "a JSON Schema object"),
        strict=_optional(function, "strict", (bool,), fpath, "a bool"),
    ))


def parse_tools(tools) -> Tuple[List[FunctionToolParam], List[BuiltinToolParam]]:
    """Check ``tools`` (``None`` or a list) and split it into function and builtin tools."""
    if tools is None:
        return [], []
    if not isinstance(tools, (list, tuple)):
        _fail(f"must be a list of tools, got {type(tools).__name__}", "tools")
    parsed = [_parse_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    seen = {}
    for i, tool in enumerate(parsed):
        if isinstance(tool, FunctionToolParam):
            name = tool.function.name
            if name in seen:
                _fail(f"duplicate function name {name!r} (also tools[{seen[name]}])",
                      f"tools[{i}].function.name")
            seen[name] = i
    functions = [t for t in parsed if isinstance(t, FunctionToolParam)]
    builtins = [t for t in parsed if isinstance(t, BuiltinToolParam)]
    return functions, builtins


def _function_ref(ref, path):
    if "function" not in ref:
        _fail('a "function" reference needs a "function" object: {"type": "function", '
              '"function": {"name": ...}}', f"{path}.function")
    return _name(_as_dict(ref["function"], f"{path}.function", "the function"), "name",
                 f"{path}.function")


def _filter_allowed(functions, builtins, allowed, path):
    refs = allowed.get("tools")
    if not isinstance(refs, (list, tuple)):
        _fail("must be a list of tool references", f"{path}.tools")
    names, types = [], []
    for i, ref in enumerate(refs):
        rpath = f"{path}.tools[{i}]"
        ref = _as_dict(ref, rpath, "a tool reference")
        kind = ref.get("type")
        if not isinstance(kind, str) or not kind:
            _fail(f"must be a non-empty string, got {kind!r}", f"{rpath}.type")
        if kind == "function":
            name = _function_ref(ref, rpath)
            if all(t.function.name != name for t in functions):
                _fail(f"function {name!r} is not in tools", f"{rpath}.function.name")
            names.append(name)
        else:
            if all(t.type != kind for t in builtins):
                _fail(f"builtin tool type {kind!r} is not in tools", f"{rpath}.type")
            types.append(kind)
    return ([t for t in functions if t.function.name in names],
            [t for t in builtins if t.type in types])


def normalize_tool_choice(
    tools=None, tool_choice="auto"
) -> Tuple[List[FunctionToolParam], List[BuiltinToolParam], str]:
    """Check ``tools`` and ``tool_choice`` and reduce them to what a model builder needs:
    ``(function_tools, builtin_tools, choice)`` with ``choice`` in ``"auto"`` (text or calls;
    no tools left means text only), ``"required"`` (at least one call) and ``"forced"``
    (exactly the one tool left). ``tool_choice``: ``None``/``"auto"``, ``"none"`` (drops every
    tool), ``"required"``, ``{"type": "function", "function": {"name": N}}``, a builtin type
    ``{"type": T}``, or ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto"|"required",
    "tools": [refs]}}``.

    Example::

        >>> fns, builtins, choice = normalize_tool_choice([{"type": "web_search"}], "required")
        >>> builtins[0].output_name, choice
        ('web_search', 'required')
    """
    functions, builtins = parse_tools(tools)
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, str):
        if tool_choice not in SIMPLE_CHOICES:
            _fail(f"must be one of {SIMPLE_CHOICES} or an object, got {tool_choice!r}",
                  "tool_choice")
        choice = tool_choice
        if choice == "none":
            functions, builtins, choice = [], [], "auto"
    else:
        spec = _as_dict(tool_choice, "tool_choice", "tool_choice")
        kind = spec.get("type")
        if not isinstance(kind, str) or not kind:
            _fail(f"must be a non-empty string, got {kind!r}", "tool_choice.type")
        if kind == "allowed_tools":
            allowed = _as_dict(spec.get("allowed_tools"), "tool_choice.allowed_tools",
                               "allowed_tools")
            choice = allowed.get("mode")
            if choice not in ("auto", "required"):
                _fail(f"must be 'auto' or 'required', got {choice!r}",
                      "tool_choice.allowed_tools.mode")
            functions, builtins = _filter_allowed(functions, builtins, allowed,
                                                  "tool_choice.allowed_tools")
        elif kind == "function":
            name = _function_ref(spec, "tool_choice")
            functions = [t for t in functions if t.function.name == name]
            if not functions:
                _fail(f"function {name!r} is not in tools", "tool_choice.function.name")
            builtins, choice = [], "forced"
        else:
            builtins = [t for t in builtins if t.type == kind]
            if len(builtins) != 1:
                _fail(f"builtin tool choice must match exactly one builtin tool of type "
                      f"{kind!r}, found {len(builtins)}", "tool_choice.type")
            functions, choice = [], "forced"
    if choice == "required" and not functions and not builtins:
        _fail("'required' needs at least one tool, and tools is empty (after filtering)",
              "tool_choice")
    return functions, builtins, choice
