"""Reductions over every axis set of small odd-sized 3-D arrays, f32 and bf16 (issue 35).

A reduction over the last axis and outer axes (a sum over axes (0, 2)) with rows of 32 to 2,048
elements folds each output's rows into one set of 32 lanes per leaf of whole rows
(kernels/reduce_fast.h: ReduceSegmentRows; bf16/f16 codes widened as they are read,
kernels/reduce_widen.cc); the other axis sets take the row, column and short-row paths. Each case
runs on Kiln and on the CPU backend: sums and means within the reduction tolerance
(tests/python/tolerances.py), maxima and minima exactly with infinities among the values, and with
NaNs too exactly as numpy (XLA:CPU's column maximum drops NaNs; JAX's propagates them). Which zero a
maximum of +0 and -0 keeps depends on the order, so signed zeros are checked in
tests/cpp/kernels_reduce_segments_test.cc against the stated fold.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import check_both, get_kiln_device, run_both, run_on

RNG = np.random.default_rng(3502)

SHAPES = [(7, 9, 65), (37, 11, 33), (5, 3, 129), (3, 13, 29)]
AXIS_SETS = [axes for k in (1, 2, 3) for axes in itertools.combinations(range(3), k)]
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}
REDUCERS = {"sum": jnp.sum, "mean": jnp.mean, "max": jnp.max, "min": jnp.min}


def _values(shape, dtype, specials):
    x = RNG.standard_normal(shape).astype(np.float32)
    if specials:
        flat = x.reshape(-1)
        picks = RNG.choice(flat.size, size=max(1, flat.size // 300), replace=False)
        flat[picks] = RNG.choice(np.array(specials, np.float32), size=picks.size)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("axes", AXIS_SETS, ids=lambda a: "axes" + "".join(map(str, a)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("reducer", sorted(REDUCERS))
def test_reduce_over_axis_set(reducer, shape, axes, dtype):
    fn = REDUCERS[reducer]
    if reducer in ("max", "min"):
        # Infinities: exactly as the CPU backend.
        x = _values(shape, DTYPES[dtype], [np.inf, -np.inf])
        check_both(lambda v: fn(v, axis=axes), x, kind="reduction", exact=True)
        # NaNs too: XLA:CPU's column maximum drops NaNs (tests/python/test_gather_widen.py), JAX's
        # documented maximum propagates them as numpy's does: exactly as numpy.
        x = _values(shape, DTYPES[dtype], [np.nan, np.inf, -np.inf])
        k = np.asarray(run_on(lambda v: fn(v, axis=axes), (x,), get_kiln_device(), None))
        ref = getattr(np, reducer)(x.astype(np.float32), axis=axes).astype(k.dtype)
        np.testing.assert_array_equal(k.astype(np.float32), ref.astype(np.float32))
    else:
        check_both(lambda v: fn(v, axis=axes), _values(shape, DTYPES[dtype], None),
                   kind="reduction")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_sum_of_many_rows_against_float64(dtype):
    # 400 rows of 65 per output (several leaves): Kiln's error against a float64 sum within a small
    # multiple of the CPU backend's.
    x = _values((400, 5, 65), DTYPES[dtype], None)
    kiln, cpu = run_both(lambda v: jnp.sum(v.astype(jnp.float32), axis=(0, 2)), x)
    want = x.astype(np.float64).sum(axis=(0, 2))
    err_k = np.abs(np.asarray(kiln, np.float64) - want).max()
    err_c = np.abs(np.asarray(cpu, np.float64) - want).max()
    assert err_k <= 4 * err_c + 1e-4, (err_k, err_c)


# Long columns with few of them (kernels/reduce_blocks.h: tasks of blocks of 64 rows whose partials
# join the output in block order, the same bits as the column walk): leading and middle axes of
# more than 64 rows, odd counts, f32 / bf16 / f64 / int32; maxima and minima with NaNs as numpy.
LONG_COLUMNS = [((2048, 65), (0,)), ((301, 7, 129), (0,)), ((301, 7, 129), (0, 1)),
                ((3, 257, 33), (1,)), ((97, 5, 3, 11), (0, 2))]
LONG_DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
               "i32": np.int32}


@pytest.mark.parametrize("dtype", sorted(LONG_DTYPES))
@pytest.mark.parametrize("case", LONG_COLUMNS, ids=lambda c: "x".join(map(str, c[0])) + "_axes"
                         + "".join(map(str, c[1])))
@pytest.mark.parametrize("reducer", sorted(REDUCERS))
def test_long_columns(reducer, case, dtype):
    shape, axes = case
    fn = REDUCERS[reducer]
    dt = LONG_DTYPES[dtype]
    with jax.enable_x64(dtype == "f64"):
        if dtype == "i32":
            x = RNG.integers(-1000, 1000, shape).astype(np.int32)
            if reducer == "mean":
                check_both(lambda v: fn(v, axis=axes), x, kind="reduction")
            else:
                check_both(lambda v: fn(v, axis=axes), x, exact=True)
        elif reducer in ("max", "min"):
            x = _values(shape, dt, [np.inf, -np.inf])
            check_both(lambda v: fn(v, axis=axes), x, kind="reduction", exact=True)
            x = _values(shape, dt, [np.nan, np.inf, -np.inf])
            k = np.asarray(run_on(lambda v: fn(v, axis=axes), (x,), get_kiln_device(), None))
            ref = getattr(np, reducer)(x.astype(np.float64), axis=axes)
            np.testing.assert_array_equal(k.astype(np.float64), ref.astype(k.dtype).astype(np.float64))
        else:
            # Sums of hundreds of rows differ from XLA:CPU's order by more than the reduction
            # tolerance where they cancel: each error against a float64 reference instead.
            x = _values(shape, dt, None)
            kiln, cpu = run_both(lambda v: fn(v, axis=axes), x)
            want = getattr(np, reducer)(x.astype(np.float64), axis=axes)
            err_k = np.abs(np.asarray(kiln, np.float64) - want).max()
            err_c = np.abs(np.asarray(cpu, np.float64) - want).max()
            assert err_k <= 4 * err_c + 1e-6, (err_k, err_c)


def test_long_column_sum_against_float64():
    # 4,096 rows per column (64 blocks of 64 rows, split over tasks): Kiln's error against a float64
    # sum within a small multiple of the CPU backend's.
    x = _values((4096, 33), np.float32, None)
    kiln, cpu = run_both(lambda v: jnp.sum(v, axis=0), x)
    want = x.astype(np.float64).sum(axis=0)
    err_k = np.abs(np.asarray(kiln, np.float64) - want).max()
    err_c = np.abs(np.asarray(cpu, np.float64) - want).max()
    assert err_k <= 4 * err_c + 1e-4, (err_k, err_c)
