"""Helpers for tests and notebooks, under ``xgrammar.testing``'s names and signatures.

Bitmask helpers take NumPy int32 arrays or torch.int32 tensors (any device: they are read on
the host) and return the kind they were given.  The underscore names are XGrammar's own (its
users call them in their tests); they are part of xmask's drop-in surface.
"""

from __future__ import annotations

import time
from typing import List, Optional, Tuple, Union

import numpy as np

from ._bitmask_rows import disallowed_bits, is_torch_bitmask
from .errors import BitmaskError
from .grammar_api import Grammar


def is_grammar_accept_string(grammar: Union[Grammar, str], text: Union[str, bytes]) -> bool:
    """Whether ``text`` is a complete sentence of ``grammar`` (a Grammar or EBNF text).

    Uses the independent reference recognizer (no tokenizer involved).

    Example::

        >>> is_grammar_accept_string('root ::= "a"+', "aaa")
        True
        >>> is_grammar_accept_string('root ::= "a"+', "ab")
        False
    """
    from .grammar.recognizer import Recognizer

    if isinstance(grammar, str):
        grammar = Grammar.from_ebnf(grammar)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return Recognizer(grammar).accepts(data)


def _json_schema_to_ebnf(schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                         separators: Optional[Tuple[str, str]] = None,
                         max_whitespace_cnt: Optional[int] = None, strict_mode: bool = True,
                         json_format: str = "json", any_order: bool = False) -> str:
    """The EBNF text of the grammar for JSON Schema ``schema`` (str, dict or pydantic model).

    Only ``json_format="json"`` (XGrammar's XML tool-call formats are not supported).

    Example::

        >>> print(_json_schema_to_ebnf({"type": "boolean"}))
        root ::= "true" | "false"
    """
    if json_format != "json":
        raise ValueError(f"json_format {json_format!r} is not supported by xmask (only 'json')")
    return str(Grammar.from_json_schema(
        schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
        strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
    ))


def _regex_to_ebnf(regex: str, with_rule_name: bool = True) -> str:
    r"""The EBNF text of the grammar that full-matches ``regex``.

    ``with_rule_name=False`` gives only the root rule's body (XGrammar's single-rule output).

    Example::

        >>> _regex_to_ebnf("[a-z]+(x|y)")
        'root ::= [a-z]+ ("x" | "y")'
        >>> _regex_to_ebnf("ab?", with_rule_name=False)
        '"a" "b"?'
    """
    text = str(Grammar.from_regex(regex))
    if with_rule_name:
        return text
    head, _, body = text.partition(" ::= ")
    if head != "root" or "\n" in body:
        raise ValueError("with_rule_name=False needs a single-rule grammar; this one has more")
    return body


def _get_matcher_from_grammar(grammar: Union[Grammar, str], **kwargs):
    """A matcher for ``grammar`` (Grammar or EBNF text) that only matches strings.

    The tokenizer is a one-id placeholder vocabulary (xmask has no empty vocabulary) and the
    matcher is made with ``terminate_without_stop_token=True``; ``kwargs`` go to the matcher.

    Example::

        >>> m = _get_matcher_from_grammar('root ::= "ab"')
        >>> m.accept_string("ab"), m.is_terminated()
        (True, True)
    """
    return _get_matcher_from_grammar_and_tokenizer_info(
        grammar, None, terminate_without_stop_token=True, **kwargs
    )


def _get_matcher_from_grammar_and_tokenizer_info(grammar: Union[Grammar, str],
                                                 tokenizer_info=None, **kwargs):
    """A ``GrammarMatcher`` for ``grammar`` on ``tokenizer_info`` (default: a placeholder).

    Compiled without the compiler cache; ``kwargs`` go to ``GrammarMatcher``.

    Example::

        >>> import xmask
        >>> info = xmask.default_tokenizer_info()
        >>> m = _get_matcher_from_grammar_and_tokenizer_info('root ::= "a"', info)
        >>> m.accept_string("a")
        True
    """
    from .compiler.grammar_compiler import GrammarCompiler
    from .runtime.matcher import GrammarMatcher
    from .tokenizer.info import TokenizerInfo

    if tokenizer_info is None:
        tokenizer_info = TokenizerInfo([None])
    compiled = GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(grammar)
    return GrammarMatcher(compiled, **kwargs)


def _is_grammar_accept_string(grammar: Union[Grammar, str], input_str: Union[str, bytes], *,
                              debug_print: bool = False, print_time: bool = False,
                              require_termination: bool = True) -> bool:
    """Whether the matcher for ``grammar`` accepts ``input_str`` (and, by default, ends there).

    Unlike ``is_grammar_accept_string`` this runs xmask's compiled matcher, not the reference
    recognizer.  ``debug_print`` prints the verdict; ``print_time`` the time taken.

    Example::

        >>> _is_grammar_accept_string('root ::= "a"+', "aa")
        True
        >>> _is_grammar_accept_string('root ::= "a" "b"', "a", require_termination=False)
        True
    """
    matcher = _get_matcher_from_grammar(grammar)
    start = time.monotonic_ns()
    accepted = matcher.accept_string(input_str)
    elapsed_us = (time.monotonic_ns() - start) / 1e3
    if print_time:
        print(f"Accepting {input_str!r}, result: {accepted}, time: {elapsed_us} us")
    if debug_print:
        print(f"accepted: {accepted}, terminated: {matcher.is_terminated()}")
    if not accepted:
        return False
    return matcher.is_terminated() if require_termination else True


