"""Where whitespace goes between the tokens of a JSON value (XGrammar-compatible).

``any_whitespace=True``: ``[ \\t\\n\\r]*`` (at most ``max_ws`` characters when given) around
``{ } [ ] , :``; otherwise fixed separators and, with ``indent``, ``json.dumps(indent=N)``
lines.

Example::

    >>> Layout(False, 2, None, None).sep(0)
    Bytes(data=b',\\n  ')
"""

from __future__ import annotations

from typing import Optional

from ..ir import EPSILON, Bytes, CharClass, Expr, Repeat, make_seq

__all__ = ["Layout"]

_WS_CLASS = CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))


class Layout:
    """Where whitespace goes (see the module docstring)."""

    def __init__(self, any_ws: bool = True, indent=None, separators=None, max_ws: Optional[int] = None):
        self.any_ws = bool(any_ws)
        if isinstance(indent, bool):
            raise TypeError("indent must be an int or None")
        self.indent = None if self.any_ws else indent
        if isinstance(self.indent, int):
            self.indent_unit = " " * self.indent
        elif isinstance(self.indent, str):
            self.indent_unit = self.indent
        else:
            self.indent_unit = None
        if separators is None:
            separators = (",", ": ") if self.indent_unit is not None else (", ", ": ")
        if len(separators) != 2:
            raise ValueError("separators must be a pair (item_separator, key_separator)")
        self.item_sep, self.key_sep_text = separators
        self.ws = Repeat(_WS_CLASS, 0, max_ws) if max_ws != 0 else EPSILON
        self.depth_matters = self.indent_unit is not None
        # built once (asked for at every member and item)
        self._any_sep = make_seq([self.ws, Bytes(b","), self.ws])
        self._key_sep = (make_seq([self.ws, Bytes(b":"), self.ws]) if self.any_ws
                         else Bytes(self.key_sep_text.encode()))

    def _nl(self, depth: int) -> Expr:
        return Bytes(("\n" + self.indent_unit * depth).encode())

    def open(self, depth: int) -> Expr:
        """After ``{``/``[`` of a value at ``depth``."""
        if self.any_ws:
            return self.ws
        if self.indent_unit is not None:
            return self._nl(depth + 1)
        return EPSILON

    def close(self, depth: int) -> Expr:
        """Before ``}``/``]`` of a value at ``depth``."""
        if self.any_ws:
            return self.ws
        if self.indent_unit is not None:
            return self._nl(depth)
        return EPSILON

    def sep(self, depth: int) -> Expr:
        """Between the members or items of a value at ``depth``."""
        if self.any_ws:
            return self._any_sep
        if self.indent_unit is not None:
            return make_seq([Bytes(self.item_sep.encode()), self._nl(depth + 1)])
        return Bytes(self.item_sep.encode())

    def key_sep(self) -> Expr:
        """Between a key and its value."""
        return self._key_sep

    def empty(self) -> Expr:
        """Inside ``{}``/``[]``."""
        return self.ws if self.any_ws else EPSILON
