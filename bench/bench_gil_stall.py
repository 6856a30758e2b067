#!/usr/bin/env python
"""GIL stalls: how long a compile in a background thread keeps another Python thread waiting.

An inference server compiles a schema per request while its scheduler thread keeps running
Python code.  Here the background thread does what a request needs first, on a compiler with
the cache disabled: compile the MaskBench schema, create a matcher and fill the first mask, and
for a JSON schema xmask compiled in two parts wait until its background worker has built the
rest (optionally ``--walk``: then fill + accept the schema's first valid instance).  Meanwhile the
main thread runs a pure-Python loop that reads ``time.perf_counter_ns()`` each iteration; a gap
between two iterations is time the main thread could not run: the background thread held the
GIL (or the OS ran something else: this machine is shared, see the baseline).

CPython makes a thread that wants the GIL wait the switch interval (``sys.getswitchinterval()``,
5 ms) before it asks the holder to let go, so a compile running Python code shows gaps of about
5 ms; a longer gap means one native call held the GIL past that request.

Two rounds, every engine one after the other per schema:

1. the sample (``--schemas`` files strided over MaskBench, as bench_json_schema.py), which is also
   the cold compile pass that picks the slowest schemas (by the xmask columns' compile time);
2. the ``--slowest`` N of them again, ``--reps`` times.

Per engine and round: compile and job (compile + first mask) times, the longest stall, the p99
of the stalls (gaps of at least ``--min-stall-us``, default 100 us), stalls over 5 ms, and the
share of the job's wall time the main thread ran.  A baseline (the background thread sleeps)
and a reference (the background thread runs pure Python for 1 s: the stalls any Python work
causes) frame the engines' figures.  Noise: on a loaded machine the OS also takes the CPU from the main
thread (a thread waiting for the GIL wakes every switch interval, and can be preempted then),
so compare engines in the same run and rerun when the baseline shows long gaps.  Each gap is
also given as its GIL share: the CPU time the two threads spent in it (``ThreadCpu``), at most
the gap less the main thread's wait on the OS run queue (``RunQueueWait``).  That is what the
GIL cost, without the time the OS or the VM's host took the CPU, a figure the machine's load
barely moves (see ThreadCpu for what it under-counts).  Writes ``bench/results/gil_stall.json``.  No assertions.

Usage:  python bench/bench_gil_stall.py [--schemas 100] [--slowest 10] [--reps 1]
                                        [--engines xmask,xgrammar,llguidance] [--xmask-mode lazy|precompute|both]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
import bench_json_schema as bjs  # noqa: E402  -- engine adapters, sample, tokenizer setup
from json_schema_report import print_table  # noqa: E402

DEFAULT_OUT = bj.REPO / "bench" / "results" / "gil_stall.json"
STALL_LIMIT_NS = 5_000_000  # the target: no stall over 5 ms
perf = time.perf_counter_ns


class ThreadCpu:
    """CPU time of one thread so far (ns; ``time.pthread_getcpuclockid``: exact, not tick-based),
    readable from another thread; after the thread ends, its last reading.

    It separates GIL stalls from noise on a shared machine: in a gap of the main thread's loop
    the compile thread ran (held the GIL), or the OS or the VM's host took the CPU (then
    neither thread's CPU time grows; a VM's host stalls show up in no guest counter at all).
    So a gap's CPU time in both threads, at most the gap, is what the GIL cost in it -- as long
    as the holder runs while it holds the GIL (xmask never blocks holding it; an engine that
    waits on worker threads holding the GIL is under-counted by this figure)."""

    def __init__(self, ident: int):
        self.last = 0
        try:
            self.clock = time.pthread_getcpuclockid(ident)
        except (OSError, AttributeError):
            self.clock = None

    def ns(self) -> int:
        if self.clock is not None:
            try:
                self.last = time.clock_gettime_ns(self.clock)
            except OSError:  # the thread has ended
                self.clock = None
        return self.last


class RunQueueWait:
    """Time this thread waited on the OS run queue so far (ns; ``/proc/.../schedstat``, second
    field: runnable, but the CPU ran something else); 0 where that file does not exist."""

    def __init__(self):
        try:
            self.fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None

    def ns(self) -> int:
        return 0 if self.fd is None else int(os.pread(self.fd, 64, 0).split()[1])

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def spin_until(done: list, min_stall_ns: int, cpus=(), rq=None) -> tuple[int, list[int], list[int]]:
    """The main thread's pure-Python loop until done[0]: iterations, the gaps >= min_stall_ns,
    and for each gap its GIL share: the CPU time the ``cpus`` threads (ThreadCpu) spent in it,
    at most the gap less the main thread's run-queue wait in it (``rq``: RunQueueWait; the
    compile thread may run native code without the GIL while the OS keeps the main thread
    waiting for a CPU)."""
    pc = perf
    stalls: list[int] = []
    net: list[int] = []
    n = 0
    last = pc()
    last_cpu = sum(c.ns() for c in cpus)
    last_rq = rq.ns() if rq else 0
    while not done[0]:
        t = pc()
        cpu = sum(c.ns() for c in cpus)
        w = rq.ns() if rq else 0
        if t - last >= min_stall_ns:
            stalls.append(t - last)
            net.append(max(0, min(cpu - last_cpu, t - last - (w - last_rq))))
        n += 1
        last = t
        last_cpu = cpu
        last_rq = w
    return n, stalls, net


def _job(eng, item, walk: bool, out: dict, done: list) -> None:
    """The background work of one request: compile, matcher, first mask (and the walk)."""
    try:
        t0 = perf()
        eng.compile(item["schema"], item["text"])
        t1 = perf()
        m = eng.first_matcher()
        eng.fill(m)
        t2 = perf()
        out.update(compile_ms=(t1 - t0) / 1e6, ttfm_ms=(t2 - t0) / 1e6)
        # a two-part compile (xmask) builds the rest in its worker thread after the first
        # fill: that is compile work too, so the job lasts until it is done
        wait_rest = getattr(eng, "wait_rest", None)
        if wait_rest is not None:
            wait_rest()
            out["rest_ms"] = (perf() - t2) / 1e6
        if walk and item["valid"]:
            m = eng.new_matcher()
            for tid in item["valid"][0]:
                eng.fill(m)
                if not eng.accept(m, tid):
                    break
            out["walk_ms"] = (perf() - t2) / 1e6
    except Exception as e:  # unsupported schema or engine error: recorded, not fatal
        out["error"] = bj._err(e)[:200]
    finally:
        done[0] = True
        eng.release()


def measure(target, min_stall_ns: int) -> dict:
    """Run target(out, done) in a background thread while the main thread spins; stderr (XGrammar's
    warnings) is discarded meanwhile."""
    out: dict = {}
    done = [False]
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            go = threading.Event()

            def run():
                go.wait()  # start only once the main thread is in its loop: no stall goes unseen
                target(out, done)

            th = threading.Thread(target=run, daemon=True)
            th.start()
            cpus = [ThreadCpu(threading.get_ident()), ThreadCpu(th.ident)]
            rq = RunQueueWait()
            t0 = perf()
            go.set()
            n, stalls, net = spin_until(done, min_stall_ns, cpus, rq)
            wall = perf() - t0
            th.join()
            rq.close()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
    out.update(wall_ms=wall / 1e6, iterations=n, max_stall_ms=max(stalls, default=0) / 1e6,
               stalls=len(stalls), stalls_over_5ms=sum(s > STALL_LIMIT_NS for s in stalls),
               stalled_ms=sum(stalls) / 1e6, stall_ns=stalls,
               max_net_stall_ms=max(net, default=0) / 1e6,
               net_stalls_over_5ms=sum(s > STALL_LIMIT_NS for s in net), net_stall_ns=net)
    return out


def baseline(seconds: float, min_stall_ns: int) -> dict:
    """The machine's noise: the background thread only sleeps."""
    r = measure(lambda out, done: (time.sleep(seconds), done.__setitem__(0, True)), min_stall_ns)
    r.pop("stall_ns")
    r.pop("net_stall_ns")
    return r