def _host_rows(bitmask) -> np.ndarray:
    """The bitmask as a 2-D NumPy int32 array (a torch tensor is read on the host)."""
    if is_torch_bitmask(bitmask):
        bitmask = bitmask.detach().cpu().numpy()
    return bitmask[None, :] if bitmask.ndim == 1 else bitmask


def _row_disallowed(bitmask, vocab_size: int, index: int) -> np.ndarray:
    rows = _host_rows(bitmask)
    if rows.ndim != 2:
        raise BitmaskError(f"bitmask must be 1-D or 2-D, got shape {tuple(rows.shape)}")
    if not 0 <= index < rows.shape[0]:
        raise BitmaskError(f"index {index} out of range for a bitmask of {rows.shape[0]} rows")
    if not 0 <= vocab_size <= 32 * rows.shape[1]:
        raise BitmaskError(f"vocab_size {vocab_size} exceeds the bitmask width {32 * rows.shape[1]}")
    return disallowed_bits(rows[index:index + 1], vocab_size)[0]


def _get_masked_tokens_from_bitmask(bitmask, vocab_size: int, index: int = 0) -> List[int]:
    """The ids in ``[0, vocab_size)`` that row ``index`` of ``bitmask`` rejects, ascending.

    Example::

        >>> bm = np.full((1, 1), -1, np.int32); bm[0, 0] = ~0b110
        >>> _get_masked_tokens_from_bitmask(bm, 8)
        [1, 2]
    """
    return np.flatnonzero(_row_disallowed(bitmask, vocab_size, index)).tolist()


def _is_single_token_bitmask(bitmask, vocab_size: int, index: int = 0) -> Tuple[bool, int]:
    """``(True, id)`` if row ``index`` allows exactly one id below ``vocab_size``, else
    ``(False, -1)``.

    Example::

        >>> _is_single_token_bitmask(np.array([[0b1000]], np.int32), 32)
        (True, 3)
    """
    allowed = np.flatnonzero(~_row_disallowed(bitmask, vocab_size, index))
    return (True, int(allowed[0])) if allowed.size == 1 else (False, -1)


def bool_mask_to_bitmask(bool_mask):
    """A (batch, V) bool mask (True = allowed) as an int32 bitmask (batch, ceil(V / 32)).

    Bits past V are set (allowed), as in XGrammar.  A torch tensor gives a torch.int32 tensor
    on the same device; a NumPy array gives a NumPy array.

    Example::

        >>> bool_mask_to_bitmask(np.array([[True, False, True]])).tolist()
        [[-3]]
    """
    torch_in = type(bool_mask).__module__.startswith("torch")
    host = bool_mask.detach().cpu().numpy() if torch_in else np.asarray(bool_mask)
    if host.ndim != 2:
        raise BitmaskError(f"bool_mask must be 2-D (batch, vocab), got shape {host.shape}")
    batch, vocab = host.shape
    words = (vocab + 31) // 32
    padded = np.ones((batch, 32 * words), dtype=bool)
    padded[:, :vocab] = host.astype(bool, copy=False)
    packed = np.packbits(padded, axis=-1, bitorder="little")
    bitmask = np.ascontiguousarray(packed).view("<i4").astype(np.int32, copy=False)
    if not torch_in:
        return bitmask
    import torch

    return torch.from_numpy(bitmask).to(bool_mask.device)


def bitmask_to_bool_mask(bit_mask, vocab_size: Optional[int] = None):
    """An int32 bitmask (batch, words) as a (batch, vocab_size) bool mask, True = allowed.

    ``vocab_size`` defaults to ``32 * words``.  Torch in, torch out (CPU); NumPy in, NumPy out.

    Example::

        >>> bitmask_to_bool_mask(np.array([[-3]], np.int32), 3).tolist()
        [[True, False, True]]
    """
    torch_in = is_torch_bitmask(bit_mask)
    rows = _host_rows(bit_mask)
    if rows.ndim != 2:
        raise BitmaskError(f"bit_mask must be 1-D or 2-D, got shape {tuple(rows.shape)}")
    width = 32 * rows.shape[1] if vocab_size is None else int(vocab_size)
    if not 0 <= width <= 32 * rows.shape[1]:
        raise BitmaskError(f"vocab_size {width} exceeds the bitmask width {32 * rows.shape[1]}")
    allowed = ~disallowed_bits(rows, width)
    if not torch_in:
        return allowed
    import torch

    return torch.from_numpy(allowed)


def _traverse_draft_tree(retrieve_next_token, retrieve_next_sibling, draft_tokens, matcher,
                         allocate_token_bitmask, time_threshold: float = -1.0) -> bool:
    """XGrammar's backward-compatible wrapper for ``GrammarMatcher.traverse_draft_tree``.

    Example::

        >>> _traverse_draft_tree(next_token, next_sibling, draft, matcher, bitmask)  # doctest: +SKIP
    """
    return matcher.traverse_draft_tree(retrieve_next_token, retrieve_next_sibling, draft_tokens,
                                       allocate_token_bitmask, time_threshold)
