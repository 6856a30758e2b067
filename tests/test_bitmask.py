"""Bitmask helpers: allocate / shape / apply (NumPy and torch), checked against a plain loop."""

import numpy as np
import pytest

import xmask
from xmask.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    get_bitmask_shape,
)


def ref_apply(logits, bitmask, indices=None, vocab_size=None):
    """Straightforward reference (XGrammar semantics): for every masked row r -- all rows, or
    ``indices`` -- logits[r, i] = -inf for i < vocab_size whose bit i % 32 of bitmask[r, i // 32]
    is 0.  Returns a new array."""
    out = np.array(logits, copy=True)
    rows_l = out.reshape(1, -1) if out.ndim == 1 else out
    bm = np.asarray(bitmask)
    bm = bm.reshape(1, -1) if bm.ndim == 1 else bm
    width = min(rows_l.shape[1], 32 * bm.shape[1]) if vocab_size is None else vocab_size
    rows = range(bm.shape[0]) if indices is None else indices
    for r in rows:
        for i in range(width):
            if not (int(bm[r, i // 32]) >> (i % 32)) & 1:
                rows_l[r, i] = -np.inf
    return out


def random_bitmask(rng, batch, vocab):
    bm = rng.integers(-(2**31), 2**31, size=get_bitmask_shape(batch, vocab), dtype=np.int64)
    return bm.astype(np.int32)


# ---------------------------------------------------------------------------- allocate / shape


@pytest.mark.parametrize(
    "batch, vocab, shape",
    [(1, 128256, (1, 4008)), (2, 100, (2, 4)), (1, 33, (1, 2)), (1, 32, (1, 1)), (3, 1, (3, 1)),
     (0, 100, (0, 4)), (1, 0, (1, 0)), (4, 151936, (4, 4748))],
)
def test_shape_and_allocate(batch, vocab, shape):
    assert get_bitmask_shape(batch, vocab) == shape
    bm = allocate_token_bitmask(batch, vocab)
    assert bm.shape == shape
    assert bm.dtype == np.int32
    assert bm.flags.c_contiguous and bm.flags.writeable
    assert (bm == -1).all()  # every bit set: all tokens allowed


def test_allocate_returns_fresh_arrays():
    a = allocate_token_bitmask(1, 64)
    b = allocate_token_bitmask(1, 64)
    a[0, 0] = 0
    assert b[0, 0] == -1


@pytest.mark.parametrize("batch, vocab", [(-1, 10), (1, -5)])
def test_shape_rejects_negative(batch, vocab):
    with pytest.raises(ValueError):
        get_bitmask_shape(batch, vocab)


def test_exported_from_package():
    assert xmask.allocate_token_bitmask is allocate_token_bitmask
    assert xmask.apply_token_bitmask_inplace is apply_token_bitmask_inplace
    assert xmask.get_bitmask_shape is get_bitmask_shape


# ---------------------------------------------------------------------------- apply (numpy)


def test_apply_documented_example():
    logits = np.zeros((1, 40), dtype=np.float32)
    mask = allocate_token_bitmask(1, 40)
    mask[0, 0] = 0b101
    apply_token_bitmask_inplace(logits, mask)
    assert np.isfinite(logits[0, :4]).tolist() == [True, False, True, False]
    assert np.isneginf(logits[0, :32]).sum() == 30
    assert np.isfinite(logits[0, 32:]).all()  # word 1 is -1: untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("batch, vocab", [(1, 1), (1, 31), (2, 64), (3, 100), (2, 1000)])
def test_apply_2d_matches_reference(dtype, batch, vocab):
    rng = np.random.default_rng(batch * 1000 + vocab)
    logits = rng.standard_normal((batch, vocab)).astype(dtype)
    bm = random_bitmask(rng, batch, vocab)
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm)
    assert logits.dtype == dtype
    np.testing.assert_array_equal(logits, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_1d(dtype):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal(77).astype(dtype)
    bm = random_bitmask(rng, 1, 77)[0]
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, expected)
    # 1-D logits with a (1, words) bitmask too
    logits2 = rng.standard_normal(77).astype(dtype)
    expected2 = ref_apply(logits2, bm[None, :])
    apply_token_bitmask_inplace(logits2, bm[None, :])
    np.testing.assert_array_equal(logits2, expected2)


def test_apply_vocab_size_argument():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 100)).astype(np.float32)
    bm = np.zeros(get_bitmask_shape(2, 100), dtype=np.int32)  # nothing allowed
    apply_token_bitmask_inplace(logits, bm, vocab_size=10)
    assert np.isneginf(logits[:, :10]).all()
    assert np.isfinite(logits[:, 10:]).all()
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(logits, bm, vocab_size=129)  # beyond the bitmask
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((2, 50), np.float32), bm, vocab_size=60)


