"""Per-phase time of xmask's front end: schema -> Grammar IR -> automaton.

The front end is what a lazy token-mask cache leaves on the path to the first mask.  Each
MaskBench schema of the bench sample (the same deterministic stride over the sorted files as
``bench_json_schema.py``) is converted and built ``--reps`` times under the compiler's own
settings (GC paused, the default compile limits and deadline); each phase's figure for a schema
is its fastest rep.  Phases are timed by wrapping the automaton module's phase functions
(exclusive time: a phase nested in another, such as the per-repeat DFA templates built during
NFA construction, counts for itself only).  Schemas xmask rejects are skipped and counted.

Usage::

    python bench/profile_frontend.py --schemas 100 [--reps 3] [--cprofile 30] [--json out.json]

Prints p50 / p90 / max ms per phase and the slowest schemas; ``--cprofile N`` prints the top N
functions of a cProfile run over the whole sample.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pathlib
import pstats
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_json_schema import sample_files  # noqa: E402

import xmask  # noqa: E402
from xmask import _deadline  # noqa: E402
from xmask._gc_pause import gc_paused  # noqa: E402
from xmask._recursion import deep_recursion  # noqa: E402
from xmask.compiler import automaton as am  # noqa: E402
from xmask import Grammar  # noqa: E402
from xmask.errors import XmaskError  # noqa: E402
from xmask.limits import DEFAULT_LIMITS  # noqa: E402

# phase label -> automaton module function; whichever exist in this version are timed
PHASES = [
    ("inline", "_inline_small_rules"),
    ("nfa", "_build_nfas"),
    ("byte_classes", "_byte_classes"),
    ("determinize", "_determinize"),
    ("minimize", "_minimize"),
    ("dfa_rules", "_build_rule_dfas"),
    ("prune", "_prune_unproductive"),
    ("analyze", "_analyze"),
    ("context_work", "_check_context_work"),
]

perf = time.perf_counter


class PhaseTimer:
    """Wraps module functions; accumulates exclusive seconds per label."""

    def __init__(self):
        self.acc: dict = {}
        self.stack: list = []  # [label, start, child seconds]
        self.saved = []
        self.log = None  # when a list: (label, start, end) of every phase call

    def install(self):
        for label, fname in PHASES:
            fn = getattr(am, fname, None)
            if fn is None:
                continue
            self.saved.append((fname, fn))
            setattr(am, fname, self._wrap(label, fn))

    def uninstall(self):
        for fname, fn in self.saved:
            setattr(am, fname, fn)
        self.saved = []

    def _wrap(self, label, fn):
        def timed(*a, **k):
            frame = [label, perf(), 0.0]
            self.stack.append(frame)
            try:
                return fn(*a, **k)
            finally:
                self.stack.pop()
                end = perf()
                spent = end - frame[1]
                if self.log is not None:
                    self.log.append((label, frame[1], end))
                self.acc[label] = self.acc.get(label, 0.0) + spent - frame[2]
                if self.stack:
                    self.stack[-1][2] += spent
        return timed


def front_end(text: str, timer: PhaseTimer | None):
    """One schema through the front end; returns {phase: seconds} (None when rejected)."""
    lim = DEFAULT_LIMITS
    out = {}
    with deep_recursion(), gc_paused(), _deadline.compile_deadline(lim.max_compile_seconds):
        t0 = perf()
        try:
            g = Grammar.from_json_schema(text, strict_mode=False, any_whitespace=True, limits=lim)
        except XmaskError:
            return None
        t1 = perf()
        if timer is not None:
            timer.acc = {}
        try:
            am.build_automaton(g, am.AutomatonLimits.from_compile_limits(lim))
        except XmaskError:
            return None
        t2 = perf()
    out["schema_ir"] = t1 - t0
    if timer is not None:
        out.update(timer.acc)
        out["other"] = (t2 - t1) - sum(timer.acc.values())
    out["automaton"] = t2 - t1
    out["front_end"] = t2 - t0
    return out


def longest_stall(texts, timer: PhaseTimer | None, reps: int = 3) -> dict:
    """Run the front end of each text in a background thread while this thread spins a
    pure-Python loop; the longest gap between two loop iterations is how long the compile
    kept the GIL from another Python thread (the switch interval, 5 ms, bounds pure-Python
    phases; a C phase holding the GIL could exceed it)."""
    import threading

    worst = {}
    for name, text in texts:
        gap, where = 0.0, None
        for _ in range(reps):
            done = threading.Event()
            marks = []

            def work():
                t0 = perf()
                try:
                    if timer is not None:
                        timer.log = []
                    front_end(text, timer)
                finally:
                    marks.append((t0, perf()))
                    done.set()

            th = threading.Thread(target=work)
            last = perf()
            th.start()
            gaps = []
            while not done.is_set():
                now = perf()
                if now - last > 1e-3:
                    gaps.append((now - last, last, now))
                last = now
            th.join()
            for g, a, b in gaps:
                if g > gap:
                    gap = g
                    # the phase that ran longest inside the gap ("schema_ir/other": unwrapped)
                    best, label = 0.0, "schema_ir/other"
                    for lab, x, y in (timer.log or []) if timer is not None else []:
                        overlap = min(b, y) - max(a, x)
                        if overlap > best:
                            best, label = overlap, lab
                    where = label
        worst[name] = (gap, where)
    if timer is not None:
        timer.log = None
    return worst


def baseline_stall(seconds: float = 0.5, reps: int = 3) -> float:
    """The same measurement against a background thread running a pure-Python loop: the
    floor set by the switch interval and the machine's load."""
    import threading

    gap = 0.0
    for _ in range(reps):
        def spin():
            t0, x = perf(), 0
            while perf() - t0 < seconds:
                for i in range(1000):
                    x += i

        th = threading.Thread(target=spin)
        last = perf()
        th.start()
        while th.is_alive():
            now = perf()
            gap = max(gap, now - last)
            last = now
        th.join()
    return gap


