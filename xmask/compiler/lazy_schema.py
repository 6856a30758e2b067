"""A JSON Schema compile in two parts: the first mask from a partial grammar, the rest after.

The first mask at the start of a schema needs only the rules its tokens can reach.  The
converter's ``run_partial`` (:mod:`xmask.grammar.json_schema.converter`) generates the root and
every rule that cannot safely wait; each rule left pending is certainly productive and cannot
raise anything but a compile limit (:mod:`xmask.grammar.json_schema.deferrable`).  The first
part compiles that grammar with the pending rules as *stubs* (``build_automaton(stubs=...)``:
called rules whose start state has no edge and ``FLAG_STUB``), and stubs too the generated
rules that no path reaches within a few bytes of the start (:mod:`.first_reach`: a rule that
had to be generated for its errors need not be built for the first mask).  Its masks are
exact while no walk wants a byte inside a stub:

* a token whose every path stays out of the stubs, or stops right at a stub's start, has the
  same fate in the whole grammar (a stub's rule has a sentence, so stopping there is viable);
* a path that wants a byte from a stub sets the tables' ``stub_hit`` flag (in the C step,
  ``_stack_gss._step_nodes``; the classifier and the fills' uncertain checks both step there),
  and the matcher then builds the whole grammar and fills again.

The first part's FIRST / FOLLOW sets see each stub as its placeholder byte (``partial_grammar``):
one ASCII byte for a JSON value (a superset of what one starts with), any byte for any other
rule (which may also be empty), so the classifier never rejects a token by lookahead where the
real rule might take it or let it pass: it walks it, and the walk meets the stub.

A matcher of a lazy grammar is *provisional* until it does anything but fill at the start
(``runtime/matcher.pyx``): then it moves to the whole grammar, which :class:`LazyRest` builds
once, in a background thread started after the first fill that needed no stub (by the next
accept the server has usually run a forward pass), or in the caller when it needs it first.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> cg = xmask.GrammarCompiler(info).compile_json_schema(
    ...     {"type": "object", "properties": {"alpha": {"type": "string"}}})
    >>> cg._rest.first is not None   # built in two parts: the whole grammar is pending
    True
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
from typing import Optional

from .._deadline import compile_deadline
from .._gc_pause import gc_paused
from .._recursion import deep_recursion
from .._switch_interval import responsive_switching
from ..grammar.ir import CharClass, Grammar, iter_nodes
from .first_reach import first_part_rules

# A stub's placeholder body for the passes that run before its edge is cut: for a JSON value
# (a pending rule, or a generated value rule), one ASCII byte (every JSON value, whitespace
# included, starts with one); for any other generated rule (a key, a member chain: it may be
# empty or start with any byte), one byte of any value.  The placeholder only has to cover
# what the real rule may start with: every token that would go into or past it steps into the
# stub's start (no lookahead rejects it first), which sets the stub flag.
STUB_BODY = CharClass(((0, 0x7F),))
ANY_BYTE_STUB_BODY = CharClass(((0, 0xFF),), byte_level=True)


def partial_grammar(rules: dict, stubs, values=None) -> Grammar:
    """The first part's grammar: ``rules`` plus a stub body for every name in ``stubs`` (the
    ASCII one if ``values`` is None or has it, else the any-byte one)."""
    out = dict(rules)
    for name in stubs:
        out[name] = STUB_BODY if values is None or name in values else ANY_BYTE_STUB_BODY
    return Grammar(out, root="root")


class LazyRest:
    """The rest of a lazily compiled grammar: builds the whole grammar once (thread-safe) and
    installs it into its owner ``CompiledGrammar`` (whose slots held the first part until
    then), or keeps the error its build raised (raised again to every caller).

    ``first``: the first part's ``(automaton tables, vocabulary tables, mask cache)`` while the
    whole grammar is pending, then None (provisional matchers keep their own references).
    ``converter``: the JSON Schema converter after ``run_partial``; ``build(grammar)``: the
    compiler's build of a whole grammar (a ``CompiledGrammar``); ``max_seconds``: the compile
    deadline the rest gets (its own, from when it starts).  The owner is passed to each call,
    never stored (no reference cycle).
    """

    __slots__ = ("_lock", "_converter", "_build", "_max_seconds", "_error", "_started",
                 "first", "source", "build_seconds")

    def __init__(self, first, converter, build, max_seconds):
        self._lock = threading.Lock()
        self._converter = converter
        self._build = build
        self._max_seconds = max_seconds
        self._error: Optional[BaseException] = None
        self._started = False
        self.first = first
        self.source = None  # how to rebuild the grammar IR (set by the compiler)
        self.build_seconds = None  # the whole grammar's build, once done

    def ensure(self, owner) -> None:
        """Build the whole grammar and install it into ``owner``, unless done already."""
        if self.first is None:
            return
        with self._lock:
            if self.first is None:
                return
            if self._error is not None:
                raise self._error
            t0 = time.perf_counter()
            try:
                with deep_recursion(), gc_paused(), responsive_switching(), \
                        compile_deadline(self._max_seconds):
                    full = self._build(self._converter.finish())
            except BaseException as e:  # kept: every later caller gets the same error
                self._error = e
                self._converter = None  # (its schema document and memos are done)
                raise
            self._converter = None
            self.build_seconds = time.perf_counter() - t0
            if self.source is not None:
                full._hold_source(self.source)
            owner._install_whole(full)
            self.first = None  # after the install: a reader seeing None finds the whole grammar

    def start(self, owner) -> None:
        """Have the background worker build the whole grammar (once; a no-op when built or
        queued).  An error stays for the caller that needs the grammar."""
        if self._started or self.first is None:
            return
        self._started = True
        _worker_queue().put((self, owner))


# One worker thread for the whole process builds the rests in order (a queue put costs ~1 us
# in the first fill; starting a thread there cost ~100 us).  A caller that needs a rest the
# worker has not reached builds it itself (LazyRest.ensure); the worker then finds it done.
_QUEUE: Optional[queue.SimpleQueue] = None
_QUEUE_LOCK = threading.Lock()


def _worker_queue() -> queue.SimpleQueue:
    global _QUEUE
    q = _QUEUE
    if q is None:
        with _QUEUE_LOCK:
            if _QUEUE is None:
                q = queue.SimpleQueue()
                threading.Thread(target=_work, args=(q,), name="xmask-lazy-rest",
                                 daemon=True).start()
                _QUEUE = q
            q = _QUEUE
    return q


def _forget_worker() -> None:
    # a forked child has the queue but not the thread: it starts its own on first use
    global _QUEUE, _QUEUE_LOCK
    _QUEUE, _QUEUE_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)


def _work(q: queue.SimpleQueue) -> None:
    while True:
        rest, owner = q.get()
        try:
            rest.ensure(owner)
        except BaseException:
            pass  # kept in the rest's _error: raised where the whole grammar is needed
        del rest, owner  # (the grammar is not kept alive by an idle worker)


def compile_schema_lazily(converter, tokenizer_info, vocab_tables, *, max_threads: int,
                          limits):
    """Compile the converter's schema in two parts (see the module docstring): the first part's
    ``CompiledGrammar`` with its :class:`LazyRest`, or the whole grammar's when nothing can
    wait.  ``limits``: the compiler's ``CompileLimits`` (the rest gets the same deadline)."""
    from .compiled import CompiledGrammar

    t0 = time.perf_counter()
    rules, pending = converter.run_partial()
    build = functools.partial(_build_whole, tokenizer_info=tokenizer_info,
                              vocab_tables=vocab_tables, max_threads=max_threads, limits=limits)
    if not pending or _whole_now(rules, pending, limits):
        return build(converter.finish())
    built, stubs, near = first_part_rules(rules, pending)
    if near:
        while near and pending:  # values a first token may step into: generated now, so that
            rules, pending = converter.generate_now(near)  # the first fill meets no stub
            built, stubs, near = first_part_rules(rules, pending)
        if not pending or _whole_now(rules, pending, limits):
            return build(converter.finish())
    # (the converter's value rules include the pending ones: each is a queued value)
    grammar = partial_grammar(built, stubs, converter.value_rules())
    first = CompiledGrammar._build(grammar, tokenizer_info, vocab_tables,
                                   max_threads=max_threads, limits=limits, stubs=stubs)
    if (_near(first._automaton.n_states, limits.max_automaton_states)
            or _near(time.perf_counter() - t0, limits.max_compile_seconds)):
        return build(converter.finish())  # (its limit errors are the compile's, as eager)
    tables = (first._automaton_tables, first._vocab_tables, first._mask_cache)
    return first._with_rest(LazyRest(tables, converter, build, limits.max_compile_seconds))


