"""Sorts, gathers and scatters large enough to be split over threads, against XLA:CPU.

Sorts of long slices run as a radix sort (total-order keys) or a merge sort in parts
(kernels/sort_parallel.h); scatter-adds of long rows with grouped destinations run in parts
(kernels/scatter_row.h). Both promise the serial result bit for bit, and XLA:CPU's: argsort ties
keep index order, NaNs and -0/+0 sort as JAX's comparator says, each element's updates combine in
update order. Everything here is compared exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both

RNG = np.random.default_rng(35)


def tie_heavy_f32(n):
    """Few distinct values, NaNs of both signs, -0 and +0, infinities."""
    x = (RNG.integers(-20, 21, n) * 0.5).astype(np.float32)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf], np.float32)
    pick = RNG.integers(0, 64, n)
    x[pick < 6] = special[pick[pick < 6]]
    return x


@pytest.mark.parametrize("n", [1000, 40000, 1 << 17])
def test_argsort_stable_with_ties_and_nans(n):
    x = tie_heavy_f32(n)
    check_both(lambda x: (jnp.argsort(x, stable=True), jnp.argsort(x, stable=True, descending=True),
                          jnp.sort(x), jnp.sort(x, descending=True)), x, exact=True)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.float64])
def test_argsort_other_key_types(dtype):
    if dtype == np.float64:
        with jax.enable_x64(True):
            x = tie_heavy_f32(50000).astype(np.float64)
            check_both(lambda x: (jnp.argsort(x, stable=True), jnp.sort(x)), x, exact=True)
        return
    info = np.iinfo(dtype)
    x = RNG.integers(max(info.min, -1000), min(info.max, 1000), 50000).astype(dtype)
    check_both(lambda x: (jnp.argsort(x, stable=True), jnp.sort(x, descending=True)), x,
               exact=True)


@pytest.mark.parametrize("shape,axis", [((3, 40000), 1), ((40000, 3), 0), ((2, 3, 20000), 2)])
def test_sort_along_each_axis(shape, axis):
    x = tie_heavy_f32(int(np.prod(shape))).reshape(shape)
    check_both(lambda x: (jnp.argsort(x, axis=axis, stable=True), jnp.sort(x, axis=axis)), x,
               exact=True)


def test_sort_with_payloads_and_two_keys():
    # num_keys=1 carries payloads (the key path); num_keys=2 runs the comparator region.
    k1 = RNG.integers(0, 50, 40000).astype(np.int32)
    k2 = tie_heavy_f32(40000)
    v = np.arange(40000, dtype=np.int32)
    check_both(lambda a, b, v: (lax.sort((a, b, v), num_keys=1), lax.sort((a, b, v), num_keys=2)),
               k1, k2, v, exact=True)


def test_random_permutation_large():
    key = np.array([0, 9], np.uint32)
    x = np.arange(100000, dtype=np.float32)
    check_both(lambda k, x: jax.random.permutation(jax.random.wrap_key_data(k), x), key, x,
               exact=True)


def test_top_k_and_searchsorted():
    x = tie_heavy_f32(512 * 4096).reshape(512, 4096)
    x = np.where(np.isnan(x), np.float32(0.25), x)
    check_both(lambda x: lax.top_k(x, 10), x, exact=True)
    sorted_x = np.sort(RNG.standard_normal(1 << 16).astype(np.float32))
    q = RNG.standard_normal(5000).astype(np.float32)
    check_both(lambda s, q: (jnp.searchsorted(s, q), jnp.searchsorted(s, q, side="right")),
               sorted_x, q, exact=True)


@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_gathers_with_out_of_range_indices(mode):
    x = RNG.standard_normal((512, 300)).astype(np.float32)
    i = RNG.integers(-400, 700, (512, 300)).astype(np.int32)
    v = RNG.standard_normal(1 << 18).astype(np.float32)
    j = RNG.integers(-(1 << 18) - 5, (1 << 18) + 5, 1 << 18).astype(np.int32)
    check_both(lambda x, i, v, j: (jnp.take_along_axis(x, i, axis=1, mode=mode),
                                   jnp.take_along_axis(x, i[:40] % 600, axis=0, mode=mode),
                                   v.at[j].get(mode=mode), jnp.take(v, j, mode=mode)),
               x, i, v, j, exact=True)


@pytest.mark.parametrize("order", ["sorted", "sorted_with_drops", "unsorted"])
def test_scatter_add_with_duplicate_indices(order):
    n = 1 << 18
    data = RNG.standard_normal(n).astype(np.float32)
    ids = RNG.integers(0, 1000, n).astype(np.int32)
    if order != "unsorted":
        ids.sort()
    if order == "sorted_with_drops":
        ids[RNG.integers(0, n, 2000)] = -1  # dropped updates inside runs of one id
    rows = RNG.standard_normal((n // 64, 8)).astype(np.float32)
    check_both(lambda d, s, r: (jax.ops.segment_sum(d, s, num_segments=1000),
                                jnp.zeros(1000, jnp.float32).at[s].add(d, mode="drop"),
                                jnp.zeros((50, 8), jnp.float32).at[s[::64] % 50].add(r),
                                jnp.zeros(1000, jnp.int32).at[s].add(1, mode="drop")),
               data, ids, rows, exact=True)


def test_gathers_with_size_one_axes():
    # jnp.linalg.inv's column permutation: a batched gather into f32[2048, 4, 4, 1] whose rows
    # end in an axis of size 1 (the window map drops such axes); and a scatter of the same form.
    a = RNG.standard_normal((2048, 4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    check_both(jnp.linalg.inv, a, rtol=1e-4, atol=1e-5)
    x = RNG.standard_normal((64, 5, 7, 1)).astype(np.float32)
    perm = np.stack([RNG.permutation(7) for _ in range(64 * 5)]).reshape(64, 5, 7).astype(np.int32)
    check_both(lambda x, p: (jnp.take_along_axis(x, p[..., None], axis=2),
                             jnp.zeros_like(x).at[jnp.arange(64)[:, None, None],
                                                  jnp.arange(5)[None, :, None], p].add(x)),
               x, perm, exact=True)


def test_take_along_axis_normalisation_runs_with_the_gather(tmp_path):
    # compiler/gather_indices.h: the gather wraps negative indices itself, so JAX's normalised
    # index array is not computed in a run of its own before the gather's; one fused run remains.
    from native_code import traced_step_names
    code = """
import jax, jax.numpy as jnp, numpy as np
f = jax.jit(lambda x, i: jnp.take_along_axis(x, i, axis=1), device=jax.devices("kiln")[0])
x = np.ones((64, 30), np.float32); i = np.tile(np.arange(-40, 20, dtype=np.int32), (64, 1))[:, :30]
jax.block_until_ready(f(x, i))
"""
    names = traced_step_names(code, tmp_path)
    assert len(names) == 1, names  # before: the normalisation, then the gather


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_negative_index_wrap_every_index_type(dtype):
    with jax.enable_x64(dtype == np.int64):
        x = RNG.standard_normal((40, 100)).astype(np.float32)
        i = RNG.integers(-120, 120, (40, 100)).astype(dtype)
        v = RNG.standard_normal(100).astype(np.float32)
        check_both(lambda x, i, v: (jnp.take_along_axis(x, i, axis=1),
                                    jnp.take_along_axis(x, i, axis=1, mode="clip"),
                                    jnp.take_along_axis(x, i[:30] % 50 - 25, axis=0),
                                    v[i], jnp.take(v, i, mode="clip")),
                   x, i, v, exact=True)
