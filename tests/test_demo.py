"""The README's main command: ``python -m xmask demo`` runs offline on the embedded tokenizer."""

import subprocess
import sys


def test_demo_runs_offline_and_reports_figures():
    out = subprocess.run(
        [sys.executable, "-m", "xmask", "demo"], capture_output=True, text=True, timeout=120,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("ended with stop token: yes") == 2
    for figure in ("compile:", "cache memory:", "mask time: mean", "p99"):
        assert figure in text
