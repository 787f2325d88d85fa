"""QR with column pivoting (geqp3), applying Q (ormqr / unmqr), tridiagonal solves (gtsv and jaxlib's
perturbed solve), SVD by QR iteration (gesvd) on Kiln vs JAX's CPU backend, and the refusals of
malformed LAPACK calls. f32, f64, c64, c128; batched; gradients where JAX defines them."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

from test_linalg import DTYPES, check, sample
from test_linalg_eig import conj_t, kiln_and_cpu, residual_tol

SHAPES = {"tall": (2, 6, 4), "wide": (2, 4, 6), "square": (3, 5, 5)}


# ---- QR with column pivoting (geqp3) ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_qr_pivoting_batched(shape, dtype):
    a = sample(dtype, shape, seed=21)
    for full in (False, True):
        f = lambda x, full=full: lax.linalg.qr(x, pivoting=True, full_matrices=full)  # noqa: E731
        check(f, a, dtype=dtype)
    (q, r, p), _ = kiln_and_cpu(lambda x: lax.linalg.qr(x, pivoting=True, full_matrices=False),
                                a, dtype=dtype)
    assert p.dtype == np.int32
    for b in range(a.shape[0]):
        assert sorted(p[b]) == list(range(a.shape[-1]))
        np.testing.assert_allclose(q[b] @ r[b], a[b][:, p[b]],
                                   atol=residual_tol(dtype) * np.abs(a).max() * 5)
    # Column pivoting orders |R|'s diagonal.
    diag = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    assert np.all(diag[:, :-1] >= diag[:, 1:] * (1 - 1e-5))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_scipy_qr_pivoting(mode, dtype):
    check(lambda x: jsl.qr(x, pivoting=True, mode=mode), sample(dtype, (7, 5), seed=22), dtype=dtype)


def test_qr_pivoting_rank_deficient():
    # Two equal columns: pivoting puts an independent column first, R's last diagonal is ~0.
    # Only the first three columns of Q (and rows of R) are determined: the rest span the null
    # space in whatever basis the LAPACK build's rounding leads to, which differs between CPUs.
    a = sample(np.float64, (6, 4), seed=23)
    a[:, 3] = a[:, 1]

    def determined(x):
        q, r, p = jsl.qr(x, pivoting=True)
        return q[:, :3], r[:3], p
    check(determined, a, dtype=np.float64)
    (q, r, p), _ = kiln_and_cpu(lambda x: jsl.qr(x, pivoting=True), a, dtype=np.float64)
    assert abs(r[3, 3]) < 1e-12 * abs(r[0, 0])
    np.testing.assert_allclose(q @ r, a[:, p], atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(6), atol=1e-12)


# ---- applying Q (ormqr / unmqr) ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", ["left", "right"])
@pytest.mark.parametrize("conjugate", [False, True], ids=["plain", "conjugate"])
@pytest.mark.parametrize("pivoting", [False, True], ids=["geqrf", "geqp3"])
def test_qr_multiply(pivoting, conjugate, mode, dtype):
    # a is 6 x 4: Q @ c takes c of 4 rows (mode 'left'), c @ Q takes c of 6 columns ('right').
    a = sample(dtype, (6, 4), seed=24)
    c = sample(dtype, (4, 3) if mode == "left" else (3, 6), seed=25)
    f = lambda a, c: jsl.qr_multiply(a, c, mode=mode, conjugate=conjugate,  # noqa: E731
                                     pivoting=pivoting)
    check(f, a, c, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("transpose", [False, True], ids=["q", "q_h"])
def test_ormqr_batched(transpose, left, dtype):
    from jax._src.lax import linalg as lax_linalg  # geqrf is not public

    a = sample(dtype, (2, 5, 3), seed=26)
    c = sample(dtype, (2, 5, 4) if left else (2, 4, 5), seed=27)

    def f(a, c):
        r, taus = lax_linalg.geqrf(a)
        return lax.linalg.ormqr(r, taus, c, left=left, transpose=transpose)

    check(f, a, c, dtype=dtype)
    got, _ = kiln_and_cpu(f, a, c, dtype=dtype)
    q, _ = np.linalg.qr(a.astype(np.complex128), mode="complete")
    op = conj_t(q) if transpose else q
    want = op @ c if left else c @ op
    np.testing.assert_allclose(got, want, atol=residual_tol(dtype) * 20)


# ---- tridiagonal solves (gtsv, tridiagonal_solve_perturbed_ffi) ----

def tridiagonal_system(dtype, batch, n, nrhs, seed=30, dominant=True):
    dl = sample(dtype, (*batch, n), seed)
    d = sample(dtype, (*batch, n), seed + 1) + (4 if dominant else 0)
    du = sample(dtype, (*batch, n), seed + 2)
    dl[..., 0] = 0
    du[..., -1] = 0
    b = sample(dtype, (*batch, n, nrhs), seed + 3)
    return dl, d, du, b


def dense(dl, d, du):
    n = d.shape[-1]
    t = np.zeros((*d.shape, n), np.complex128)
    idx = np.arange(n)
    t[..., idx, idx] = d
    t[..., idx[1:], idx[:-1]] = dl[..., 1:]
    t[..., idx[:-1], idx[1:]] = du[..., :-1]
    return t


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("perturb", [False, True], ids=["gtsv", "perturbed"])
@pytest.mark.parametrize("n,nrhs", [(1, 2), (2, 1), (7, 3)])
def test_tridiagonal_solve(n, nrhs, perturb, dtype):
    dl, d, du, b = tridiagonal_system(dtype, (3,), n, nrhs, dominant=False)
    f = lambda *z: lax.linalg.tridiagonal_solve(*z, perturb_singular=perturb)  # noqa: E731
    check(f, dl, d, du, b, dtype=dtype)
    x, _ = kiln_and_cpu(f, dl, d, du, b, dtype=dtype)
    t = dense(dl, d, du)
    cond = np.linalg.cond(t).max()
    np.testing.assert_allclose(t @ x, b, atol=residual_tol(dtype) * cond * 10)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_tridiagonal_solve_singular(dtype):
    # A singular system in the middle of a batch: gtsv reports info > 0 and JAX masks that solve
    # with NaN; the perturbed solve returns a finite (huge) solution, as for inverse iteration.
    dl, d, du, b = tridiagonal_system(dtype, (3,), 4, 2, seed=40)
    d[1] = 0
    dl[1] = 0
    du[1] = 0
    f = lambda *z: (lax.linalg.tridiagonal_solve(*z),  # noqa: E731
                    lax.linalg.tridiagonal_solve(*z, perturb_singular=True))
    check(f, dl, d, du, b, dtype=dtype)
    (plain, perturbed), _ = kiln_and_cpu(f, dl, d, du, b, dtype=dtype)
    assert np.isnan(plain[1]).all() and np.isfinite(plain[[0, 2]]).all()
    assert np.isfinite(perturbed).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_tridiagonal_solve_gradients(dtype):
    dl, d, du, b = tridiagonal_system(dtype, (), 5, 2, seed=50)

    def f(dl, d, du, b):
        loss = lambda *z: (lax.linalg.tridiagonal_solve(*z) ** 2).sum()  # noqa: E731
        return jax.grad(loss, argnums=(0, 1, 2, 3))(dl, d, du, b)

    check(f, dl, d, du, b, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_eigh_tridiagonal_vectors(dtype):
    # Inverse iteration over the perturbed tridiagonal solve, inside a while loop.
    rng = np.random.default_rng(60)
    d = rng.standard_normal(8).astype(dtype)
    e = rng.standard_normal(7).astype(dtype)
    f = lambda d, e: jsl.eigh_tridiagonal(d, e, eigvals_only=False)  # noqa: E731
    check(f, d, e, dtype=dtype)
    (w, v), _ = kiln_and_cpu(f, d, e, dtype=dtype)
    t = np.diag(d.astype(np.float64)) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(t @ v, v * w, atol=residual_tol(dtype) * 20)


# ---- SVD by QR iteration (gesvd) ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6)], ids=["tall", "wide"])
def test_svd_qr_algorithm(shape, dtype):
    a = sample(dtype, shape, seed=70)
    qr = lax.linalg.SvdAlgorithm.QR
    for full in (False, True):
        check(lambda x, full=full: lax.linalg.svd(x, full_matrices=full, algorithm=qr), a,
              dtype=dtype)
    check(lambda x: lax.linalg.svd(x, compute_uv=False, algorithm=qr), a, dtype=dtype)
    (u, s, vt), _ = kiln_and_cpu(lambda x: lax.linalg.svd(x, full_matrices=False, algorithm=qr),
                                 a, dtype=dtype)
    np.testing.assert_allclose((u * s[..., None, :]) @ vt, a, atol=residual_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_svd_qr_algorithm_gradient(dtype):
    a = sample(dtype, (5, 4), seed=71)
    qr = lax.linalg.SvdAlgorithm.QR
    check(jax.grad(lambda x: lax.linalg.svd(x, compute_uv=False, algorithm=qr).sum()), a,
          dtype=dtype)


# ---- refusals: a malformed LAPACK call is a compile-time error naming the call ----

def _int_call(target, results, attrs):
    """`target` called as JAX's CPU rule would, but on a 3 x 3 int32 matrix: results given as
    (shape, dtype, is_matrix)."""
    outs = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype, _ in results)
    layouts = [(1, 0) if matrix else tuple(range(len(shape))) for shape, _, matrix in results]
    call = jax.ffi.ffi_call(target, outs, input_layouts=[(1, 0)], output_layouts=layouts)
    return lambda x: call(x, **attrs)


V = np.uint8(ord("V"))
INT_CALLS = {
    "lapack_sgeev_ffi": ([((3,), np.int32, False)] * 2 + [((3, 3), np.complex64, True)] * 2 +
                         [((), np.int32, False)], {"compute_left": V, "compute_right": V}),
    "lapack_sgees_ffi": ([((3, 3), np.int32, True)] * 2 + [((3,), np.int32, False)] * 2 +
                         [((), np.int32, False)] * 2, {"mode": V, "sort": np.uint8(ord("N"))}),
    "lapack_sgehrd_ffi": ([((3, 3), np.int32, True), ((2,), np.int32, False),
                           ((), np.int32, False)], {"low": np.int32(1), "high": np.int32(3)}),
    "lapack_ssytrd_ffi": ([((3, 3), np.int32, True), ((3,), np.int32, False),
                           ((2,), np.int32, False), ((2,), np.int32, False),
                           ((), np.int32, False)], {"uplo": np.uint8(ord("L"))}),
}


@pytest.mark.requires_kiln
@pytest.mark.parametrize("target", INT_CALLS)
def test_integer_operand_to_lapack_target_is_refused(target, kiln_device):
    x = jax.device_put(np.ones((3, 3), np.int32), kiln_device)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.block_until_ready(jax.jit(_int_call(target, *INT_CALLS[target]))(x))
    message = str(info.value)
    assert target in message and "i32" in message and "f32" in message, message
    assert "test_linalg_solve.py" in message, message  # the source location
    assert float(jax.jit(lambda a: a.sum())(jnp.ones(3))) == 3.0  # Kiln still usable


@pytest.mark.requires_kiln
def test_integer_operands_to_perturbed_solve_are_unsupported(kiln_device):
    v = jax.device_put(np.ones(4, np.int32), kiln_device)
    b = jax.device_put(np.ones((4, 1), np.int32), kiln_device)
    call = jax.ffi.ffi_call("tridiagonal_solve_perturbed_ffi",
                            jax.ShapeDtypeStruct((4, 1), np.int32),
                            input_layouts=[(0,), (0,), (0,), (1, 0)], output_layouts=(1, 0))
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.block_until_ready(jax.jit(call)(v, v, v, b))
    message = str(info.value)
    assert message.startswith("UNIMPLEMENTED"), message
    assert "tridiagonal_solve_perturbed_ffi" in message and "i32" in message, message


@pytest.mark.requires_kiln
def test_eigenvalue_sorting_in_schur_is_refused_by_name(kiln_device):
    # gees with sort = 'S' needs a select callback JAX never passes; refused rather than ignored.
    x = jax.device_put(np.eye(3, dtype=np.float32), kiln_device)
    f32 = jax.ShapeDtypeStruct((3, 3), np.float32)
    vec = jax.ShapeDtypeStruct((3,), np.float32)
    i32 = jax.ShapeDtypeStruct((), np.int32)
    call = jax.ffi.ffi_call("lapack_sgees_ffi", (f32, f32, vec, vec, i32, i32),
                            input_layouts=[(1, 0)],
                            output_layouts=[(1, 0), (1, 0), (0,), (0,), (), ()])
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.block_until_ready(jax.jit(lambda a: call(a, mode=np.uint8(ord("V")),
                                                     sort=np.uint8(ord("S"))))(x))
    assert "lapack_sgees_ffi" in str(info.value) and "sort" in str(info.value), str(info.value)
