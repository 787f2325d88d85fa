"""Nonsymmetric eigenproblems and the reductions behind them on Kiln vs JAX's CPU backend: eig /
eigvals (geev), Schur (gees), Hessenberg (gehrd), tridiagonal reduction (sytrd / hetrd) and what
JAX builds on them (sqrtm, funm, solve_sylvester, roots). f32, f64, c64, c128; batched where the
primitive takes batches; gradients where JAX defines them; non-finite inputs (geev's info = -4).

Both backends call LAPACK's same routines on the same data, so outputs are compared directly (to a
few ulps); eigenvectors and Schur vectors are also checked through what defines them (A v = v w,
Z T Z^H = A, Q H Q^H = A), on Kiln's own results."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

from conftest import run_both
from test_linalg import DTYPES, check, sample

COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def x64(dtype):
    return jax.enable_x64(np.dtype(dtype) in (np.dtype(np.float64), np.dtype(np.complex128)))


def kiln_and_cpu(f, *args, dtype):
    with x64(dtype):
        return run_both(f, *args)


def hermitian(dtype, shape, seed=0):
    a = sample(dtype, shape, seed)
    return (a + np.conj(np.swapaxes(a, -1, -2))).astype(dtype)


def residual_tol(dtype):
    return 1e-3 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-11


def conj_t(x):
    return np.conj(np.swapaxes(x, -1, -2))


# ---- eig / eigvals (geev) ----

def phase_fixed(v):
    # An eigenvector is defined up to a unit factor. geev makes the largest component real, but its
    # sign (and a vector's phase) depends on rounding inside the LAPACK build and CPU, which differ
    # between jaxlib's and Kiln's: compare vectors scaled so that their largest component is real
    # and positive.
    idx = jnp.argmax(jnp.abs(v), axis=-2, keepdims=True)
    p = jnp.take_along_axis(v, idx, axis=-2)
    return v * (jnp.conj(p) / jnp.where(p == 0, 1, jnp.abs(p)))


def eig_fixed(x, **kw):
    out = lax.linalg.eig(x, **kw)
    return (out[0], *(phase_fixed(v) for v in out[1:]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_matches_cpu_and_reconstructs(dtype):
    a = sample(dtype, (3, 6, 6))
    check(eig_fixed, a, dtype=dtype)
    check(jnp.linalg.eigvals, a, dtype=dtype)
    (w, v), _ = kiln_and_cpu(jnp.linalg.eig, a, dtype=dtype)
    assert w.dtype == np.dtype(COMPLEX_OF.get(np.dtype(dtype), dtype))
    scale = np.abs(a).max()
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=residual_tol(dtype) * scale * 6)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=residual_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_left_and_right_vectors(dtype):
    a = sample(dtype, (2, 5, 5), seed=4)

    def f(x):
        return lax.linalg.eig(x, compute_left_eigenvectors=True, compute_right_eigenvectors=True)

    check(lambda x: eig_fixed(x, compute_left_eigenvectors=True), a, dtype=dtype)
    (w, vl, vr), _ = kiln_and_cpu(f, a, dtype=dtype)
    # Left eigenvectors: vl^H a = w vl^H.
    tol = residual_tol(dtype) * np.abs(a).max() * 5
    np.testing.assert_allclose(conj_t(vl) @ a, w[..., :, None] * conj_t(vl), atol=tol)
    check(lambda x: eig_fixed(x, compute_left_eigenvectors=True,
                              compute_right_eigenvectors=False), a, dtype=dtype)
    check(lambda x: lax.linalg.eig(x, compute_left_eigenvectors=False,
                                   compute_right_eigenvectors=False), a, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_eig_real_conjugate_pairs_and_real_eigenvalues(dtype):
    # Block diagonal: a rotation (eigenvalues 2 +- 3i) and a diagonal part (real eigenvalues), mixed
    # by a similarity so that LAPACK's packed pair form has to be unpacked in the middle.
    rng = np.random.default_rng(7)
    d = np.zeros((5, 5))
    d[:2, :2] = [[2.0, -3.0], [3.0, 2.0]]
    d[2, 2], d[3, 3], d[4, 4] = -1.0, 0.5, 4.0
    s = rng.standard_normal((5, 5)) + 3 * np.eye(5)
    a = (s @ d @ np.linalg.inv(s)).astype(dtype)
    check(eig_fixed, a, dtype=dtype)
    w, _ = kiln_and_cpu(jnp.linalg.eigvals, a, dtype=dtype)
    want = np.array([2 + 3j, 2 - 3j, -1, 0.5, 4])
    got = np.sort_complex(w)
    np.testing.assert_allclose(got, np.sort_complex(want), atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_non_finite_input_gives_nan_for_that_matrix_only(dtype):
    a = sample(dtype, (3, 4, 4), seed=2)
    a[1, 2, 3] = np.nan
    a[2, 0, 0] = np.inf
    check(eig_fixed, a, dtype=dtype)
    (w, v), _ = kiln_and_cpu(jnp.linalg.eig, a, dtype=dtype)
    assert np.isfinite(w[0]).all() and np.isfinite(v[0]).all()
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all()
    assert np.isnan(w[2]).all() and np.isnan(v[2]).all()


def test_eig_empty_batch_and_one_by_one():
    check(eig_fixed, np.zeros((0, 3, 3), np.float32), dtype=np.float32)
    check(eig_fixed, np.full((2, 1, 1), -2.5, np.float64), dtype=np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_gradients(dtype):
    a = sample(dtype, (4, 4), seed=5)

    def f(a):
        vals = jax.grad(lambda x: jnp.real(jnp.linalg.eigvals(x) ** 2).sum(), holomorphic=False)
        return vals(a)

    check(f, a, dtype=dtype)


# ---- Schur (gees) ----

def schur_invariants(t):
    """What a Schur form T determines: the eigenvalues on its diagonal and the magnitudes of its
    entries (the Schur vectors are fixed only up to a diagonal unitary, or signs for real input, so
    two LAPACK builds may return T's off-diagonal entries with other phases)."""
    return jnp.diagonal(t, axis1=-2, axis2=-1), jnp.abs(t)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_schur_batched_matches_cpu_and_reconstructs(dtype):
    a = sample(dtype, (3, 5, 5), seed=3)
    check(lambda x: schur_invariants(lax.linalg.schur(x)[0]), a, dtype=dtype)
    check(lambda x: schur_invariants(lax.linalg.schur(x, compute_schur_vectors=False)[0]), a,
          dtype=dtype)
    (t, z), _ = kiln_and_cpu(lax.linalg.schur, a, dtype=dtype)
    tol = residual_tol(dtype) * np.abs(a).max() * 5
    np.testing.assert_allclose(z @ t @ conj_t(z), a, atol=tol)
    np.testing.assert_allclose(conj_t(z) @ z, np.broadcast_to(np.eye(5), z.shape), atol=tol)
    # Quasi-triangular (real: 2x2 blocks for pairs) or triangular (complex).
    below = 2 if np.dtype(dtype).kind == "f" else 1
    assert np.all(np.tril(t, -below) == 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("output", ["real", "complex"])
def test_scipy_schur(output, dtype):
    a = sample(dtype, (6, 6), seed=8)
    check(lambda x: schur_invariants(jsl.schur(x, output=output)[0]), a, dtype=dtype)
    (t, z), _ = kiln_and_cpu(lambda x: jsl.schur(x, output=output), a, dtype=dtype)
    tol = residual_tol(dtype) * np.abs(a).max() * 5
    np.testing.assert_allclose(z @ t @ conj_t(z), a, atol=tol)


def test_schur_nan_input_is_nan_like_cpu():
    a = sample(np.float64, (2, 4, 4))
    a[0, 1, 1] = np.nan
    check(lax.linalg.schur, a, dtype=np.float64)


# ---- Hessenberg (gehrd) ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_hessenberg(dtype):
    a = sample(dtype, (2, 6, 6), seed=6)
    check(lax.linalg.hessenberg, a, dtype=dtype)
    check(lambda x: jsl.hessenberg(x[0], calc_q=True), a, dtype=dtype)
    check(lambda x: jsl.hessenberg(x[1]), a, dtype=dtype)
    (h, q), _ = kiln_and_cpu(lambda x: jsl.hessenberg(x[0], calc_q=True), a, dtype=dtype)
    tol = residual_tol(dtype) * np.abs(a).max() * 5
    np.testing.assert_allclose(q @ h @ conj_t(q), a[0], atol=tol)
    assert np.all(np.tril(h, -2) == 0)


def test_hessenberg_one_by_one_and_empty_batch():
    check(lax.linalg.hessenberg, np.full((3, 1, 1), 2.0, np.float32), dtype=np.float32)
    check(lax.linalg.hessenberg, np.zeros((0, 4, 4), np.float64), dtype=np.float64)


# ---- tridiagonal reduction (sytrd / hetrd) ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_tridiagonal(lower, dtype):
    h = hermitian(dtype, (2, 6, 6), seed=9)
    check(lambda x: lax.linalg.tridiagonal(x, lower=lower), h, dtype=dtype)
    (_, d, e, _), _ = kiln_and_cpu(lambda x: lax.linalg.tridiagonal(x, lower=lower), h,
                                   dtype=dtype)
    # The tridiagonal matrix (d, e) is similar to h: same eigenvalues.
    t = np.zeros(h.shape, np.float64)
    idx = np.arange(6)
    t[:, idx, idx] = d
    t[:, idx[1:], idx[:-1]] = e
    t[:, idx[:-1], idx[1:]] = e
    np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(h.astype(np.complex128)),
                               atol=residual_tol(dtype) * 20)


# ---- what JAX builds on them ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sqrtm_funm_and_sylvester(dtype):
    a = sample(dtype, (5, 5), seed=11) + 5 * np.eye(5, dtype=dtype)
    b = sample(dtype, (4, 4), seed=12) - 5 * np.eye(4, dtype=dtype)
    c = sample(dtype, (5, 4), seed=13)
    if np.dtype(dtype).kind == "c":
        check(jsl.sqrtm, a, dtype=dtype)
        check(lambda x: jsl.funm(x, jnp.exp), a * 0.2, dtype=dtype)
    else:
        check(lambda x: jsl.sqrtm(x.astype(COMPLEX_OF[np.dtype(dtype)])), a, dtype=dtype)
        check(lambda x: jsl.funm(x, jnp.sin), a * 0.2, dtype=dtype)
    check(jsl.solve_sylvester, a, b, c, dtype=dtype)
    x, _ = kiln_and_cpu(jsl.solve_sylvester, a, b, c, dtype=dtype)
    np.testing.assert_allclose(a @ x + x @ b, c, atol=residual_tol(dtype) * 50)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_roots_cond_matrix_power(dtype):
    p = np.array([1.0, -6.0, 11.0, -6.0], dtype)  # (x - 1)(x - 2)(x - 3)
    check(lambda q: jnp.roots(q, strip_zeros=False), p, dtype=dtype)
    r, _ = kiln_and_cpu(lambda q: jnp.roots(q, strip_zeros=False), p, dtype=dtype)
    np.testing.assert_allclose(np.sort(r.real), [1, 2, 3], atol=2e-3 if dtype == np.float32 else 1e-8)
    a = sample(dtype, (2, 4, 4), seed=14)
    check(lambda x: jnp.linalg.cond(x, p=2), a, dtype=dtype)
    check(lambda x: jnp.linalg.cond(x, p="fro"), a, dtype=dtype)
    check(lambda x: jnp.linalg.matrix_power(x, 5), a, dtype=dtype)

