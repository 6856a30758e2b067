"""Run one fuzz target's examples in this process, started by test_fuzz.py as a child:

    python fuzz_child.py TARGET EXAMPLES SEED|- OUTDIR DEADLINE AS_CAP

The child caps its address space (RLIMIT_AS, AS_CAP bytes; 0: no cap, e.g. under ASan) so a
blow-up ends in MemoryError instead of taking the machine, and arms a watchdog around each
example (faulthandler: after 4 x DEADLINE + 20 s it prints every thread's stack and exits),
so a hang past the compile deadline is a failure with a stack.  Before each example its repr
goes to OUTDIR/current.txt: after a crash that file names the input.  Every 500 examples
OUTDIR/progress.json has the counts so far.  At the end
OUTDIR/summary.json holds the counts per outcome, the slowest example and the peak RSS.
Exit status 0: every example ended in success or an xmask error.
"""

import collections
import faulthandler
import json
import os
import resource
import sys
import time
import traceback


def main(argv):
    target, examples, seed, outdir, deadline, cap = argv
    examples, deadline, cap = int(examples), float(deadline), int(cap)
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    if target == "matcher":
        import fuzz_matcher

        ctx = fuzz_matcher.Context(deadline)
        strategy = fuzz_matcher.ops_strategy(ctx.vocab)
        run = fuzz_matcher.run_matcher
    else:
        import fuzz_frontends

        ctx = fuzz_frontends.Context(deadline)
        strategy = fuzz_frontends.strategy(target)
        run = fuzz_frontends.RUNS[target]

    counts = collections.Counter()
    slowest = [0.0, ""]
    current = open(os.path.join(outdir, "current.txt"), "w", encoding="utf-8",
                   errors="backslashreplace")

    @settings(max_examples=examples, deadline=None, database=None, derandomize=seed == "-",
              suppress_health_check=list(HealthCheck), print_blob=True,
              phases=[Phase.explicit, Phase.generate, Phase.shrink])
    @given(strategy)
    def prop(example):
        shown = repr(example)
        current.seek(0)
        current.truncate()
        current.write(shown[:100_000])
        current.flush()
        faulthandler.dump_traceback_later(4 * deadline + 20, exit=True)
        t = time.monotonic()
        try:
            result = run(ctx, example)
        finally:
            faulthandler.cancel_dump_traceback_later()
        took = time.monotonic() - t
        counts[result] += 1
        if took > slowest[0]:
            slowest[:] = [took, shown[:300]]
        if sum(counts.values()) % 500 == 0:  # long runs: counts so far
            with open(os.path.join(outdir, "progress.json"), "w") as f:
                json.dump(dict(counts), f)

    if seed != "-":
        prop = hypothesis_seed(int(seed))(prop)
    t0 = time.monotonic()
    try:
        prop()
        status = "passed"
    except Exception:  # a finding: hypothesis re-raises the (shrunk) failing example's error
        traceback.print_exc()
        status = "failed"
    summary = {
        "target": target, "status": status, "examples": sum(counts.values()),
        "outcomes": dict(counts.most_common()), "seconds": round(time.monotonic() - t0, 1),
        "slowest_seconds": round(slowest[0], 2), "slowest_example": slowest[1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0 if status == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
