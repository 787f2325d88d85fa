"""Linear algebra on Kiln vs JAX's CPU backend: jnp.linalg and jax.scipy.linalg through JAX's CPU
lowering rules (registered for kiln by python/kiln/_linalg.py) and Kiln's LAPACK targets
(kernels/lapack_*.cc). f32, f64, c64, c128; batched; gradients; singular inputs (LAPACK's info path:
JAX puts NaNs where CPU does). Both backends call LAPACK with the same inputs, so results agree to
a few ulps; decompositions whose factors are not unique (eigenvectors, singular vectors) are also
checked through what is unique (reconstruction, |Q|)."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from conftest import assert_array_close, run_both

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(dtype, n, batch=(2,)):
    a = sample(dtype, (*batch, n, n), seed=1)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def rtol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-10


def check(f, *args, dtype):
    with jax.enable_x64(np.dtype(dtype).itemsize >= 8 and dtype != np.complex64 or
                        dtype == np.complex128):
        kiln, cpu = run_both(f, *args)
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert k.shape == c.shape and k.dtype == c.dtype
        assert_array_close(k, c, rtol=rtol(dtype), atol=rtol(dtype))


SQUARE = {
    "cholesky": (jnp.linalg.cholesky, "spd"),
    "inv": (jnp.linalg.inv, "general"),
    "det": (jnp.linalg.det, "general"),
    "slogdet": (lambda x: jnp.linalg.slogdet(x), "general"),
    "solve": (lambda x: jnp.linalg.solve(x, x[..., :2]), "general"),
    "eigvalsh": (jnp.linalg.eigvalsh, "spd"),
    "eigh_reconstruct": (lambda x: (lambda w, v: (v * w[..., None, :]) @ jnp.conj(
        jnp.swapaxes(v, -1, -2)))(*jnp.linalg.eigh(x)), "spd"),
    "eigh_abs_vectors": (lambda x: jnp.abs(jnp.linalg.eigh(x)[1]), "spd"),
    "matrix_power": (lambda x: jnp.linalg.matrix_power(x, -2), "general"),
    "lu_factor": (lambda x: jsl.lu_factor(x), "general"),
    "lu": (lambda x: jax.vmap(jsl.lu)(x), "general"),
    "lu_solve": (lambda x: jsl.lu_solve(jsl.lu_factor(x), x[..., :1]), "general"),
    "cho_solve": (lambda x: jsl.cho_solve(jsl.cho_factor(x), x[..., :3]), "spd"),
    "solve_triangular": (lambda x: jsl.solve_triangular(x, x[..., :2], lower=True), "spd"),
    "solve_triangular_trans_unit": (lambda x: jsl.solve_triangular(
        x, x[..., :2], lower=False, trans=1, unit_diagonal=True), "spd"),
    "triangular_solve_right": (lambda x: jax.lax.linalg.triangular_solve(
        x, x[..., :2, :], left_side=False, lower=True, transpose_a=True, conjugate_a=True), "spd"),
    "expm": (lambda x: jsl.expm(x * 0.1), "general"),
    "cond": (jnp.linalg.cond, "general"),
    "norm2": (lambda x: jnp.linalg.norm(x, ord=2, axis=(-2, -1)), "general"),
    "norm_nuc": (lambda x: jnp.linalg.norm(x, ord="nuc", axis=(-2, -1)), "general"),
    "matrix_rank": (jnp.linalg.matrix_rank, "general"),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", SQUARE)
def test_square(name, dtype):
    f, kind = SQUARE[name]
    x = spd(dtype, 5) if kind == "spd" else sample(dtype, (2, 5, 5))
    check(f, x, dtype=dtype)


RECT = {
    "qr_r": (lambda x: jnp.linalg.qr(x)[1]),
    "qr_complete_abs_q": (lambda x: jnp.abs(jnp.linalg.qr(x, mode="complete")[0])),
    "qr_reduced_reconstruct": (lambda x: (lambda q, r: q @ r)(*jnp.linalg.qr(x))),
    "svd_values": (lambda x: jnp.linalg.svd(x, compute_uv=False)),
    "svd_reduced_reconstruct": (lambda x: (lambda u, s, vt: (u * s[..., None, :]) @ vt)(
        *jnp.linalg.svd(x, full_matrices=False))),
    "svd_full_abs_u": (lambda x: jnp.abs(jnp.linalg.svd(x, full_matrices=True)[0])),
    "pinv": jnp.linalg.pinv,
    "lstsq": (lambda x: jax.vmap(lambda m: jnp.linalg.lstsq(m, m[:, :1])[0])(x)),
    "scipy_qr_economic_r": (lambda x: jsl.qr(x, mode="economic")[1]),
    "scipy_svd_values": (lambda x: jsl.svd(x, compute_uv=False)),
    "polar": (lambda x: jsl.polar(x)[0]),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(2, 6, 4), (3, 4, 6)], ids=["tall", "wide"])
@pytest.mark.parametrize("name", RECT)
def test_rectangular(name, shape, dtype):
    if name in ("polar",) and shape[-2] < shape[-1]:
        pytest.skip("polar needs m >= n")
    check(RECT[name], sample(dtype, shape), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_gradients(dtype):
    a = sample(dtype, (4, 4)) + 4 * np.eye(4, dtype=dtype)
    s = spd(dtype, 4, batch=())

    def f(a, s):
        return (jax.grad(lambda a: jnp.linalg.slogdet(a)[1])(a),
                jax.grad(lambda a: jnp.linalg.solve(a, jnp.ones(4, a.dtype)).sum())(a),
                jax.grad(lambda s: jnp.linalg.eigvalsh(s).sum() + jnp.linalg.eigh(s)[0][-1])(s),
                jax.grad(lambda a: jnp.linalg.svd(a, compute_uv=False).sum())(a),
                jax.grad(lambda a: jnp.linalg.qr(a)[1].sum())(a),
                jax.grad(lambda s: jnp.linalg.cholesky(s).sum())(s))

    check(f, a, s, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_singular_and_not_positive_definite(dtype):
    # LAPACK reports info != 0; JAX turns the factors into NaNs, on both backends alike.
    singular = np.zeros((2, 3, 3), dtype)
    singular[1] = np.eye(3)
    not_spd = -np.eye(3, dtype=dtype)[None].repeat(2, 0)
    check(lambda a, b: (jnp.linalg.cholesky(b), jsl.lu_factor(a)[0], jnp.linalg.det(a)),
          singular, not_spd, dtype=dtype)


def test_zero_batch_and_empty_matrices():
    x = np.zeros((0, 3, 3), np.float32)
    check(lambda x: (jnp.linalg.inv(x), jnp.linalg.eigvalsh(x), jnp.linalg.svd(x)[1]), x,
          dtype=np.float32)
    e = np.zeros((2, 0, 0), np.float32)
    check(lambda x: (jnp.linalg.cholesky(x), jnp.linalg.det(x)), e, dtype=np.float32)


def test_larger_batched_solve():
    a = sample(np.float64, (64, 8, 8)) + 8 * np.eye(8)
    b = sample(np.float64, (64, 8, 3), seed=3)
    check(lambda a, b: jnp.linalg.solve(a, b), a, b, dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_triangular_solve(dtype):
    # Kiln widens these to f32 around BLAS and rounds back (compiler/narrow_float.h); XLA:CPU
    # computes them in the narrow type. A few units in the type's last place are allowed.
    a = np.tril(sample(np.float32, (3, 4, 4))) + 4 * np.eye(4, dtype=np.float32)
    b = sample(np.float32, (3, 4, 2), seed=2)
    f = lambda a, b: (jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
                      jax.lax.linalg.triangular_solve(a, b[..., :4, :].swapaxes(-1, -2),
                                                      lower=True, transpose_a=True))
    kiln, cpu = run_both(f, a.astype(dtype), b.astype(dtype))
    tol = 8e-3 if dtype == "float16" else 6e-2
    for k, c in zip(kiln, cpu):
        assert k.dtype == c.dtype and k.shape == c.shape
        assert_array_close(np.asarray(k, np.float32), np.asarray(c, np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(3, 6, 4), (3, 4, 6), (2, 1, 1), (4, 8, 8), (2, 9, 9)],
                         ids=lambda s: "x".join(map(str, s)))
def test_lu_pivots_of_small_and_rectangular_matrices(shape, dtype):
    # Orders up to 8 are factored by Kiln's own loops (kernels/lapack_small.h), 9 by LAPACK: the
    # same pivots as the CPU backend's LAPACK (exactly), factors within rounding.
    a = sample(dtype, shape, seed=5)
    a[0, :, 0] = np.arange(shape[1]) % 2 * 2 - 1  # ties of magnitude in the first column: the first wins
    check(jax.vmap(jsl.lu_factor), a, dtype=dtype)
    with jax.enable_x64(dtype == np.float64):
        kiln, cpu = run_both(lambda a: jax.vmap(jsl.lu_factor)(a)[1], a)
    np.testing.assert_array_equal(kiln, cpu)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
@pytest.mark.parametrize("transpose", [False, True], ids=["n", "t"])
@pytest.mark.parametrize("unit", [False, True], ids=["diag", "unit"])
def test_small_triangular_solves_every_variant(side, lower, transpose, unit):
    a = spd(np.float64, 3, batch=(5,))
    b = sample(np.float64, (5, 3, 4) if side == "left" else (5, 4, 3), seed=7)
    check(lambda a, b: jax.lax.linalg.triangular_solve(
        a, b, left_side=side == "left", lower=lower, transpose_a=transpose, unit_diagonal=unit),
        a, b, dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 2, 4, 7, 8, 9])
def test_small_cholesky_orders_and_failures(n, dtype):
    # Orders up to 8 are factored by Kiln's own loops (kernels/lapack_small.h: SmallPotrf), 9 by
    # LAPACK. Batch members that are not positive definite (a negative pivot at order 1 or at the
    # last order) come out as NaNs where the CPU backend's do; cho_factor(lower=False) and
    # cho_solve use the factor too. Tolerance rtol(dtype) (2e-4 f32, 1e-10 f64).
    a = spd(dtype, n, batch=(6,))
    a[1, 0, 0] = -1.0
    a[2, n - 1, n - 1] = -1000.0
    check(jnp.linalg.cholesky, a, dtype=dtype)
    b = sample(dtype, (6, n, 3), seed=9)
    check(lambda a, b: jsl.cho_solve(jsl.cho_factor(a, lower=False), b), a, b, dtype=dtype)
