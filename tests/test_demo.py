"""The README's main command: ``python -m xmask demo`` runs offline on the embedded tokenizer."""

import pathlib
import subprocess
import sys

import xmask


def test_demo_runs_offline_and_reports_figures():
    # run from where the imported xmask lives: in a source checkout without compiled modules the
    # current directory would otherwise shadow the installed package
    where = pathlib.Path(xmask.__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "xmask", "demo"], capture_output=True, text=True, timeout=120,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}, cwd=where,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("ended with stop token: yes") == 2
    for figure in ("compile:", "token-mask cache after the walk:", "states classified",
                   "mask time: mean", "p99"):
        assert figure in text