def python_reference(seconds: float, min_stall_ns: int) -> dict:
    """What any Python code in the background costs: the background thread runs a pure-Python
    loop (it holds the GIL whenever it runs, so every switch makes the main thread wait)."""
    def busy(out, done):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        done[0] = True

    r = measure(busy, min_stall_ns)
    stalls = r.pop("stall_ns")
    r.pop("net_stall_ns")
    r["stall_p99_ms"] = float(np.percentile(stalls, 99)) / 1e6 if stalls else 0.0
    return r


def run_round(engines, items, walk, min_stall_ns, label) -> dict:
    """{engine: [record per item]}, engines one after the other per schema."""
    recs = {e: [] for e in engines}
    t_start = time.perf_counter()
    for i, item in enumerate(items):
        for e, eng in engines.items():
            r = measure(lambda out, done, eng=eng: _job(eng, item, walk, out, done), min_stall_ns)
            r["file"] = item["file"]
            recs[e].append(r)
        if (i + 1) % 10 == 0 or i + 1 == len(items):
            print(f"  {label}: {i + 1}/{len(items)} schemas, {time.perf_counter() - t_start:.0f}s", flush=True)
    return recs


def summarize(recs: dict) -> dict:
    out = {}
    for e, rs in recs.items():
        ok = [r for r in rs if "error" not in r]
        stalls = [s for r in ok for s in r["stall_ns"]]
        wall = sum(r["wall_ms"] for r in ok)
        worst = max(ok, key=lambda r: r["max_stall_ms"], default=None)
        worst_net = max(ok, key=lambda r: r["max_net_stall_ms"], default=None)
        out[e] = {
            "runs": len(rs), "ok": len(ok),
            "compile_ms": bjs.dist_stats([r["compile_ms"] for r in ok]),
            "ttfm_ms": bjs.dist_stats([r["ttfm_ms"] for r in ok]),
            "longest_stall_ms": worst["max_stall_ms"] if worst else None,
            "longest_stall_file": worst["file"] if worst else None,
            "stall_p99_ms": float(np.percentile(stalls, 99)) / 1e6 if stalls else 0.0,
            "stalls_over_5ms": int(sum(r["stalls_over_5ms"] for r in ok)),
            "longest_net_stall_ms": worst_net["max_net_stall_ms"] if worst_net else None,
            "longest_net_stall_file": worst_net["file"] if worst_net else None,
            "net_stalls_over_5ms": int(sum(r["net_stalls_over_5ms"] for r in ok)),
            "runs_with_a_stall_over_5ms": int(sum(r["stalls_over_5ms"] > 0 for r in ok)),
            "main_thread_ran_share": 1 - sum(r["stalled_ms"] for r in ok) / wall if wall else None,
        }
    return out