def _whole_now(rules: dict, pending, limits) -> bool:
    # whether the whole grammar is built at once: it may cross a compile limit (raised by
    # the compile, as eager)
    return (_near(len(rules) + len(pending), limits.max_schema_rules)
            or _large(rules, len(pending), limits.max_automaton_states))


# Rules (generated and pending) past which the whole grammar's IR is estimated (_large): a
# smaller grammar needing a state limit's worth of automaton is rare.  At most _SAMPLED_RULES
# generated rules are measured (~0.15 us per node), evenly spaced, up to _SAMPLED_NODES nodes,
# and every rule is taken at their average size.
_MEASURED_RULES = 256
_SAMPLED_RULES = 128
_SAMPLED_NODES = 2048


def _large(rules: dict, n_pending: int, max_states) -> bool:
    # Whether the whole grammar's IR is large enough that its automaton may cross
    # max_automaton_states: the first part builds only the rules near the start
    # (first_reach.py), so its own state count no longer tells.  The generated rules are
    # sampled and every rule, pending ones included, counted at their average size (the
    # generated rules are only those that cannot wait: the pending ones may be most of the
    # grammar).  An IR node gives a few states (MaskBench's circleciconfig, indented: 35k
    # nodes, over 200k states), so an eighth of the limit in nodes builds the whole at once.
    total = len(rules) + n_pending
    if max_states is None or total <= _MEASURED_RULES:
        return False
    bodies = list(rules.values())
    n = measured = 0
    for body in bodies[::max(1, len(bodies) // _SAMPLED_RULES)]:
        for _ in iter_nodes(body):
            n += 1
        measured += 1
        if n > _SAMPLED_NODES:
            break
    return n * total / measured > max_states // 8


def _near(used, limit) -> bool:
    # Whether the first part already used an eighth of a compile limit: the whole grammar is
    # then built at once, so that a limit it may cross is raised by the compile (the pending
    # rules are plain values, rarely more than a few times the first part).
    return limit is not None and used * 8 > limit


def _build_whole(grammar, *, tokenizer_info, vocab_tables, max_threads, limits):
    from .compiled import CompiledGrammar

    return CompiledGrammar._build(grammar, tokenizer_info, vocab_tables,
                                  max_threads=max_threads, limits=limits)