def test_apply_logits_wider_than_mask():
    # e.g. a model whose logits are padded past the tokenizer: extra columns untouched
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((2, 200)).astype(np.float32)
    orig = logits.copy()
    bm = random_bitmask(rng, 2, 128)
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, expected)
    np.testing.assert_array_equal(logits[:, 128:], orig[:, 128:])
    assert np.isneginf(logits[:, :128]).any()


def test_apply_mask_wider_than_logits():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((1, 40)).astype(np.float32)
    bm = np.zeros((1, 4), dtype=np.int32)  # 128 bits, nothing allowed
    apply_token_bitmask_inplace(logits, bm)
    assert np.isneginf(logits).all()


def test_apply_identity_indices_and_untouched_rows():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((3, 70)).astype(np.float32)
    bm = random_bitmask(rng, 3, 70)
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm, indices=[0, 1, 2])
    np.testing.assert_array_equal(logits, expected)
    # only the listed row changes (rows 0 and 2 of the bitmask are equal, so the row of the
    # bitmask used for logits row 2 is the same whichever convention is used)
    logits = rng.standard_normal((3, 70)).astype(np.float32)
    orig = logits.copy()
    bm[2] = bm[0]
    apply_token_bitmask_inplace(logits, bm, indices=[2])
    np.testing.assert_array_equal(logits[:2], orig[:2])
    np.testing.assert_array_equal(logits, ref_apply(orig, bm, indices=[2]))


def test_apply_indices_xgrammar_semantics():
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((4, 70)).astype(np.float32)
    bm = random_bitmask(rng, 4, 70)
    expected = ref_apply(logits, bm, indices=[1, 3])
    apply_token_bitmask_inplace(logits, bm, indices=[1, 3])
    np.testing.assert_array_equal(logits, expected)


def test_apply_batch_mismatch_without_indices():
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.float32), np.zeros((2, 2), np.int32))


def test_apply_bad_types():
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.int64), np.zeros((1, 2), np.int32))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.float32), np.zeros((1, 2), np.int64))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace([[0.0] * 64], np.zeros((1, 2), np.int32))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 1, 64), np.float32), np.zeros((1, 2), np.int32))


def test_apply_non_contiguous_logits():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((100, 2)).astype(np.float32)
    logits = base.T  # (2, 100), Fortran order
    bm = random_bitmask(rng, 2, 100)
    expected = ref_apply(np.ascontiguousarray(logits), bm)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, expected)
    np.testing.assert_array_equal(base.T, expected)  # written through to the base array
    base1 = rng.standard_normal(200).astype(np.float32)
    strided = base1[::2]
    bm1 = random_bitmask(rng, 1, 100)
    expected1 = ref_apply(strided.copy(), bm1)
    apply_token_bitmask_inplace(strided, bm1)
    np.testing.assert_array_equal(base1[::2], expected1)


def test_apply_with_a_real_matcher_mask():
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_grammar('root ::= "yes" | "no"')
    m = xmask.GrammarMatcher(compiled)
    bm = allocate_token_bitmask(2, info.vocab_size)
    m.fill_next_token_bitmask(bm, 1)
    logits = np.zeros((2, info.vocab_size), dtype=np.float32)
    apply_token_bitmask_inplace(logits, bm)
    assert np.isfinite(logits[0]).all()  # row 0 stays all-allowed
    allowed = set(np.nonzero(np.isfinite(logits[1]))[0].tolist())
    prefixes = (b"y", b"ye", b"yes", b"n", b"no")
    expected = {t for t in range(info.vocab_size) if info.decoded_vocab[t] in prefixes}
    assert len(expected) >= 2
    assert allowed == expected
    np.testing.assert_array_equal(logits, ref_apply(np.zeros_like(logits), bm))


