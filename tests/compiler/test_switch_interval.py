"""Compiles lower Python's GIL switch interval while they run and restore it afterwards, so a
server thread waiting for the GIL gets it within ~0.5 ms of the compile's Python phases."""

import sys
import threading

import pytest

import xmask
from xmask import _switch_interval as si
from xmask.compiler import compiled as compiled_module


@pytest.fixture
def restore_interval():
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def _intervals_seen_by(monkeypatch, name):
    # the switch interval each call of compiled_module.<name> ran under
    seen = []
    real = getattr(compiled_module, name)

    def spy(*args, **kwargs):
        seen.append(sys.getswitchinterval())
        return real(*args, **kwargs)

    monkeypatch.setattr(compiled_module, name, spy)
    return seen


def test_a_compile_runs_with_a_short_interval_and_restores_it(monkeypatch, restore_interval):
    seen = _intervals_seen_by(monkeypatch, "build_automaton")
    sys.setswitchinterval(0.005)
    compiler = xmask.GrammarCompiler(xmask.default_tokenizer_info(), cache_enabled=False)
    compiler.compile_grammar('root ::= "a" [0-9]+')
    assert seen and seen[0] <= si.COMPILE_SWITCH_INTERVAL
    assert sys.getswitchinterval() == pytest.approx(0.005)
    # a failing compile restores it too
    with pytest.raises(xmask.GrammarError):
        compiler.compile_grammar("root ::= root")
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_nested_and_concurrent_compiles_share_one_change(restore_interval):
    sys.setswitchinterval(0.004)
    inner_done = threading.Event()
    release = threading.Event()
    observed = []

    def other():
        with si.responsive_switching():
            observed.append(sys.getswitchinterval())
            inner_done.set()
            release.wait(5)

    with si.responsive_switching():
        t = threading.Thread(target=other)
        t.start()
        assert inner_done.wait(5)
    # the first block ended while the other still runs: the short interval stays
    assert sys.getswitchinterval() <= si.COMPILE_SWITCH_INTERVAL
    release.set()
    t.join()
    assert observed == [pytest.approx(si.COMPILE_SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == pytest.approx(0.004)


def test_an_application_change_during_a_compile_is_kept(restore_interval):
    sys.setswitchinterval(0.005)
    with si.responsive_switching():
        sys.setswitchinterval(0.002)  # the application's own choice
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_a_shorter_application_interval_is_left_alone(restore_interval):
    sys.setswitchinterval(0.0002)
    short = sys.getswitchinterval()  # Python stores whole microseconds
    with si.responsive_switching():
        assert sys.getswitchinterval() == short
    assert sys.getswitchinterval() == short


def test_precompute_runs_with_a_short_interval_and_restores_it(monkeypatch, restore_interval):
    # precompute()'s state-equivalence pass is Python: a waiting thread gets the GIL as during
    # a compile
    seen = _intervals_seen_by(monkeypatch, "precompute_mask_cache")
    compiler = xmask.GrammarCompiler(xmask.default_tokenizer_info(), cache_enabled=False)
    compiled = compiler.compile_grammar('root ::= "a" [0-9]+')
    sys.setswitchinterval(0.005)
    compiled.precompute()
    assert seen and seen[0] <= si.COMPILE_SWITCH_INTERVAL
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert compiled.cache_summary()["pending"] == 0


def test_switch_point_is_interpreted_code():
    # compiled loops rely on entering it running the interpreter's switch check: it must stay
    # a plain Python function (a compiled one would never check)
    assert si.switch_point.__code__.co_filename.endswith("_switch_interval.py")
    assert si.switch_point() is None
