"""Compile and runtime limits.

``CompileLimits`` bound compile time and memory; past one, compiling raises
``GrammarLimitError`` naming the limit (never a hang or a silently smaller grammar).
``RuntimeLimits`` bound the work and memory of one matcher call; past one, the matcher enters a
sticky error state (see ``RuntimeLimits``).

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> small = xmask.GrammarCompiler(info, limits=xmask.CompileLimits(max_enum_values=2))
    >>> small.compile_json_schema({"enum": [1, 2, 3]})
    Traceback (most recent call last):
        ...
    xmask.errors.GrammarLimitError: enum with more than 2 values
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional


@dataclass(frozen=True)
class CompileLimits:
    """Caps on one compile.  The defaults fit every MaskBench schema that compiles at all in
    under a minute on one core; raise them for unusual grammars, lower them on a server that
    compiles untrusted schemas.

    * ``max_automaton_states``: states of the byte-level automaton (all rules together);
    * ``max_nfa_states``: states of one rule's intermediate NFA (before determinization),
      checked twice before anything is allocated: a bounded repeat's estimated expansion
      (nested counts multiply: ``(a{0,100}){0,100}`` is 10,000 copies of ``a``), and the NFA
      states held by the subsets of the determinization (summed over the rule's DFA states:
      nested repeats of nullable items keep a small DFA whose subsets grow quadratically).
      At the default (2M) a rule that fails either check costs about 1-2 s and ~250 MB
      before the error;
    * ``max_repeat``: a repeat count (``x{0,N}``, ``maxLength`` chunk counts);
    * ``max_schema_rules``: rules a JSON Schema expands to;
    * ``max_enum_values``: values of one ``enum``;
    * ``max_alternatives``: alternatives from distributing ``anyOf``/``oneOf``/``type`` lists
      through the keywords beside them, at one schema location;
    * ``max_context_work``: the token-mask cache's walks into callers' contexts, estimated
      before classifying as (states of a rule that read bytes) x (places the rule returns to),
      summed over rules.  A recursive rule called from inside a big repeat makes it quadratic:
      ``root ::= ("[" root "]"){0,10000} | "x"`` is 20,000 x 10,000 = 2e8 (about 40 s
      with the default tokenizer) and is refused at once; ``{0,3000}`` (1.8e7) compiles in
      ~1.5 s.  The largest MaskBench schema needs 4.6e5;
    * ``max_compile_seconds``: wall-clock time of one compile (default 60 s; None:
      unbounded).  Checked inside the native loops too (determinization every 256 DFA states,
      the token-mask classifier every 256 byte steps, or every step when steps are slow, and
      every 4,096 closure items inside one step), so
      the error comes shortly after the deadline, not exactly at it.  The default is a
      backstop for what the size limits do not foresee (e.g. a recursive rule called from
      inside a 10,000-count repeat); every MaskBench schema that compiles needs far less.
      ``CompiledGrammar.precompute()`` runs under the same deadline, and a fill that
      classifies states of the lazy token-mask cache gives them the same time, one deadline
      for all the states it classifies;
    * ``max_compile_memory_bytes``: the largest tables of a compile, each checked as it grows,
      before the memory is taken: the NFA's edge arrays, the determinizer's transitions and
      subsets, and the parse stack of one token-mask classification (also when a fill
      classifies a state lazily; one parse step of it may handle at most this / 64 closure
      items, its scratch being < 64 bytes an item).  Default 1 GiB; MaskBench schemas need at most a few tens
      of MB in each;
    * ``max_classify_tops``: stack tops after one byte while classifying the vocabulary for
      one state of the token-mask cache (lazily at a fill, or in ``precompute()``).  The
      graph-structured stack keeps one top per automaton state, so ambiguity alone no longer
      grows them (``r0 ::= (("  " | . r0 [\\u00e0-\\u00ff] r0)?){1,3}`` once doubled them
      with every two spaces of a token, now 9 at most); many distinct rules live at once
      still do; the largest MaskBench schema needs ~400.
    """

    max_automaton_states: int = 200_000
    max_nfa_states: int = 2_000_000
    max_repeat: int = 10_000
    max_schema_rules: int = 200_000
    max_enum_values: int = 100_000
    max_alternatives: int = 2048
    max_compile_seconds: Optional[float] = 60.0
    max_context_work: int = 20_000_000
    max_classify_tops: int = 100_000
    max_compile_memory_bytes: int = 1 << 30

    def __post_init__(self):
        t = self.max_compile_seconds
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0):
            raise ValueError(f"CompileLimits.max_compile_seconds must be a positive number or None, got {t!r}")
        for f in fields(self):
            if f.name == "max_compile_seconds":
                continue
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"CompileLimits.{f.name} must be a positive int, got {v!r}")


DEFAULT_LIMITS = CompileLimits()


@dataclass(frozen=True)
class RuntimeLimits:
    """Caps on what one ``GrammarMatcher`` call (fill, accept, one draft-tree node) may do,
    so that an ambiguous grammar from an untrusted client cannot stall a decoding step.

    * ``max_stack_tops``: parse-stack tops in the parser state after one byte (the state is a
      set of stack tops; ambiguous grammars grow it, up to 2^n after n bytes without the
      graph-structured stack; JSON and MaskBench schemas need a few to a few hundred);
    * ``max_work_per_call``: work units of one call (``accept_string``: of each 4 KiB of its
      input): each byte step costs 1 plus the closure work it does (frames visited; under the
      graph-structured stack the (state, parent) pairs it propagates and the parent-set
      entries it reads) plus the stack nodes it creates, each token a fill checks costs 1 (a
      step stops inside its closure once it passes the call's remaining budget); a fill may
      spend 16 units more per cached uncertain token it checks (at most one per vocabulary
      token: where a chunked ``maxLength`` repeat ends, nearly every token is uncertain and
      takes ~10 units to check).  A
      JSON fill on Llama-3 takes 0 to a few thousand units (MaskBench: p99 ~800, max ~60,000),
      an exact fill near the recursion bound (every token checked) ~140,000, a 4 KiB JSON
      string ~8,000; ``root ::= "a" root | "a" root "b" | ""`` costs ~depth / 2 per byte (its
      closure walks every open frame, as an Earley parser's completion does), so 1,000 'a' in
      one call take ~500,000.  A unit takes ~10-100 ns, up to ~1 us once a matcher's stack
      arena holds millions of nodes (cache misses), so the default bounds a call to well under
      a second;
    * ``max_stack_depth``: frames of any stack top (None: no cap here; the process-wide
      ``set_max_recursion_depth`` bound still applies, which drops deeper paths instead);
    * ``max_stack_bytes``: heap bytes of the matcher's parse stack (arena, parent sets,
      history, step scratch; what ``_memory_bytes()`` reports), checked whenever one of its
      arrays grows, so across calls too.  Default 1 GiB.  JSON takes ~85 bytes per accepted
      token (100k tokens ~8.5 MB; ``max_rollback_tokens`` drops older history), while
      ``root ::= "a" root | "a" root "b" | ""`` keeps O(depth) parents per step, O(n^2)
      bytes: ~270 MB at 9,000 'a'.

    Crossing a cap puts the matcher in a sticky error state: the call that crossed it changes
    no state (an accept returns False; a fill writes an all-zero row), and from then on every
    ``accept_token`` / ``accept_string`` returns False and every fill (single, batch and draft
    tree) writes all-zero rows, without raising, so one bad request never fails a batch.
    ``GrammarMatcher.limit_error`` is then a ``RuntimeLimitError`` whose ``limit`` names the
    field (the server fails that request, e.g. ``raise matcher.limit_error``); ``reset()``
    or ``rollback(n >= 1)`` clears it (the state goes back to one reached within the caps).
    The start state is built under ``max_work_per_call`` too: a grammar whose start alone
    needs more (nullable rules called from big repeats) puts each new or reset matcher in
    the error state.
    Other matchers, of the same grammar or not, are never affected.

    Worst case of one call: the caps are checked after every byte step and the work cap also
    inside a step's closure, so a call does at most ``max_work_per_call`` units plus one step's
    new tops and nodes (one step from t <= ``max_stack_tops`` tops closes each over the calls
    and returns it can reach: t x (rule frames entered from one state + the depth popped
    through finished frames), cut off at the remaining budget).  A fill adds
    O(vocab_size / 32) word operations for the row and, once per grammar state ever,
    classifying that state's tokens (bounded by ``CompileLimits``, one deadline per fill).
    Measured on Llama-3 under the defaults (README, bench/bench_worst_call.py): 71-80 ms for
    calls stopped by the work cap, ~0.4 ms for the largest single steps, fills up to ~14 ms.

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> ab = 'root ::= "a" root | "a" root "b" | ""'  # O(depth) work per byte
        >>> cg = xmask.GrammarCompiler(info).compile_grammar(ab)
        >>> m = xmask.GrammarMatcher(cg, limits=xmask.RuntimeLimits(max_work_per_call=10_000))
        >>> m.accept_string("a" * 200)
        False
        >>> m.limit_error.limit
        'max_work_per_call'
        >>> m.reset(); m.limit_error is None
        True
    """

    max_stack_tops: int = 10_000
    max_work_per_call: int = 1_000_000
    max_stack_depth: Optional[int] = None
    max_stack_bytes: int = 1 << 30

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "max_stack_depth" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"RuntimeLimits.{f.name} must be a positive int, got {v!r}")


DEFAULT_RUNTIME_LIMITS = RuntimeLimits()