# ---------------------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_torch_apply_matches_reference(torch):
    rng = np.random.default_rng(8)
    for batch, vocab in [(1, 33), (3, 100), (2, 1000)]:
        np_logits = rng.standard_normal((batch, vocab)).astype(np.float32)
        np_bm = random_bitmask(rng, batch, vocab)
        logits = torch.from_numpy(np_logits.copy())
        apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
        np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))
    # 1-D
    np_logits = rng.standard_normal(50).astype(np.float32)
    np_bm = random_bitmask(rng, 1, 50)[0]
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))


def test_torch_apply_options(torch):
    rng = np.random.default_rng(9)
    np_logits = rng.standard_normal((2, 200)).astype(np.float32)
    np_bm = random_bitmask(rng, 2, 128)
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))  # wider logits
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))
    np.testing.assert_array_equal(logits.numpy()[:, 128:], np_logits[:, 128:])
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), vocab_size=10)
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, vocab_size=10))
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), indices=[0, 1])
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm.astype(np.int64)))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(torch.zeros(1, 200), torch.from_numpy(np_bm))  # batch 1 vs 2


def test_torch_apply_half_and_non_contiguous(torch):
    rng = np.random.default_rng(10)
    np_bm = random_bitmask(rng, 2, 100)
    logits = torch.zeros(2, 100, dtype=torch.float16)
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(logits.float().numpy(), ref_apply(np.zeros((2, 100), np.float32), np_bm))
    base = torch.zeros(100, 2)
    logits = base.T  # non-contiguous; XGrammar 0.2.8's CPU path gets this wrong
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(base.T.numpy(), ref_apply(np.zeros((2, 100), np.float32), np_bm))


def test_torch_apply_indices_xgrammar_semantics(torch):
    rng = np.random.default_rng(11)
    np_logits = rng.standard_normal((4, 70)).astype(np.float32)
    np_bm = random_bitmask(rng, 4, 70)
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), indices=[1, 3])
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, indices=[1, 3]))


def test_fill_into_torch_int32_tensor(torch):
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string('{"a": ')
    t = torch.full(get_bitmask_shape(2, info.vocab_size), -1, dtype=torch.int32)
    assert m.fill_next_token_bitmask(t, 1) is True
    ref = np.zeros(get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    m._reference_fill_next_token_bitmask(ref)
    np.testing.assert_array_equal(t[1].numpy(), ref[0])
    assert (t[0] == -1).all()
    one = torch.zeros(get_bitmask_shape(1, info.vocab_size)[1], dtype=torch.int32)  # 1-D
    m.fill_next_token_bitmask(one)
    np.testing.assert_array_equal(one.numpy(), ref[0])
    row = torch.zeros(t.shape, dtype=torch.int32)
    m.fill_next_token_bitmask(row[1])  # a row view: written through
    np.testing.assert_array_equal(row[1].numpy(), ref[0])
    assert (row[0] == 0).all()
    # and it applies to torch logits
    logits = torch.zeros(1, info.vocab_size)
    apply_token_bitmask_inplace(logits, t[1:])
    allowed = torch.isfinite(logits[0]).nonzero().flatten().tolist()
    assert allowed
    for tid in allowed:
        assert info.decoded_vocab[tid][:1] in b'{["-0123456789tfn \t\n\r'
    for bad in [torch.zeros(1, t.shape[1], dtype=torch.int64),
                torch.zeros(1, t.shape[1], dtype=torch.float32),
                torch.zeros(t.shape[1], 2, dtype=torch.int32).T]:
        with pytest.raises(xmask.BitmaskError):
            m.fill_next_token_bitmask(bad)
