"""Property-based fuzzing of the front door: EBNF, regex, JSON Schema, Lark and structural-tag
inputs (real seeds from the shared data, mutated), and random call sequences on the matcher API.
Every example must end in success or an xmask error (never another exception, a crash, a hang
past the compile deadline, or memory past the cap); compiled ones must give masks equal to the
slow reference.  See fuzz_frontends.py and fuzz_matcher.py for the inputs and the oracles.

Each target runs in a child process (fuzz_child.py) with a 3 GB address-space cap; front-end
examples run in a forked worker under a timer, matcher examples under a watchdog, so a
segfault, hang or blow-up (a compile past its deadline, a matcher walk past its runtime
limits) fails the test and names the (shrunk) input.

Profiles (environment):

* default: a few hundred examples per target, derandomized (the same examples every run);
* ``XMASK_FUZZ_LONG=1``: 10,000 examples per target (``XMASK_FUZZ_EXAMPLES=N`` sets N), with a
  random seed unless ``XMASK_FUZZ_SEED`` is set; the seed is printed so a finding can be
  replayed.  Takes 20-40 min on 2 cores: run it by hand, e.g.
  ``XMASK_FUZZ_LONG=1 pytest -s tests/fuzz``.
"""

import json
import os
import random
import subprocess
import sys

import pytest
from conftest import DATA_DIR, UNDER_ASAN, child_address_cap, require_data, require_module

HERE = os.path.dirname(os.path.abspath(__file__))
LONG = os.environ.get("XMASK_FUZZ_LONG") == "1"
DEADLINE = 5.0  # max_compile_seconds for each compile in the fuzz children
AS_CAP = 3 << 30

# Default examples per target: together about 40-60 s on 2 busy cores.
DEFAULT_EXAMPLES = {"ebnf": 300, "regex": 400, "schema": 250, "lark": 300,
                    "structural_tag": 300, "matcher": 400}
NEEDS = {"ebnf": ("gbnf",), "regex": ("maskbench",), "schema": ("maskbench",)}


def _examples(target):
    if "XMASK_FUZZ_EXAMPLES" in os.environ:
        return int(os.environ["XMASK_FUZZ_EXAMPLES"])
    return 10_000 if LONG else DEFAULT_EXAMPLES[target]


def _seed():
    if not LONG and "XMASK_FUZZ_SEED" not in os.environ:
        return "-"  # derandomized: hypothesis picks the same examples every run
    return os.environ.get("XMASK_FUZZ_SEED") or str(random.randrange(2 ** 32))


@pytest.mark.parametrize("target", list(DEFAULT_EXAMPLES))
def test_fuzz_target(target, tmp_path):
    require_module("hypothesis")
    for part in NEEDS.get(target, ()):
        require_data(part)
    seed = _seed()
    examples = _examples(target)
    env = dict(os.environ, XMASK_DATA=str(DATA_DIR),
               PYTHONPATH=os.pathsep.join([HERE] + sys.path),
               # AddressSanitizer slows every allocation of the interpreter too: the timers
               # that tell a hang from a slow example stretch (the compile deadline does not)
               XMASK_FUZZ_SLOWDOWN="10" if UNDER_ASAN else "1")
    cap = max(0, child_address_cap(AS_CAP))  # 0: no cap (under AddressSanitizer)
    cmd = [sys.executable, os.path.join(HERE, "fuzz_child.py"), target, str(examples), seed,
           str(tmp_path), str(DEADLINE), str(cap)]
    # whole-run backstop; each example has its own watchdog in the child
    timeout = 3600 * 12 if LONG else 600
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=HERE)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{target}: fuzz child ran past {timeout} s; last input: "
                    f"{_read(tmp_path / 'current.txt')}")
    summary_path = tmp_path / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    print(f"\nfuzz {target} seed={seed}: {json.dumps(summary)}")
    if summary is None:
        pytest.fail(f"{target}: fuzz child died (exit {proc.returncode}; crash, watchdog or "
                    f"memory cap) on input {_read(tmp_path / 'current.txt')}\n"
                    f"stderr: {proc.stderr[-4000:]}")
    assert proc.returncode == 0 and summary["status"] == "passed", (
        f"{target}: finding (seed {seed}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    assert summary["examples"] >= examples // 2, summary  # hypothesis ran what we asked


def _read(path):
    try:
        return path.read_text()[:3000]
    except OSError:
        return "<none>"
