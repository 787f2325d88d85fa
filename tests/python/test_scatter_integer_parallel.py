"""Integer scatters into small results, split over threads, exactly against XLA:CPU.

Integer and bool reducers (add, max, min, or, and, xor) are exact and order-independent, so a long
row of updates into a small result (up to 64K elements) is cut into parts, each accumulating into
a private copy, and the copies are combined (kernels/scatter_row.h ScatterRowPrivate). Unsorted
indices with many duplicates, out-of-range indices (dropped) and negative ones (JAX wraps them
once, then drops what is still out of range) are compared exactly; float scatter-adds of the same
shape keep the serial update order and must match XLA:CPU bit for bit too.
"""
from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import check_both

RNG = np.random.default_rng(356)
N = 300_000  # long enough to split (kernels/scatter_row.h kScatterSplitLength)


@pytest.mark.parametrize("n", [1000, N])
def test_bincount_plain_weighted_and_length(n):
    x = RNG.integers(0, 256, n).astype(np.int32)
    w = RNG.integers(-1000, 1000, n).astype(np.int32)
    check_both(lambda x, w: (jnp.bincount(x, length=256),
                             jnp.bincount(x, weights=w, length=256),
                             jnp.bincount(x, length=100),  # values >= length are dropped
                             jnp.bincount(x, weights=w, length=1000)),
               x, w, exact=True)


def test_bincount_float_weights_keep_the_serial_order():
    x = RNG.integers(0, 256, N).astype(np.int32)
    w = RNG.standard_normal(N).astype(np.float32)
    check_both(lambda x, w: jnp.bincount(x, weights=w, length=256), x, w, exact=True)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint32, np.bool_])
def test_at_add_max_min_with_out_of_range_and_negative_indices(dtype):
    idx = RNG.integers(-300, 300, N).astype(np.int32)  # wraps once, then drops what is left
    if dtype == np.bool_:
        x = RNG.integers(0, 2, 256).astype(np.bool_)
        u = RNG.integers(0, 2, N).astype(np.bool_)
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, info.max, 256, endpoint=True).astype(dtype)
        u = RNG.integers(info.min, info.max, N, endpoint=True).astype(dtype)
    if dtype == np.bool_:  # JAX has no add or mul on bool
        check_both(lambda x, i, u: (x.at[i].max(u), x.at[i].min(u)), x, idx, u, exact=True)
        return
    check_both(lambda x, i, u: (x.at[i].add(u), x.at[i].max(u), x.at[i].min(u),
                                x.at[i].add(u, mode="drop"), x.at[i].mul(u)),
               x, idx, u, exact=True)


def test_two_dimensional_small_result():
    # x.at[i, j].add(1) into a 64x64 histogram: two index components, one-element updates.
    i = RNG.integers(-70, 70, (N, 2)).astype(np.int32)
    x = np.zeros((64, 64), np.int32)
    check_both(lambda x, i: x.at[i[:, 0], i[:, 1]].add(1), x, i, exact=True)
