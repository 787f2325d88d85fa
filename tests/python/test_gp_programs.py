"""Gaussian-process and triangular-solve programs on Kiln vs JAX's CPU backend: the negative log
marginal likelihood of a GP and its gradient in the hyperparameters (`cho_factor` / `cho_solve`,
whose gradient solves with as many right-hand sides as observations), in f64 and f32, 1-D and 2-D
inputs, sizes that are not multiples of 8; and `triangular_solve` with many right-hand sides on
either side, which Kiln's trsm target splits over its threads (kernels/lapack_solve.cc).

Tolerances: both backends run OpenBLAS's potrf and trsm, but not the same build nor the same
threading (XLA:CPU's potrf may block the factorization differently), and Kiln's GEMM splits
products over its own threads, so results agree to rounding, amplified by the kernel matrix's
conditioning: f64 rtol 1e-8, f32 rtol 2e-3 (the f32 programs add noise 0.1 to keep the condition
number near 1e3)."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.linalg import cho_factor, cho_solve

from conftest import assert_array_close, run_both


def gp_nll(log_params, x, y):
    """GP regression's negative log marginal likelihood under an RBF kernel with one lengthscale
    per input dimension (x: [n, d])."""
    lengthscales = jnp.exp(log_params[:-2])
    variance, noise = jnp.exp(log_params[-2]), jnp.exp(log_params[-1])
    z = x / lengthscales
    d2 = jnp.sum((z[:, None, :] - z[None, :, :]) ** 2, axis=-1)
    k = variance * jnp.exp(-0.5 * d2) + noise * jnp.eye(x.shape[0], dtype=x.dtype)
    c, lower = cho_factor(k, lower=True)
    alpha = cho_solve((c, lower), y)
    return (0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(c)))
            + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi))


def gp_inputs(n, d, dtype, noise, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, (n, d))
    y = np.sin(2 * x).sum(axis=1) + 0.1 * rng.standard_normal(n)
    log_params = np.log(np.array([0.8] * d + [1.1, noise]))
    return log_params.astype(dtype), x.astype(dtype), y.astype(dtype)


def check(kiln, cpu, rtol):
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert_array_close(k, c, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n,d", [(300, 1), (130, 2)])
def test_gp_marginal_likelihood_grad_f64(n, d):
    args = gp_inputs(n, d, np.float64, noise=0.01, seed=n)
    with jax.enable_x64(True):
        kiln, cpu = run_both(jax.value_and_grad(gp_nll), *args)
    check(kiln, cpu, 1e-8)


@pytest.mark.parametrize("n,d", [(200, 1), (96, 3)])
def test_gp_marginal_likelihood_grad_f32(n, d):
    args = gp_inputs(n, d, np.float32, noise=0.1, seed=n)
    kiln, cpu = run_both(jax.value_and_grad(gp_nll), *args)
    check(kiln, cpu, 2e-3)


def gp_predict(log_params, x, y, x_new):
    """Posterior mean and variance at x_new: a solve with len(x_new) right-hand sides."""
    ls, variance, noise = jnp.exp(log_params)

    def kern(a, b):
        return variance * jnp.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / ls**2)

    k = kern(x, x) + noise * jnp.eye(x.shape[0], dtype=x.dtype)
    c = jnp.linalg.cholesky(k)
    ks = kern(x, x_new)
    v = lax.linalg.triangular_solve(c, ks, left_side=True, lower=True)
    alpha = cho_solve((c, True), y)
    return ks.T @ alpha, variance - jnp.sum(v * v, axis=0)


def test_gp_posterior_many_points_f64():
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(-3, 3, 257))
    y = np.cos(x) + 0.05 * rng.standard_normal(257)
    x_new = np.linspace(-3.5, 3.5, 333)
    with jax.enable_x64(True):
        kiln, cpu = run_both(gp_predict, np.log(np.array([0.6, 1.0, 0.01])), x, y, x_new)
    check(kiln, cpu, 1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_triangular_solve_many_right_hand_sides(dtype, left_side, lower, transpose_a,
                                                unit_diagonal):
    rng = np.random.default_rng(11)
    order, other = 150, 203
    # Off-diagonal entries of size 1 / order: well conditioned with its diagonal or a unit one.
    a = rng.standard_normal((order, order)) / order + 2 * np.eye(order)
    b = rng.standard_normal((order, other) if left_side else (other, order))

    def solve(a, b):
        return lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                           transpose_a=transpose_a, unit_diagonal=unit_diagonal)

    with jax.enable_x64(dtype == np.float64):
        kiln, cpu = run_both(solve, a.astype(dtype), b.astype(dtype))
    check(kiln, cpu, 1e-12 if dtype == np.float64 else 1e-5)
