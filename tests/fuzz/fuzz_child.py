"""Run one fuzz target's examples in this process, started by test_fuzz.py as a child:

    python fuzz_child.py TARGET EXAMPLES SEED|- OUTDIR DEADLINE AS_CAP

The process caps its address space (RLIMIT_AS, AS_CAP bytes; 0: no cap, e.g. under ASan) so a
blow-up ends in MemoryError instead of taking the machine.

Front-end targets run their examples in a forked worker process (a new one after each crash or
hang), so a crash or a hang is an ordinary hypothesis failure that gets shrunk, not the end of
the run:

* a signal (segfault, abort) or a non-xmask exception: a finding;
* still compiling 2 x DEADLINE + 10 s after the start: a finding (the compile deadline did not
  stop it);
* compiled, but the walk through the matcher still running WALK_SECONDS later: a finding too
  (each matcher call is bounded by RuntimeLimits, each fill's classification by the compile
  deadline, so six fills and accepts end well before).

The matcher target runs in process (its grammars are fixed and small; its batch calls start
OpenMP threads, which do not survive fork), under a faulthandler watchdog per example.

Before each example its repr goes to OUTDIR/current.txt: after a crash of the whole process
that file names the input.  Every 500 examples OUTDIR/progress.json has the counts so far; at
the end OUTDIR/summary.json holds the counts per outcome, the slowest example and the peak RSS.
Exit status 0: every example ended in success or an xmask error.
"""

import collections
import faulthandler
import json
import os
import pickle
import resource
import select
import signal
import sys
import time
import traceback

# Timers (not the compile deadline) stretch by XMASK_FUZZ_SLOWDOWN under AddressSanitizer.
SLOWDOWN = float(os.environ.get("XMASK_FUZZ_SLOWDOWN", "1"))
WALK_SECONDS = 60.0 * SLOWDOWN  # 6 fills x (deadline 5 s + a capped call), 6 accepts, margin


class Worker:
    """A forked process that runs examples sent to it, one at a time (forking once per example
    would cost ~30 ms each in page faults).  After a crash or a hang it is killed and the next
    example gets a new one."""

    def __init__(self, run, ctx):
        self.run, self.ctx, self.pid = run, ctx, None

    def _start(self):
        to_child, self.send = os.pipe()
        self.recv, from_child = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.send)
            os.close(self.recv)
            self._serve(to_child, from_child)  # never returns
        os.close(to_child)
        os.close(from_child)
        self.buf = b""

    def _serve(self, inp, out):
        self.ctx.phase = lambda name: os.write(out, f"phase:{name}\n".encode())
        while True:
            head = _read_exact(inp, 4)
            if not head:
                os._exit(0)
            example = pickle.loads(_read_exact(inp, int.from_bytes(head, "little")))
            try:
                msg = "result:" + self.run(self.ctx, example)
            except BaseException:  # noqa: BLE001 -- reported to the parent as a finding
                msg = "error:" + traceback.format_exc()[-20000:].replace("\n", "\\n")
            os.write(out, (msg + "\n").encode("utf-8", "backslashreplace"))

    def close(self):
        """End the worker and reap it, so its peak RSS counts in RUSAGE_CHILDREN."""
        if self.pid is not None:
            os.close(self.send)  # the worker reads EOF and exits
            os.waitpid(self.pid, 0)
            os.close(self.recv)
            self.pid = None

    def _kill(self):
        os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def _reap(self):
        _, status = os.waitpid(self.pid, 0)
        os.close(self.send)
        os.close(self.recv)
        self.pid = None
        return status

    def __call__(self, example, compile_seconds):
        """The outcome label of ``example``.  Raises AssertionError for a crash, a non-xmask
        exception or a compile that outlives ``compile_seconds``."""
        if self.pid is None:
            self._start()
        data = pickle.dumps(example)
        _write_all(self.send, len(data).to_bytes(4, "little") + data)
        start = time.monotonic()
        deadline = start + compile_seconds
        walking = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                if walking:
                    raise AssertionError(f"matcher walk still running after {WALK_SECONDS:.0f} s "
                                         "(past the runtime limits)")
                raise AssertionError(f"compile still running after {compile_seconds:.0f} s "
                                     "(past the compile deadline)")
            ready, _, _ = select.select([self.recv], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.recv, 1 << 16)
            if not chunk:
                raise AssertionError(f"example process died: {_describe(self._reap())}")
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                if text == "phase:walk":
                    walking, deadline = True, time.monotonic() + WALK_SECONDS
                elif text.startswith("result:"):
                    return text[len("result:"):]
                elif text.startswith("error:"):
                    raise AssertionError("not an xmask error:\n" +
                                         text[len("error:"):].replace("\\n", "\n"))


def _read_exact(fd, n):
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            return b""
        out += chunk
    return out


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _describe(status):
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.WEXITSTATUS(status)} without a result (memory cap?)"


def main(argv):
    target, examples, seed, outdir, deadline, cap = argv
    examples, deadline, cap = int(examples), float(deadline), int(cap)
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    finish = lambda: None  # noqa: E731
    if target == "matcher":
        import fuzz_matcher

        ctx = fuzz_matcher.Context(deadline)
        strategy = fuzz_matcher.ops_strategy(ctx.vocab)

        def run(example):
            faulthandler.dump_traceback_later((4 * deadline + 20) * SLOWDOWN, exit=True)
            try:
                return fuzz_matcher.run_matcher(ctx, example)
            finally:
                faulthandler.cancel_dump_traceback_later()
    else:
        import fuzz_frontends

        ctx = fuzz_frontends.Context(deadline)
        strategy = fuzz_frontends.strategy(target)
        target_run = fuzz_frontends.RUNS[target]

        worker = Worker(target_run, ctx)
        finish = worker.close

        def run(example):
            return worker(example, (2 * deadline + 10) * SLOWDOWN)

    counts = collections.Counter()
    slowest = [0.0, ""]
    skipped = []  # the first few examples whose reference check was skipped (slow steps)
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
        t = time.monotonic()
        result = run(example)
        took = time.monotonic() - t
        counts[result] += 1
        if result == "ok, reference skipped" and len(skipped) < 5:
            skipped.append(shown[:3000])
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
    finish()
    summary = {
        "target": target, "status": status, "examples": sum(counts.values()),
        "outcomes": dict(counts.most_common()), "seconds": round(time.monotonic() - t0, 1),
        "slowest_seconds": round(slowest[0], 2), "slowest_example": slowest[1],
        "reference_skipped_examples": skipped,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "peak_rss_mb_examples": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
    }
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0 if status == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