def print_summary(title, summ, engines):
    print(f"\n{title}")
    rows = [
        ("compiled (of runs)", lambda s: f"{s['ok']}/{s['runs']}"),
        ("compile p50 (ms)", lambda s: bj._fmt(s["compile_ms"]["p50"])),
        ("compile max (ms)", lambda s: bj._fmt(s["compile_ms"]["max"])),
        ("compile+first mask max (ms)", lambda s: bj._fmt(s["ttfm_ms"]["max"])),
        ("longest stall (ms)", lambda s: bj._fmt(s["longest_stall_ms"])),
        ("stall p99 (ms)", lambda s: bj._fmt(s["stall_p99_ms"])),
        ("stalls > 5 ms (count)", lambda s: str(s["stalls_over_5ms"])),
        ("runs with a stall > 5 ms", lambda s: str(s["runs_with_a_stall_over_5ms"])),
        ("longest stall, GIL share (ms)", lambda s: bj._fmt(s["longest_net_stall_ms"])),
        ("  of which > 5 ms (count)", lambda s: str(s["net_stalls_over_5ms"])),
        ("main thread ran (share of wall)", lambda s: "-" if s["main_thread_ran_share"] is None
         else f"{100 * s['main_thread_ran_share']:.0f}%"),
    ]
    print_table(["metric", *engines], [[label, *[get(summ[e]) for e in engines]] for label, get in rows])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=100, help="MaskBench sample size (strided; 0: all)")
    ap.add_argument("--slowest", type=int, default=10, help="re-measure the N slowest-compiling schemas")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of the slowest round")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--engines", default="xmask,xgrammar,llguidance")
    ap.add_argument("--xmask-mode", choices=("lazy", "precompute", "both"), default=None,
                    help="default: both when xmask has the precompute option, else lazy (the only mode)")
    ap.add_argument("--max-threads", type=int, default=None,
                    help="xmask / XGrammar compiler max_threads (default: each engine's default, 8)")
    ap.add_argument("--walk", action="store_true", help="also fill+accept the first valid instance in the background")
    ap.add_argument("--min-stall-us", type=float, default=100.0, help="gaps counted as stalls (default 100 us)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    has_pre = bjs.xmask_has_precompute()
    mode = args.xmask_mode or ("both" if has_pre else "lazy")
    min_stall_ns = int(args.min_stall_us * 1e3)

    from tokenizers import Tokenizer

    tok_path = args.data / "tokenizers" / "llama3" / "tokenizer.json"
    tok = Tokenizer.from_file(str(tok_path))
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    stop_id = bjs.stop_token_id(tok, tok_path)
    items = bjs.load_schemas(bjs.sample_files(args.data / "maskbench", args.schemas), tok, 1)

    engines = {}
    warm = bjs.WARMUP_SCHEMA
    for name in bjs.engines_wanted(args.engines, mode):
        try:
            eng = bjs.ENGINES[name](tok, tok_path, vocab_size, stop_id, 1)
            if args.max_threads is not None:
                eng.max_threads = args.max_threads
            eng.prepare()
            eng.compile(warm, json.dumps(warm))
            eng.fill(eng.first_matcher())
            eng.release()
        except Exception as e:
            print(f"[{name}] skipped: {bj._err(e)}")
            continue
        engines[name] = eng
    names = list(engines)
    print(f"schemas={len(items)} engines={names} xmask_mode={mode} (precompute option: {has_pre}) "
          f"switch interval={sys.getswitchinterval() * 1e3:g} ms, xmask git {bjs.xmask_git()}")

    base_before = baseline(1.0, min_stall_ns)
    py_ref = python_reference(1.0, min_stall_ns)
    sample = run_round(engines, items, args.walk, min_stall_ns, "sample")
    xcols = [e for e in names if e in bjs.XMASK_VARIANTS] or names

    def cost(i):
        return max(sample[e][i].get("compile_ms", 0.0) for e in xcols)

    order = sorted(range(len(items)), key=cost, reverse=True)[: args.slowest]
    slow_items = [items[i] for i in order]
    print("slowest by " + "/".join(xcols) + " compile: " + ", ".join(f"{items[i]['file']} ({cost(i):.0f} ms)" for i in order))
    slow = {e: [] for e in names}
    for rep in range(args.reps):
        for e, rs in run_round(engines, slow_items, args.walk, min_stall_ns, f"slowest rep {rep + 1}").items():
            slow[e] += rs
    base_after = baseline(1.0, min_stall_ns)

    summ_sample, summ_slow = summarize(sample), summarize(slow)
    print_summary(f"SAMPLE: {len(items)} schemas, compile + first mask in a background thread", summ_sample, names)
    print_summary(f"SLOWEST {len(slow_items)} (by xmask compile) x {args.reps} rep(s)", summ_slow, names)
    for label, b in (("before", base_before), ("after", base_after)):
        print(f"baseline {label} (background thread sleeps 1 s): longest gap {b['max_stall_ms']:.2f} ms "
              f"({b['max_net_stall_ms']:.2f} ms GIL share), gaps over 5 ms: {b['stalls_over_5ms']}")
    print(f"reference (background thread runs pure Python for 1 s): longest stall {py_ref['max_stall_ms']:.2f} ms, "
          f"stall p99 {py_ref['stall_p99_ms']:.2f} ms, stalls over 5 ms: {py_ref['stalls_over_5ms']}, "
          f"main thread ran {100 * (1 - py_ref['stalled_ms'] / py_ref['wall_ms']):.0f}%")

    def strip(recs):
        return {e: [{k: v for k, v in r.items() if k not in ("stall_ns", "net_stall_ns")} for r in rs] for e, rs in recs.items()}

    bjs.write_json(args.out, {
        "benchmark": "bench_gil_stall",
        "options": {"schemas": args.schemas, "slowest": args.slowest, "reps": args.reps, "walk": args.walk,
                    "engines": names, "xmask_mode": mode, "max_threads": args.max_threads, "xmask_has_precompute": has_pre,
                    "min_stall_us": args.min_stall_us, "switch_interval_s": sys.getswitchinterval()},
        "hardware": {"platform": platform.platform(), "cpu_model": bj._cpu_model(), "cores": os.cpu_count()},
        "software": {"python": platform.python_version(), "xmask_git": bjs.xmask_git(),
                     **{d: bj._version(d) for d in ("xmask", "xgrammar", "llguidance")}},
        "baseline": {"before": base_before, "after": base_after, "pure_python_reference": py_ref},
        "summary": {"sample": summ_sample, "slowest": summ_slow},
        "slowest_files": [it["file"] for it in slow_items],
        "runs": {"sample": strip(sample), "slowest": strip(slow)},
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
