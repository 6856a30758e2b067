"""The public ``xmask.Grammar``: the grammar IR plus XGrammar's constructors.

:class:`Grammar` is :class:`xmask.grammar.ir.Grammar` (the rule table every front end builds)
with the constructors of XGrammar 0.2.8's API on top: ``from_ebnf``, ``from_regex``,
``from_lark``, ``from_json_schema``, ``from_structural_tag``, ``builtin_json_grammar``,
``union`` and ``concat``.  Printing, ``serialize_json`` / ``deserialize_json`` and pickling are
the IR's own (and give back this class).

It lives here, above the front ends, so that the IR imports none of them: the grammar layer's
imports form a stack (``ir`` at the bottom, the front ends on it, this module on top).  Front
ends return IR grammars; every method here returns a ``Grammar`` of this class
(``Grammar.of`` shares the IR grammar's rules: nothing is copied or checked again).  Code
below this module that needs a grammar calls the front end itself (``parse_ebnf``,
``json_schema_to_grammar``...).

Example::

    >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
    >>> print(g)
    root ::= "yes" | "no"
    >>> isinstance(g, ir.Grammar), Grammar.deserialize_json(g.serialize_json()) == g
    (True, True)
"""

from __future__ import annotations

from typing import Optional

from .grammar import ir
from .grammar.builtin_json import builtin_json_grammar
from .grammar.combine import combine_grammars
from .grammar.ebnf import parse_ebnf
from .grammar.json_schema import json_schema_to_grammar
from .grammar.lark import parse_lark
from .grammar.regex import regex_to_grammar
from .structural.lower import structural_tag_to_grammar
from .structural.spec import structural_tag_argument

__all__ = ["Grammar"]


class Grammar(ir.Grammar):
    """A grammar (XGrammar's ``Grammar``): ordered ``rules`` (name -> IR expression) and the
    ``root`` rule name.

    Build one with :meth:`from_ebnf`, :meth:`from_json_schema`, :meth:`from_regex`... or from
    rules (``Grammar(rules, root="root")``); ``str(grammar)`` prints normalized EBNF that
    parses back to an equivalent grammar.

    Example::

        >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
        >>> print(g)
        root ::= "yes" | "no"
    """

    __slots__ = ()

    @staticmethod
    def from_ebnf(text: str, root_rule_name: str = "root") -> "Grammar":
        """Parse GBNF / XGrammar-dialect EBNF text.

        Example::

            >>> Grammar.from_ebnf('root ::= [a-z]+ ("," [a-z]+)*').root
            'root'
        """
        return Grammar.of(parse_ebnf(text, root_rule_name=root_rule_name))

    @staticmethod
    def from_regex(pattern: str) -> "Grammar":
        """A grammar matching exactly the strings that fully match ``pattern`` (Python/JS regex
        syntax; backreferences and lookaround raise ``RegexSyntaxError`` with the position).

        Example::

            >>> print(Grammar.from_regex(r"[0-9]{2}-[a-z]+"))
            root ::= [0-9]{2} "-" [a-z]+
        """
        return Grammar.of(regex_to_grammar(pattern))

    @staticmethod
    def from_lark(lark_string: str, *, tokenizer_info=None, named_grammars=None) -> "Grammar":
        """A grammar from Lark text (the dialect vLLM sends; llguidance's extensions ``%json``,
        ``@name``, special tokens).  ``start`` is the root.  ``tokenizer_info`` resolves named
        special tokens such as ``<|python_tag|>`` (without it they raise); ``named_grammars``
        maps the names used as ``@name`` to a ``Grammar`` or Lark text.  Priorities are
        ignored with a warning; the mapping of ``%ignore`` and every construct are described
        in :mod:`xmask.grammar.lark`.  Errors are ``GrammarSyntaxError`` with line and column.

        Example::

            >>> g = Grammar.from_lark('start: "yes" | "no"')
            >>> print(g)
            root ::= "yes" | "no"
        """
        return Grammar.of(parse_lark(lark_string, tokenizer_info=tokenizer_info,
                                     named_grammars=named_grammars))

    @staticmethod
    def from_json_schema(schema, *, any_whitespace=True, indent=None, separators=None,
                         strict_mode=True, max_whitespace_cnt=None, lenient=False,
                         any_order=False, limits=None) -> "Grammar":
        """A grammar of the JSON texts valid under ``schema`` (str, dict, or pydantic model).

        Keywords that cannot be enforced exactly raise ``UnsupportedSchemaError`` naming the
        JSON pointer, unless ``lenient=True`` (then they are loosened, with a warning each).
        ``limits`` (an ``xmask.CompileLimits``) caps enum sizes, alternatives and rule counts.

        Example::

            >>> g = Grammar.from_json_schema({"type": "integer", "minimum": 1})
            >>> g.root
            'root'
        """
        return Grammar.of(json_schema_to_grammar(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, lenient=lenient,
            any_order=any_order, limits=limits,
        ))

    @staticmethod
    def from_structural_tag(*args, **kwargs) -> "Grammar":
        """A grammar from a structural tag: ``from_structural_tag(structural_tag)`` with a
        ``StructuralTag``, its JSON text or a dict, or the deprecated
        ``from_structural_tag(tags, triggers)`` (``StructuralTagItem`` list + trigger strings).
        Every XGrammar 0.2.8 format; see :mod:`xmask.structural.lower` for the semantics.
        Malformed input raises ``InvalidStructuralTagError`` naming the JSON path.  Token
        *strings* need a tokenizer: use ``GrammarCompiler.compile_structural_tag``.

        Example::

            >>> g = Grammar.from_structural_tag({"type": "structural_tag", "format": {
            ...     "type": "triggered_tags", "triggers": ["<f"], "tags": [{"begin": "<f>",
            ...     "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
            ...     "end": "</f>"}]}})
            >>> g.root
            'root'
        """
        return Grammar.of(structural_tag_to_grammar(structural_tag_argument(args, kwargs)))

    @staticmethod
    def builtin_json_grammar() -> "Grammar":
        """The built-in grammar of any JSON value (RFC 8259), with any JSON whitespace.

        Example::

            >>> g = Grammar.builtin_json_grammar()
            >>> g.root
            'root'
        """
        global _BUILTIN_JSON
        if _BUILTIN_JSON is None:  # (the IR grammar is cached; so is its public view)
            _BUILTIN_JSON = Grammar.of(builtin_json_grammar())
        return _BUILTIN_JSON

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """A grammar matching what any of ``grammars`` matches (XGrammar's ``Grammar.union``):
        ``root ::= g1 | g2 | ...``, each part's rules copied under fresh names.  At least one
        grammar is needed (the union of none would match nothing).

        Example::

            >>> print(Grammar.union(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("b+")))
            root ::= root_1 | root_2
            root_1 ::= "a"
            root_2 ::= "b"+
        """
        return Grammar.of(combine_grammars("union", grammars))

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """A grammar matching a string of each of ``grammars`` in turn (XGrammar's
        ``Grammar.concat``): ``root ::= g1 g2 ...``; with no grammar, the empty string.

        Example::

            >>> print(Grammar.concat(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("b+")))
            root ::= root_1 root_2
            root_1 ::= "a"
            root_2 ::= "b"+
        """
        return Grammar.of(combine_grammars("concat", grammars))


_BUILTIN_JSON: Optional[Grammar] = None
