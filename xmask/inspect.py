"""Look into a compiled grammar's token-mask cache from a notebook: tables and plots.

Tables are pandas DataFrames, plots are matplotlib Axes; both libraries are optional and
imported only when a helper needs them (``pip install pandas matplotlib``).  Nothing here is
used by the runtime.

* :func:`cache_frame`: one row per classified state (``CompiledGrammar.cache_stats()``)
* :func:`memory_frame`: ``memory_size_bytes`` split into parts that add up to it
* :func:`walk_latency`: walk token ids with a matcher, timing each mask fill
  (:func:`document_tokens` spells a document exactly in a tokenizer's ids)
* ``plot_*``: memory by rule and storage kind, the accepted / rejected / uncertain split per
  state, the uncertain-token histogram, mask latency along a walk

Example::

    >>> import xmask
    >>> from xmask import inspect as xi
    >>> info = xmask.default_tokenizer_info()
    >>> cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar().precompute()
    >>> frame = xi.cache_frame(cg)                                   # doctest: +SKIP
    >>> frame.groupby("rule")["stored_bytes"].sum()                  # doctest: +SKIP
    >>> xi.plot_memory_by_rule(frame)                                # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

STORAGE_KINDS = ("accepted", "rejected", "bitset")
# one colour per storage kind / token class, the same in every plot
KIND_COLORS = {"accepted": "#4c72b0", "rejected": "#dd8452", "bitset": "#55a868",
                "uncertain": "#c44e52"}
SPLIT_COLORS = {"accepted": "#55a868", "rejected": "#bbbbbb", "uncertain": "#c44e52"}

__all__ = [
    "cache_frame", "memory_frame", "walk_latency", "document_tokens", "plot_memory_by_rule", "plot_memory_parts",
    "plot_token_split", "plot_uncertain_histogram", "plot_walk_latency",
]


def _pandas():
    try:
        import pandas
    except ImportError as e:  # optional: only the notebook helpers need it
        raise ImportError("xmask.inspect tables need pandas, which is not installed: "
                          "pip install pandas") from e
    return pandas


def _axes(ax, figsize):
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("xmask.inspect plots need matplotlib, which is not installed: "
                          "pip install matplotlib") from e
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _frame_of(obj):
    """A cache frame from a frame or a compiled grammar."""
    return cache_frame(obj) if hasattr(obj, "cache_stats") else obj


# ---- tables --------------------------------------------------------------------------------

def cache_frame(compiled, *, precompute: bool = False):
    """The classified states of ``compiled`` as a pandas DataFrame, one row per state.

    Columns: ``rule``, ``state``, ``position`` (dotted item: the shortest input from the rule's
    start, ``•``, what the state reads next), ``accepted``, ``rejected``, ``uncertain``,
    ``storage`` (``accepted`` / ``rejected`` id list or ``bitset``), ``bytes`` (the entry's
    payload), ``shared`` and ``entry_owner`` (identical entries are stored once, by the owner
    state), ``stored_bytes`` (``bytes``, or 0 when shared: sums to the cache's payload).
    ``frame.attrs["memory"]`` and ``frame.attrs["totals"]`` hold ``cache_stats()``'s
    ``memory`` and ``totals``.  A lazy grammar lists only the states fills met so far; pass
    ``precompute=True`` (or call ``compiled.precompute()``) to see all.

    Raises ``ImportError`` when pandas is not installed.

    Example::

        >>> frame = cache_frame(cg, precompute=True)                     # doctest: +SKIP
        >>> frame["stored_bytes"].sum() == frame.attrs["memory"]["entry_payloads"]  # doctest: +SKIP
        True
        >>> frame.sort_values("uncertain").tail(3)[["rule", "position", "uncertain"]]  # doctest: +SKIP
    """
    pd = _pandas()
    if precompute:
        compiled.precompute()
    stats = compiled.cache_stats()
    columns = ["rule", "state", "position", "accepted", "rejected", "uncertain", "storage",
               "bytes", "shared", "entry_owner", "stored_bytes"]
    frame = pd.DataFrame(
        [(r.rule, r.state, r.position, r.accepted, r.rejected, r.uncertain, r.storage, r.bytes,
          r.shared, r.entry_owner, r.stored_bytes) for r in stats],
        columns=columns,
    )
    ints = ["state", "accepted", "rejected", "uncertain", "bytes", "entry_owner", "stored_bytes"]
    frame = frame.astype({c: "int64" for c in ints} | {"shared": bool})
    frame.attrs["memory"] = dict(stats.memory)
    frame.attrs["totals"] = stats.totals
    return frame


def memory_frame(compiled):
    """``compiled.memory_size_bytes`` by part, as a DataFrame (``part``, ``bytes``, ``share``).

    The entry payloads are split by what they hold: token ids of ``accepted``-list,
    ``rejected``-list and ``bitset`` entries, and the ``uncertain`` token positions every kind
    carries.  The ``bytes`` column sums to ``memory_size_bytes`` (one snapshot).

    Example::

        >>> mem = memory_frame(cg)                                       # doctest: +SKIP
        >>> int(mem["bytes"].sum()) == cg.memory_size_bytes              # doctest: +SKIP
        True
    """
    pd = _pandas()
    stats = compiled.cache_stats()
    payload = {f"entries: {k} ids": 0 for k in STORAGE_KINDS}
    payload["entries: uncertain positions"] = 0
    for r in stats:
        if not r.shared:
            payload["entries: uncertain positions"] += 4 * r.uncertain
            payload[f"entries: {r.storage} ids"] += r.bytes - 4 * r.uncertain
    rows = [(k, v) for k, v in stats.memory.items() if k != "entry_payloads"]
    rows += list(payload.items())
    frame = pd.DataFrame(rows, columns=["part", "bytes"]).astype({"bytes": "int64"})
    total = int(frame["bytes"].sum())
    frame["share"] = frame["bytes"] / total if total else 0.0
    return frame


def walk_latency(compiled, token_ids: Sequence[int], *, repeat: int = 1, bitmask=None):
    """Walk ``token_ids`` with a fresh matcher and time every mask fill (the fill before each
    token, and the one after the last).

    Returns a DataFrame with one row per fill: ``step``, ``token_id`` (the token accepted next,
    -1 after the last), ``offset`` (bytes of the document before this step), ``fill_us``
    (microseconds in the first walk: what a request sees, including the states a lazy grammar
    classifies on the way), ``warm_us`` (the least of ``repeat`` walks, each with a fresh
    matcher), ``allowed`` (tokens the mask allows) and ``new_states`` (states the fill
    classified in the first walk).  Raises ``ValueError`` when the grammar rejects a token (its
    step named).

    Example::

        >>> ids = tok.encode('{"a": [1, 2]}', add_special_tokens=False).ids  # doctest: +SKIP
        >>> walk = walk_latency(cg, ids, repeat=3)                       # doctest: +SKIP
        >>> walk["fill_us"].median()                                     # doctest: +SKIP
    """
    pd = _pandas()
    import xmask  # the public matcher (this module is imported by notebooks, never by xmask)

    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    ids = [int(t) for t in token_ids]
    info = compiled.tokenizer_info
    vocab = info.decoded_vocab
    if bitmask is None:
        bitmask = np.full(xmask.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    n = len(ids) + 1
    first = np.zeros(n)
    best = np.full(n, np.inf)
    allowed = np.zeros(n, dtype=np.int64)
    new_states = np.zeros(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for walk in range(repeat):
        matcher = xmask.GrammarMatcher(compiled)
        for step in range(n):
            before = compiled.cache_summary()["classified"] if walk == 0 else 0
            t0 = clock()
            matcher.fill_next_token_bitmask(bitmask)
            took = (clock() - t0) / 1e3
            best[step] = min(best[step], took)
            if walk == 0:
                first[step] = took
                new_states[step] = compiled.cache_summary()["classified"] - before
                row = np.asarray(bitmask)[0].view(np.uint32)
                allowed[step] = int(np.unpackbits(row.view(np.uint8)).sum())
            if step < len(ids) and not matcher.accept_token(ids[step]):
                raise ValueError(f"the grammar rejects token {ids[step]} at step {step}")
    offsets = np.concatenate([[0], np.cumsum([len(vocab[t]) for t in ids])]).astype(np.int64)
    return pd.DataFrame({"step": np.arange(n), "token_id": ids + [-1], "offset": offsets,
                         "fill_us": first, "warm_us": best, "allowed": allowed,
                         "new_states": new_states})


def document_tokens(text: str, tokenizer, tokenizer_info) -> list:
    """Token ids that spell exactly ``text`` (UTF-8), for :func:`walk_latency`.

    The tokenizer's own ids when they decode to exactly ``text``; otherwise (sentencepiece
    tokenizers such as Llama-2's prepend a space to a text's start, which a grammar would
    reject) a greedy longest match over ``tokenizer_info.decoded_vocab``.  ``tokenizer``: a
    ``tokenizers.Tokenizer`` or a transformers tokenizer.

    Example::

        >>> ids = document_tokens('{"a": 1}', tok, info)                 # doctest: +SKIP
        >>> b"".join(info.decoded_vocab[i] for i in ids)                 # doctest: +SKIP
        b'{"a": 1}'
    """
    got = tokenizer.encode(text, add_special_tokens=False)
    ids = [int(i) for i in getattr(got, "ids", got)]
    vocab = tokenizer_info.decoded_vocab
    data = text.encode("utf-8")
    if b"".join(vocab[i] for i in ids) == data:
        return ids
    special = set(tokenizer_info.special_token_ids)
    by_bytes = {}
    for i, b in enumerate(vocab):
        if b and i not in special:
            by_bytes.setdefault(b, i)
    longest = max(map(len, by_bytes), default=0)
    ids, at = [], 0
    while at < len(data):
        for n in range(min(longest, len(data) - at), 0, -1):
            tid = by_bytes.get(data[at:at + n])
            if tid is not None:
                ids.append(tid)
                at += n
                break
        else:
            raise ValueError(f"no token spells byte {data[at]:#04x} at offset {at}")
    return ids


# ---- plots ---------------------------------------------------------------------------------

def plot_memory_by_rule(frame_or_compiled, ax=None, *, top: int = 12):
    """Horizontal bars: stored entry bytes per rule (the ``top`` largest), stacked by storage
    kind, with the uncertain positions apart.  Takes a :func:`cache_frame` or a compiled
    grammar; returns the Axes.

    Example::

        >>> plot_memory_by_rule(cache_frame(cg, precompute=True))       # doctest: +SKIP
    """
    frame = _frame_of(frame_or_compiled)
    ax = _axes(ax, (6, 3))
    own = frame[~frame["shared"]]
    parts = {k: (own["stored_bytes"] - 4 * own["uncertain"]).where(own["storage"] == k, 0)
             for k in STORAGE_KINDS}
    parts["uncertain"] = 4 * own["uncertain"]
    table = _pandas().DataFrame(parts).assign(rule=own["rule"]).groupby("rule", sort=False).sum()
    table = table.loc[table.sum(axis=1).sort_values(ascending=False).index[:top]][::-1]
    left = np.zeros(len(table))
    # long generated names (JSON schema paths) keep their distinctive end
    names = [n if len(n) <= 32 else "…" + n[-31:] for n in table.index]
    for kind in table.columns:
        label = f"{kind} ids" if kind in STORAGE_KINDS else "uncertain positions"
        ax.barh(names, table[kind] / 1024, left=left, color=KIND_COLORS[kind], label=label)
        left += table[kind].to_numpy() / 1024
    ax.set_xlabel("stored entry KiB (shared entries counted once)")
    ax.set_title("cache memory by rule and storage kind")
    ax.legend(fontsize="small", loc="lower right")
    return ax


def plot_memory_parts(compiled, ax=None):
    """Horizontal bars: every part of ``memory_size_bytes`` (:func:`memory_frame`); returns the
    Axes.

    Example::

        >>> plot_memory_parts(cg)                                        # doctest: +SKIP
    """
    mem = memory_frame(compiled)
    ax = _axes(ax, (6, 3))
    mem = mem[::-1]
    ax.barh(mem["part"], mem["bytes"] / 1024, color="#4c72b0")
    total = int(mem["bytes"].sum())
    ax.set_xlabel("KiB")
    ax.set_title(f"memory_size_bytes = {total:,} by part")
    return ax


def plot_token_split(frame_or_compiled, ax=None, *, max_states: int = 80):
    """Stacked bars per state: the share of grammar-eligible tokens accepted, rejected and
    uncertain (checked at fill time).  With more than ``max_states`` states, the ones with the
    most uncertain tokens are shown.  Returns the Axes.

    Example::

        >>> plot_token_split(cache_frame(cg, precompute=True))          # doctest: +SKIP
    """
    frame = _frame_of(frame_or_compiled)
    ax = _axes(ax, (7, 2.8))
    if len(frame) > max_states:
        frame = frame.nlargest(max_states, "uncertain").sort_values("state")
    total = (frame["accepted"] + frame["rejected"] + frame["uncertain"]).clip(lower=1)
    x = np.arange(len(frame))
    bottom = np.zeros(len(frame))
    for col in ("accepted", "uncertain", "rejected"):
        share = (frame[col] / total).to_numpy()
        ax.bar(x, share, bottom=bottom, width=1.0, color=SPLIT_COLORS[col], label=col)
        bottom += share
    ax.set_xlim(-0.5, len(frame) - 0.5)
    ax.set_ylim(0, 1)
    step = max(1, len(frame) // 20)
    ax.set_xticks(x[::step], frame["state"].to_numpy()[::step], fontsize="x-small")
    ax.set_xlabel("state")
    ax.set_ylabel("share of tokens")
    ax.set_title("token split per cached state")
    ax.legend(fontsize="small", ncol=3, loc="upper right")
    return ax


def plot_uncertain_histogram(frame_or_compiled, ax=None, *, bins: int = 30):
    """Histogram of uncertain tokens per state (the tokens a fill still checks one by one);
    shared entries count once per state.  Returns the Axes.

    Example::

        >>> plot_uncertain_histogram(cache_frame(cg, precompute=True))  # doctest: +SKIP
    """
    frame = _frame_of(frame_or_compiled)
    ax = _axes(ax, (5, 2.8))
    values = frame["uncertain"].to_numpy()
    top = max(1, int(values.max()) if len(values) else 1)
    edges = np.unique(np.concatenate([[0, 1], np.geomspace(1, top + 1, bins)]).round())
    ax.hist(values, bins=edges, color=KIND_COLORS["uncertain"])
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("uncertain tokens in the state's entry")
    ax.set_ylabel("states")
    zero = int((values == 0).sum())
    ax.set_title("uncertain tokens per state")
    ax.set_ylim(top=ax.get_ylim()[1] * 1.2)  # room for the note above the bars
    ax.text(0.98, 0.95, f"{zero} of {len(values)} states have none", transform=ax.transAxes,
            ha="right", va="top", fontsize="small")
    return ax


def plot_walk_latency(walks, ax=None, *, by: str = "offset", y: str = "fill_us"):
    """Mask fill time along one or more document walks (:func:`walk_latency`), on a log scale;
    first-walk fills that classified new states are marked.  ``walks``: a walk frame or a dict label ->
    walk frame (one line each, e.g. per tokenizer or lazy vs precomputed); ``by``: ``"offset"``
    (document bytes, comparable across tokenizers) or ``"step"``; ``y``: ``"fill_us"`` (first
    walk) or ``"warm_us"``.  Returns the Axes.

    Example::

        >>> plot_walk_latency({"lazy": walk_latency(lazy, ids),
        ...                    "precomputed": walk_latency(eager, ids)})  # doctest: +SKIP
    """
    if by not in ("offset", "step"):
        raise ValueError(f"by must be 'offset' or 'step', got {by!r}")
    if y not in ("fill_us", "warm_us"):
        raise ValueError(f"y must be 'fill_us' or 'warm_us', got {y!r}")
    if not isinstance(walks, dict):
        walks = {"": walks}
    ax = _axes(ax, (7, 2.8))
    for label, walk in walks.items():
        line, = ax.plot(walk[by], walk[y], lw=1, label=label or None)
        cold = walk[walk["new_states"] > 0] if y == "fill_us" else walk[:0]
        if len(cold):
            ax.scatter(cold[by], cold[y], s=12, color=line.get_color(), marker="o",
                       zorder=3)
    ax.set_yscale("log")
    ax.set_xlabel("document byte offset" if by == "offset" else "token step")
    ax.set_ylabel("fill µs")
    ax.set_title("mask fill time along the document (dots: fills that classified states)")
    if any(walks):
        ax.legend(fontsize="small")
    return ax

