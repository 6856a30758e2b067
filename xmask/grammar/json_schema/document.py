"""Loading a schema and indexing it: drafts, node ids, base URIs, ``$ref`` resolution.

Every schema object gets a node id (``Document.nid``); a node is ``(object, base URI, JSON
pointer)``.  ``$id``/``id`` open resources, ``$anchor``/``$dynamicAnchor`` name nodes,
``Document.resolve`` follows local ``$ref``s (remote ones raise UnsupportedSchemaError).
A schema object of a draft-04/06/07 document is stored without the keywords of later drafts
(``LATER_KEYWORDS``: ``if`` in draft-04, ``dependentRequired`` in draft-07, ...): that draft
does not have them, so they assert nothing (a ``SchemaKeywordWarning`` says so).

Example::

    >>> doc = Document({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"})
    >>> doc.nodes[doc.resolve("#/$defs/a", "", "#/$ref")][2]
    '#/$defs/a'
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote, urldefrag, urljoin

from ...errors import InvalidJSONError, InvalidSchemaError, UnsupportedSchemaError
from ..schema_check import check_keywords, parse_schema_text, warn_keyword_ignored
from .vocabulary import LATER_KEYWORDS, SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_SINGLES, SUBSCHEMA_KEYS

__all__ = ["load_schema", "detect_draft", "join_uri", "escape_pointer", "Document"]

# keywords that name a resource or an anchor (see Document._identify)
_ID_KEYS = frozenset(("$id", "id", "$anchor", "$dynamicAnchor"))
_SINGLES = frozenset(SCHEMA_SINGLES)
_LISTS = frozenset(SCHEMA_LISTS)


def load_schema(schema):
    """A schema given as JSON text (str/bytes), dict, bool or pydantic model, as a Python value.

    Raises ``InvalidJSONError`` for text that is not JSON, ``TypeError`` for other types.
    """
    if isinstance(schema, (bytes, bytearray)):
        try:
            schema = schema.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidJSONError(f"JSON Schema text is not UTF-8: {e}", position=e.start) from None
    if isinstance(schema, str):
        return parse_schema_text(schema)
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise TypeError(f"schema must be JSON text, a dict, a bool or a pydantic model, not {type(schema).__name__}")




def detect_draft(root) -> int:
    """The draft of a root schema from ``$schema`` (4, 6, 7, 2019, 2020; default 2020)."""
    if isinstance(root, dict):
        s = root.get("$schema")
        if isinstance(s, str):
            for tag, n in (("draft-03", 3), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
                           ("2019-09", 2019), ("2020-12", 2020)):
                if tag in s:
                    return n
    return 2020


def join_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base``; a fragment-only ``ref`` also against non-hierarchical
    bases (``urn:...``), which ``urljoin`` leaves alone."""
    if not base:
        return ref
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def escape_pointer(token: str) -> str:
    """``token`` escaped for a JSON pointer (``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


class Document:
    """Indexes schema objects: node ids, base URIs, ``$id`` resources and anchors."""

    TRUE_NID = 0
    FALSE_NID = 1

    def __init__(self, root):
        self.root = root
        self.draft = detect_draft(root)
        self.nodes: List[Tuple[Any, Optional[str], str]] = [(True, None, "#"), (False, None, "#")]
        self.by_id: Dict[int, int] = {}
        self.resources: Dict[str, Any] = {}
        self.anchors: Dict[Tuple[str, str], Any] = {}
        self.keep: List[Any] = []  # synthetic objects kept alive (their id() must not be reused)
        # (ref, base) -> node id of the JSON-pointer references resolved so far (the same
        # "#/definitions/x" is met at every use; its target never changes once found)
        self._by_pointer: Dict[Tuple[str, str], int] = {}
        self.index(root, "", "#")
        self.resources.setdefault("", root)

    def nid(self, obj, base: Optional[str] = None, ptr: str = "#") -> int:
        """The node id of ``obj`` (indexed now if new, under ``base`` and ``ptr``)."""
        if obj is True:
            return self.TRUE_NID
        if obj is False:
            return self.FALSE_NID
        n = self.by_id.get(id(obj))
        if n is None:
            n = self.index(obj, base or "", ptr)
        return n

    def index(self, obj, base: str, ptr: str, check: bool = True) -> int:
        """Register ``obj`` and its subschemas; returns the node id of ``obj``.  ``check``:
        raise InvalidSchemaError for malformed keywords (off for the converter's own objects)."""
        first = None
        stack = [(obj, base, ptr)]
        draft = self.draft
        later = LATER_KEYWORDS.get(draft) if check else None
        nodes, by_id = self.nodes, self.by_id
        while stack:
            o, b, p = stack.pop()
            if o is True or o is False:
                if first is None:
                    first = self.TRUE_NID if o else self.FALSE_NID
                continue
            if not isinstance(o, dict):
                if first is None:
                    raise InvalidSchemaError(f"a schema must be an object or a boolean, not {type(o).__name__}", p)
                continue
            if id(o) in by_id:
                if first is None:
                    first = by_id[id(o)]
                continue
            orig = o
            if check:
                check_keywords(o, p, draft, subschemas=False)
                if later is not None and not later.isdisjoint(o):  # (in_draft keeps the others as they are)
                    o = self.in_draft(o, p)
            if not _ID_KEYS.isdisjoint(o):  # (most schema objects have none)
                b = self._identify(o, b)
            n = len(nodes)
            nodes.append((o, b, p))
            by_id[id(o)] = by_id[id(orig)] = n
            if first is None:
                first = n
            if SUBSCHEMA_KEYS.isdisjoint(o):
                continue  # a leaf schema (the usual case)
            if not _SINGLES.isdisjoint(o):
                for k in SCHEMA_SINGLES:
                    if k in o:
                        stack.append((o[k], b, f"{p}/{k}"))
            if "items" in o:
                it = o["items"]
                if isinstance(it, list):
                    for i, s in enumerate(it):
                        stack.append((s, b, f"{p}/items/{i}"))
                else:
                    stack.append((it, b, f"{p}/items"))
            if not _LISTS.isdisjoint(o):
                for k in SCHEMA_LISTS:
                    v = o.get(k)
                    if isinstance(v, list):
                        for i, s in enumerate(v):
                            stack.append((s, b, f"{p}/{k}/{i}"))
            for k in SCHEMA_MAPS:
                v = o.get(k)
                if isinstance(v, dict):
                    for name, s in v.items():
                        if isinstance(s, (dict, bool)):
                            stack.append((s, b, f"{p}/{k}/{escape_pointer(name)}"))
        return first

    def _identify(self, o: dict, b: str) -> str:
        """Record the ``$id``/``id`` resource and the anchors that schema object ``o`` (under
        base URI ``b``) declares; its base URI."""
        sid = o.get("$id")
        if not isinstance(sid, str) and self.draft <= 4 and isinstance(o.get("id"), str):
            sid = o.get("id")
        if isinstance(sid, str):
            if sid.startswith("#"):
                self.anchors[(b, sid[1:])] = o
            else:
                nb, frag = urldefrag(join_uri(b, sid))
                b = nb
                self.resources.setdefault(b, o)
                if frag and not frag.startswith("/"):
                    self.anchors[(b, frag)] = o
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(o.get(key), str):
                self.anchors[(b, o[key])] = o
        return b

    def in_draft(self, obj: dict, ptr: str) -> dict:
        """``obj`` without the keywords its draft does not have (a copy, kept alive)."""
        later = LATER_KEYWORDS.get(self.draft)
        if not later or later.isdisjoint(obj):
            return obj
        name = {4: "draft-04", 6: "draft-06", 7: "draft-07"}[self.draft]
        for k in obj:
            if k in later:
                warn_keyword_ignored(k, ptr, f"the schema declares {name}, which has no such keyword")
        out = {k: v for k, v in obj.items() if k not in later}
        self.keep.append(out)
        return out

    def resolve(self, ref: str, base: Optional[str], where: str) -> int:
        """Node id of the target of ``$ref``; UnsupportedSchemaError if it is not local."""
        base = base or ""
        hit = self._by_pointer.get((ref, base))
        if hit is not None:
            return hit
        if not base and ref[:1] == "#" and "\t" not in ref and "\r" not in ref and "\n" not in ref:
            doc_uri, frag = "", ref[1:]  # (what urldefrag gives, without its parsing)
        else:
            doc_uri, frag = urldefrag(join_uri(base, ref))
        if doc_uri == "":
            target = self.resources.get("", self.root)
        else:
            target = self.resources.get(doc_uri)
            if target is None:
                target = self.resources.get(doc_uri.rstrip("#"))
        if target is None:
            raise UnsupportedSchemaError(f"remote $ref {ref!r} cannot be resolved", where)
        frag = unquote(frag)
        ptr = "#"
        if frag.startswith("/"):
            o = target
            for tok in frag[1:].split("/"):
                tok = tok.replace("~1", "/").replace("~0", "~")
                if isinstance(o, dict) and tok in o:
                    o = o[tok]
                elif isinstance(o, list) and tok.isdigit() and int(tok) < len(o):
                    o = o[int(tok)]
                else:
                    raise UnsupportedSchemaError(f"$ref {ref!r} points to nothing", where)
                ptr += "/" + escape_pointer(tok)
            target = o
        elif frag:
            t = self.anchors.get((doc_uri, frag))
            if t is None and doc_uri == "":
                t = self.anchors.get(("", frag))
            if t is None:
                raise UnsupportedSchemaError(f"$ref {ref!r}: unknown anchor", where)
            target = t
        if not isinstance(target, (dict, bool)):
            raise UnsupportedSchemaError(f"$ref {ref!r} does not point to a schema", where)
        base_of = self.nodes[self.by_id[id(target)]][1] if id(target) in self.by_id else doc_uri
        n = self.nid(target, base_of, ptr)
        if not frag or frag.startswith("/"):  # (anchors are looked up again: see __init__)
            self._by_pointer[(ref, base)] = n
        return n

    def synth(self, obj, where: str) -> int:
        """Register a synthetic schema object (built by the converter); ``where`` is the
        pointer of the keyword it was derived from (used in error messages)."""
        self.keep.append(obj)
        return self.index(obj, "", where, check=False)
