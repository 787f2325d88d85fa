"""Pairwise-distance programs: `sum((x[:, None, :] - c[None, :, :]) ** 2, -1)` over a short last
axis D, where the fused run reads two broadcasts ([N, D] -> [N, K, D] repeating each row of x K
times, [K, D] -> [N, K, D] repeating c) and reduces rows of D elements (k-means' assignment step,
nearest centroids, RBF features). D = 2, 3, 4 and 8, f32 and f64, N and K that leave partial tiles.

Each program runs on Kiln three ways: as compiled (native code for the run), with the code
generator off (KILN_FUSED_JIT=0, in a subprocess: every member interpreted), which must give the
same bits, and against JAX's CPU backend (tolerances below; argmin indices must agree exactly,
the clustered data having no near ties). The broadcast of x takes strided::GatherFlat's path for
rows repeated along a middle axis (kernels/strided.h; its tiles are checked element by element in
tests/cpp/kernels_shape_broadcast_test.cc): these programs guard its use inside fused runs.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import get_cpu_device, get_kiln_device
from native_code import differing, results_with


def _distances(x, c):
    return jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)


def _nearest(x, c):
    d = _distances(x, c)
    return d, jnp.argmin(d, axis=1), jnp.min(d, axis=1)


def _kmeans(x, c, iters=4):
    k = c.shape[0]

    def body(_, c):
        assign = jnp.argmin(_distances(x, c), axis=1)
        sums = jax.ops.segment_sum(x, assign, num_segments=k)
        counts = jax.ops.segment_sum(jnp.ones_like(assign, x.dtype), assign, num_segments=k)
        return jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1.0)[:, None], c)

    return lax.fori_loop(0, iters, body, c)


def _rbf(x, c):
    return jnp.exp(-0.5 * _distances(x, c)) @ jnp.ones((c.shape[0],), x.dtype)


def _clustered(n, k, d, dtype, seed):
    rng = np.random.default_rng(seed)
    centers = 4.0 * rng.standard_normal((k, d))
    x = centers[rng.integers(0, k, n)] + 0.5 * rng.standard_normal((n, d))
    return x.astype(dtype), x[:k].astype(dtype)

#name->(function, n, k, d, dtype)
CASES = {
    "kmeans_f32_d2": (_kmeans, 4096, 16, 2, np.float32),
    "kmeans_f32_d3_odd": (_kmeans, 1001, 7, 3, np.float32),
    "kmeans_f64_d2": (_kmeans, 2049, 16, 2, np.float64),
    "nearest_f32_d3": (_nearest, 3001, 24, 3, np.float32),
    "nearest_f32_d2": (_nearest, 4100, 16, 2, np.float32),
    "nearest_f32_d4": (_nearest, 777, 9, 4, np.float32),
    "nearest_f64_d8": (_nearest, 513, 10, 8, np.float64),
    "nearest_f64_d3": (_nearest, 1500, 12, 3, np.float64),
    "rbf_f32_d8": (_rbf, 600, 33, 8, np.float32),
}


def run_all(device) -> dict[str, np.ndarray]:
    out = {}
    with jax.enable_x64(True):
        for i, (name, (fn, n, k, d, dtype)) in enumerate(CASES.items()):
            x, c = _clustered(n, k, d, dtype, seed=i)
            got = jax.jit(fn)(jax.device_put(x, device), jax.device_put(c, device))
            for j, v in enumerate(jax.tree.leaves(got)):
                out[f"{name}.{j}"] = np.asarray(v)
    return out


@pytest.mark.requires_kiln
def test_native_code_matches_the_interpreter_bit_for_bit(tmp_path):
    interpreted = results_with(__file__, "KILN_FUSED_JIT", tmp_path)
    differ = differing(run_all(get_kiln_device()), interpreted)
    assert not differ, differ


@pytest.mark.requires_kiln
def test_matches_the_cpu_backend():
    kiln = run_all(get_kiln_device())
    cpu = run_all(get_cpu_device())
    for name, got in kiln.items():
        want = cpu[name]
        assert got.dtype == want.dtype, name
        if got.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            # Centroids are segment sums of up to a few hundred points divided by counts, and the
            # RBF features a dot: summation orders may differ from XLA:CPU's.
            tol = 1e-4 if got.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all(jax.devices("kiln")[0]))
