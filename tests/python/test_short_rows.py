"""Reductions, softmax and logsumexp over short last axes (rows of 1 to 300), issue 35.

f32 rows of 32 to 512 elements reduce eight at a time (kernels/reduce_rows8.h: ReduceRows8), in the
reductions joined to fused runs too (softmax's maximum and sum), with the one-row fold's bits
(tests/cpp/kernels_reduce_rows8_test.cc); shorter f32 / f64 rows sixteen at a time in vector lanes
after a transpose (kernels/reduce_rows8.h: ReduceShortRowsSimd; eight scalar chains side by side
without AVX2, kernels/reduce_fast.h: ReduceShortRows), with the same bits
(tests/cpp/kernels_reduce_short_rows_test.cc). Here, against the CPU backend, in f32, bf16 and f64:
sums within the reduction tolerance, maxima and minima exactly (with infinities; with NaNs
exactly as numpy), softmax and logsumexp within the composite tolerance with NaNs and infinities
among the values and with masks that leave whole rows at -inf (a fully masked row's softmax is
NaN on both backends, its logsumexp -inf). Row counts that are not multiples of eight leave 1-7
rows for the last group.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from conftest import check_both, get_kiln_device, run_on

RNG = np.random.default_rng(3503)

LENGTHS = [1, 2, 3, 7, 17, 31, 32, 33, 63, 95, 96, 97, 127, 128, 129, 200, 255, 257, 300]
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64}


def _values(rows, n, dtype, specials=()):
    x = RNG.standard_normal((rows, n)).astype(np.float64)
    if specials:
        flat = x.reshape(-1)
        picks = RNG.choice(flat.size, size=max(1, flat.size // 50), replace=False)
        flat[picks] = RNG.choice(np.array(specials), size=picks.size)
    return x.astype(dtype)


def _rows(n):
    # Several of the fused runs' tiles, and a count that is not a multiple of 8.
    return max(13, 6000 // n) | 1


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", LENGTHS)
def test_row_sum_max_min(n, dtype):
    with jax.enable_x64(dtype == "f64"):
        x = _values(_rows(n), n, DTYPES[dtype])
        check_both(lambda v: jnp.sum(v, axis=-1), x, kind="reduction")
        x = _values(_rows(n), n, DTYPES[dtype], [np.inf, -np.inf])
        for fn in (jnp.max, jnp.min):
            check_both(lambda v: fn(v, axis=-1), x, kind="reduction", exact=True)
        x = _values(_rows(n), n, DTYPES[dtype], [np.nan, np.inf, -np.inf])
        for name in ("max", "min"):
            fn = getattr(jnp, name)
            k = np.asarray(run_on(lambda v: fn(v, axis=-1), (x,), get_kiln_device(), None))
            want = getattr(np, name)(x.astype(np.float64), axis=-1)
            np.testing.assert_array_equal(k.astype(np.float64),
                                          want.astype(k.dtype).astype(np.float64))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", LENGTHS)
def test_softmax_and_logsumexp(n, dtype):
    with jax.enable_x64(dtype == "f64"):
        x = _values(_rows(n), n, DTYPES[dtype])
        check_both(lambda v: jax.nn.softmax(v, axis=-1), x, kind="composite")
        check_both(lambda v: jax.nn.logsumexp(v, axis=-1), x, kind="composite")
        x = _values(_rows(n), n, DTYPES[dtype], [np.nan, np.inf, -np.inf])
        check_both(lambda v: jax.nn.softmax(v, axis=-1), x, kind="composite")
        check_both(lambda v: jax.nn.logsumexp(v, axis=-1), x, kind="composite")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [17, 96, 128, 200])
def test_masked_softmax(n, dtype):
    # Attention-style: [batch, heads, q, kv] scores, a key padding mask per batch entry; batch
    # entry 0 has every key masked (whole rows of -inf).
    b, h, q = 3, 2, 37
    with jax.enable_x64(dtype == "f64"):
        scores = _values(b * h * q, n, DTYPES[dtype]).reshape(b, h, q, n)
        lengths = np.array([0, n // 3 + 1, n], np.int32)
        mask = (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]

        def masked(s, m):
            return jax.nn.softmax(jnp.where(m, s, -jnp.inf), axis=-1)

        k, c = check_both(masked, scores, mask, kind="composite")
        assert np.isnan(np.asarray(k, np.float32)[0]).all()

        def masked_lse(s, m):
            return jax.nn.logsumexp(jnp.where(m, s, -jnp.inf), axis=-1)

        k, c = check_both(masked_lse, scores, mask, kind="composite")
        assert np.isneginf(np.asarray(k, np.float32)[0]).all()