def pct(xs, q):
    return float(np.percentile(np.asarray(xs) * 1e3, q)) if xs else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", type=pathlib.Path, default=pathlib.Path("/work/shared/data"))
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N cProfile functions")
    ap.add_argument("--no-phases", action="store_true", help="time totals only (no wrappers)")
    ap.add_argument("--stall", type=int, default=0,
                    help="measure the longest GIL stall while compiling the N slowest schemas")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args(argv)

    files = sample_files(args.data / "maskbench", args.schemas)
    texts = [(f.name, json.dumps(json.loads(f.read_text(encoding="utf-8"))["schema"])) for f in files]
    timer = None if args.no_phases else PhaseTimer()
    if timer is not None:
        timer.install()
    per_schema = {}
    rejected = []
    for name, text in texts:
        best = None
        for _ in range(args.reps):
            got = front_end(text, timer)
            if got is None:
                break
            best = got if best is None else {k: min(v, got.get(k, v)) for k, v in best.items()}
        if best is None:
            rejected.append(name)
        else:
            per_schema[name] = best
    if timer is not None:
        timer.uninstall()

    labels = ["schema_ir"] + [lab for lab, fn in PHASES if getattr(am, fn, None)] + (
        ["other"] if timer else []) + ["automaton", "front_end"]
    print(f"xmask {xmask.__file__}")
    print(f"{len(per_schema)} schemas built, {len(rejected)} rejected, fastest of {args.reps} reps")
    print(f"{'phase':<14}{'p50 ms':>10}{'p90 ms':>10}{'max ms':>10}{'sum ms':>10}")
    table = {}
    for lab in labels:
        xs = [d.get(lab, 0.0) for d in per_schema.values()]
        row = {"p50": pct(xs, 50), "p90": pct(xs, 90), "max": max(xs) * 1e3, "sum": sum(xs) * 1e3}
        table[lab] = row
        print(f"{lab:<14}{row['p50']:>10.3f}{row['p90']:>10.3f}{row['max']:>10.2f}{row['sum']:>10.1f}")
    slow = sorted(per_schema.items(), key=lambda kv: -kv[1]["front_end"])
    print("slowest:")
    for name, d in slow[:5]:
        parts = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])
                          if k not in ("front_end",) and v > 1e-4)
        print(f"  {name}: {d['front_end'] * 1e3:.1f} ms ({parts})")

    stalls = {}
    if args.stall:
        by_name = dict(texts)
        if timer is not None:
            timer.install()
        stalls = longest_stall([(name, by_name[name]) for name, _ in slow[: args.stall]], timer)
        if timer is not None:
            timer.uninstall()
        print(f"longest stall of a Python loop while compiling in a background thread "
              f"(switch interval {sys.getswitchinterval() * 1e3:.1f} ms):")
        for name, (gap, where) in stalls.items():
            print(f"  {name}: {gap * 1e3:.2f} ms (during {where})")
        base = baseline_stall()
        stalls["(pure-Python thread, baseline)"] = (base, None)
        print(f"  baseline, a pure-Python background loop: {base * 1e3:.2f} ms")

    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        for name, text in texts:
            if name in per_schema:
                front_end(text, None)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    if args.json:
        args.json.write_text(json.dumps({"table": table, "rejected": rejected,
                                         "per_schema": per_schema, "stall_ms": {k: v[0] * 1e3 for k, v in stalls.items()}},
                                        indent=1))


if __name__ == "__main__":
    main()
