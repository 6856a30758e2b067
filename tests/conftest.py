"""Shared fixtures: the real-data directory (../shared/data or $XMASK_DATA).

Tests that need real tokenizers or datasets use ``data_dir`` / ``tokenizer_path``.  Without the
data they skip with a reason, except under CI (``CI=true``), where missing data is a failure.
"""

import os
import pathlib

import pytest

_REPO = pathlib.Path(__file__).resolve().parent.parent
DATA_DIR = pathlib.Path(os.environ.get("XMASK_DATA", _REPO.parent / "shared" / "data"))


def _missing(what: str):
    msg = f"test data not found: {what} (set XMASK_DATA to the shared data directory)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg + " -- CI=true requires the data", pytrace=False)
    pytest.skip(msg)


def require_data(*parts) -> pathlib.Path:
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        _missing(str(path))
    return path


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return require_data()


def tokenizer_json(name: str) -> pathlib.Path:
    """Path of ``tokenizers/<name>/tokenizer.json`` in the data dir (skips/fails if absent)."""
    return require_data("tokenizers", name, "tokenizer.json")


def require_module(name: str):
    """Import an optional test dependency (from the ``[test]`` extra); skip without it, except
    under CI (``CI=true``), where a missing one is a failure."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        msg = f"optional test dependency not installed: {name} (pip install -e .[test])"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " -- CI=true requires it", pytrace=False)
        pytest.skip(msg)


#: True when the test run has AddressSanitizer preloaded (scripts/sanitize.sh asan).
UNDER_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")


def child_address_cap(nbytes: int) -> int:
    """An RLIMIT_AS value for a child process that must not eat the machine: ``nbytes``, or no
    cap under AddressSanitizer (its shadow memory reserves terabytes of address space, so any
    cap stops the child before it starts)."""
    import resource

    return resource.RLIM_INFINITY if UNDER_ASAN else nbytes


# ----------------------------------------------------------------------------------------------
# Wall time per test area, printed after the run: CI has 90 minutes on 2 cores and the suite
# must stay well under half of that, so every run shows where the time goes.

_AREA_SECONDS: dict = {}


def pytest_runtest_logreport(report):
    parts = report.nodeid.split("::")[0].split("/")
    area = "/".join(parts[:2])  # tests/<dir> for a folder, tests/<file> at the top
    _AREA_SECONDS[area] = _AREA_SECONDS.get(area, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _AREA_SECONDS:
        return
    total = sum(_AREA_SECONDS.values())
    terminalreporter.section("time per test area")
    for area, seconds in sorted(_AREA_SECONDS.items(), key=lambda kv: -kv[1])[:12]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {100 * seconds / total:5.1f}%  {area}")
    terminalreporter.write_line(f"{total:8.1f} s  in tests (setup, call and teardown)")
