"""``enum``/``const``: candidate values filtered by the reference validator, written as JSON
literals in the layout (numbers in their ``json.dumps`` spellings, see
:meth:`Literals.number_spellings`).

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> Converter(True, Layout()).literals.number_spellings(2)
    ['2', '2.0']
"""

from __future__ import annotations

import json
import math
from typing import FrozenSet, List, Optional

from ...errors import UnsupportedSchemaError
from ..ir import Bytes, Expr, make_choice, make_seq
from ..string_format import json_string_literal
from ..text_exclusion import expr_avoiding
from .context import Context
from .merged import Merged
from .validator import CannotValidate, Validator
from .values import canon, dedupe
from .vocabulary import NEVER

__all__ = ["Literals"]


class Literals:
    """JSON literals of ``enum``/``const`` values."""

    def __init__(self, ctx: Context, validator: Validator):
        self.ctx = ctx
        self.doc = ctx.doc
        self.validator = validator

    def finite_values(self, atoms: FrozenSet):
        """When an ``enum``/``const`` applies at this location, every other keyword --
        disjunctions included -- is decided by validating the finitely many candidates.
        Returns a function of the depth producing the literals, or None."""
        cands = None
        # in node order: a frozenset's iteration order changes with the hash seed, and the
        # candidates' order is the grammar's
        for a in sorted(a for a in atoms if a[0] == "own"):
            obj = self.ctx.node(a[1])
            if "enum" in obj and isinstance(obj["enum"], list):
                cands = obj["enum"]
                break
            if "const" in obj:
                cands = [obj["const"]]
                break
        if cands is None:
            return None
        try:
            values = [v for v in dedupe(cands) if self.validator.validate_atoms(v, atoms)]
            if self.ctx.excludes:
                values = [v for v in values if self.literal_allowed(v)]
        except CannotValidate:
            return None  # fall back to the structural construction
        return lambda depth: make_choice([self.literal(v, depth) for v in values]) if values else None

    def gen_enum(self, m: Merged, depth: int, hint: str) -> Optional[Expr]:
        """The ``enum``/``const`` values of ``m`` that satisfy its other keywords."""
        out = []
        seen = set()
        for v in m.enum:
            ok = self.validator.enum_value_ok(v, m)
            sig = canon(v)  # 1 and 1.0 are one value (with the same spellings)
            if ok and self.ctx.excludes and not self.literal_allowed(v):
                ok = False
            if ok and sig not in seen:
                seen.add(sig)
                out.append(self.literal(v, depth))
        if not out:
            return None
        return make_choice(out)

    def literal(self, v, depth: int) -> Expr:
        """The JSON text of value ``v`` at ``depth`` (numbers in all their accepted spellings)."""
        parts: list = []
        self._literal_parts(v, depth, parts)
        return make_seq(parts)

    def _literal_parts(self, v, depth: int, parts: list) -> None:
        # Appends to one flat list: a make_seq per nesting level would re-flatten every inner
        # level again (quadratic: a const nested 6,000 deep took minutes).
        L = self.ctx.layout
        if v is None:
            parts.append(Bytes(b"null"))
        elif v is True:
            parts.append(Bytes(b"true"))
        elif v is False:
            parts.append(Bytes(b"false"))
        elif isinstance(v, (int, float)):
            parts.append(make_choice([Bytes(t.encode()) for t in self.number_spellings(v)]))
        elif isinstance(v, str):
            parts += [Bytes(b'"'), self.literal_body(v), Bytes(b'"')]
        elif isinstance(v, list):
            if not v:
                parts += [Bytes(b"["), L.empty(), Bytes(b"]")]
                return
            parts += [Bytes(b"["), L.open(depth)]
            for i, x in enumerate(v):
                if i:
                    parts.append(L.sep(depth))
                self._literal_parts(x, depth + 1, parts)
            parts += [L.close(depth), Bytes(b"]")]
        elif isinstance(v, dict):
            if not v:
                parts += [Bytes(b"{"), L.empty(), Bytes(b"}")]
                return
            parts += [Bytes(b"{"), L.open(depth)]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    parts.append(L.sep(depth))
                parts += [Bytes(b'"'), self.literal_body(k), Bytes(b'"'), L.key_sep()]
                self._literal_parts(x, depth + 1, parts)
            parts += [L.close(depth), Bytes(b"}")]
        else:
            raise UnsupportedSchemaError(f"not a JSON value in enum/const: {v!r}", "#")

    def literal_body(self, s: str) -> Expr:
        """The JSON text of string ``s`` without quotes, spellings with an excluded substring
        left out (callers drop values without spellings first, see ``literal_allowed``)."""
        body = json_string_literal(s)
        if not self.ctx.excludes:
            return body
        key = ("lit_excl", s)
        if key not in self.ctx.shared:
            self.ctx.shared[key] = expr_avoiding(body, self.ctx.excludes, self.ctx.sink, "lit")
        e = self.ctx.shared[key]
        return NEVER if e is None else e

    def literal_allowed(self, v) -> bool:
        """False when a string (or key) inside ``v`` has no spelling free of excluded words."""
        if isinstance(v, str):
            return self.literal_body(v) is not NEVER
        if isinstance(v, list):
            return all(self.literal_allowed(x) for x in v)
        if isinstance(v, dict):
            return all(self.literal_allowed(k) and self.literal_allowed(x) for k, x in v.items())
        return True

    def number_spellings(self, v) -> List[str]:
        """The spellings of an ``enum``/``const`` number: its ``json.dumps`` text and, for an
        integral value (draft 6 and later, where ``1.0`` is an integer), both the integer
        and the ``json.dumps(float)`` form (``1`` / ``1.0``; zero also as ``-0`` / ``-0.0``)."""
        out = [json.dumps(v)]
        integral = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
        if self.doc.draft >= 6 and integral:
            n = int(v)
            cands = [json.dumps(n)] if abs(n) < 10 ** 30 else []
            if abs(n) < 2 ** 53 or (abs(n) < 2 ** 1024 and float(n) == n):
                cands.append(json.dumps(float(n)))
            if n == 0:
                cands += ["-0", "-0.0"]
            out += [c for c in cands if c not in out]
        return out
