"""Exception hierarchy for xmask.  Every error a user can trigger is an ``XmaskError``.

``XmaskError`` subclasses ``RuntimeError`` because XGrammar raises ``RuntimeError`` for grammar,
schema, token and serialization errors and inference servers catch exactly that (vLLM turns it
into a 400 response); most classes also subclass ``ValueError`` for plain-Python callers.
``InvalidJSONError``, ``DeserializeFormatError`` and ``DeserializeVersionError`` carry XGrammar's
names so ``except xgr.DeserializeVersionError`` keeps working after ``import xmask as xgr``.

Example::

    >>> import xmask
    >>> try:
    ...     xmask.Grammar.from_ebnf("root ::= (")
    ... except RuntimeError as e:
    ...     isinstance(e, xmask.GrammarSyntaxError)
    True
"""


def _rebuild_error(cls, args, fields):
    # Unpickling must not call a subclass __init__ again: its signature differs (pattern,
    # position, ...) and it would append the location suffix to the message a second time.
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(fields)
    return err


class XmaskError(RuntimeError):
    """Base class of every xmask error (a ``RuntimeError``, as XGrammar's errors are).

    Errors pickle with their message and fields intact, so a worker process can send one back
    to the engine (vLLM compiles regexes in a worker and re-raises its error).
    """

    def __reduce__(self):
        return _rebuild_error, (type(self), self.args, dict(self.__dict__))


class GrammarSyntaxError(XmaskError, ValueError):
    """Malformed grammar text.  Carries ``line`` and ``column`` (1-based) when known."""

    def __init__(self, message, line=None, column=None, rule=None):
        self.line = line
        self.column = column
        self.rule = rule
        where = []
        if rule is not None:
            where.append(f"rule '{rule}'")
        if line is not None:
            where.append(f"line {line}, column {column}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class GrammarError(XmaskError, ValueError):
    """A well-formed grammar that cannot be compiled (undefined rule, left recursion, limits)."""

    def __init__(self, message, rule=None, path=None):
        self.rule = rule
        self.path = path  # JSON pointer into the schema, for JSON Schema limits
        if rule is not None:
            message = f"{message} (rule '{rule}')"
        if path is not None:
            message = f"{message} (at {path})"
        super().__init__(message)


class GrammarLimitError(GrammarError):
    """A grammar exceeds a configured size limit (automaton states, repeat expansion, ...)."""


class RuntimeLimitError(XmaskError):
    """A matcher crossed one of its ``RuntimeLimits``; ``limit`` names the field
    (``"max_stack_tops"``, ...).  Not raised by fills or accepts: the matcher keeps it in
    ``GrammarMatcher.limit_error`` and rejects everything until ``reset()`` or ``rollback()``
    (see ``xmask.RuntimeLimits``); raise it yourself to fail the request."""

    def __init__(self, message, limit=None):
        self.limit = limit
        super().__init__(message)


class TokenizerError(XmaskError, ValueError):
    """A tokenizer file or vocabulary that xmask cannot use."""


class InvalidTokenError(XmaskError, ValueError):
    """A token id outside ``[0, vocab_size)``."""


class BitmaskError(XmaskError, ValueError):
    """A bitmask with the wrong dtype, shape, or memory layout."""


class UnsupportedSchemaError(XmaskError, ValueError):
    """A JSON Schema keyword xmask cannot enforce exactly.  ``path`` is its JSON pointer."""

    def __init__(self, message, path="#"):
        self.path = path
        super().__init__(f"{message} (at {path})")


SchemaUnsupportedError = UnsupportedSchemaError


class InvalidSchemaError(XmaskError, ValueError):
    """A malformed JSON Schema: a keyword whose value has the wrong JSON type or range
    (``"properties": "x"``, ``"minLength": -1``, ``"required": [null]``).  ``path`` is the
    JSON pointer of the keyword.  Raised even with ``lenient=True``: a malformed schema is
    never silently loosened.

    Example::

        >>> import xmask
        >>> try:
        ...     xmask.Grammar.from_json_schema({"properties": {"a": {"minLength": "3"}}})
        ... except xmask.InvalidSchemaError as e:
        ...     e.path
        '#/properties/a/minLength'
    """

    def __init__(self, message, path="#"):
        self.path = path
        super().__init__(f"{message} (at {path})")


class InvalidStructuralTagError(XmaskError, ValueError):
    """A malformed structural tag: an unknown format ``type``, a missing or mistyped field, a
    trigger that starts no tag, a token string the tokenizer does not have.  ``path`` names
    the place in the structural tag's JSON (``format.elements[1].begin``).

    Example::

        >>> import xmask
        >>> try:
        ...     xmask.Grammar.from_structural_tag({"type": "structural_tag",
        ...                                        "format": {"type": "nope"}})
        ... except xmask.InvalidStructuralTagError as e:
        ...     e.path
        'format.type'
    """

    def __init__(self, message, path=""):
        self.path = path
        super().__init__(f"{message} (at {path})" if path else message)


class SchemaKeywordWarning(UserWarning):
    """An unknown JSON Schema keyword that looks like a misspelt one (``propertes``).  The spec
    ignores unknown keywords, so the schema is converted as written, without it; filter with
    ``warnings.simplefilter("error", xmask.SchemaKeywordWarning)`` to refuse such schemas."""


class InvalidJSONError(XmaskError, ValueError):
    """Text that should be JSON (a schema, a serialized object) does not parse.  ``position``
    is the 0-based character offset of the error when known."""

    def __init__(self, message, position=None):
        self.position = position
        super().__init__(message)


class DeserializeFormatError(XmaskError, ValueError):
    """Serialized data that is not a valid xmask object (corrupt, truncated, wrong kind, or
    made for another tokenizer)."""


class DeserializeVersionError(XmaskError, ValueError):
    """Serialized data written by an incompatible serialization format version."""


class RegexSyntaxError(GrammarSyntaxError):
    """A regex that cannot be parsed or uses an unsupported construct; ``position`` is the
    0-based offset in the pattern."""

    def __init__(self, message, pattern, position):
        self.pattern = pattern
        self.position = position
        XmaskError.__init__(self, f"{message} at position {position} in regex {pattern!r}")
        self.line = 1
        self.column = position + 1
        self.rule = None
