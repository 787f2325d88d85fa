"""Programs users write over short rows (2 to 31 elements), against the CPU backend (issue 35).

Short rows reduce sixteen at a time in vector lanes (kernels/reduce_rows8.h: ReduceShortRowsSimd),
and inside fused runs the broadcasts that carry a row's result, or a short vector of parameters,
across the rows are written by GatherFlat's short-row paths (kernels/strided.h: a periodic
pattern for column broadcasts, splats for row broadcasts). Covered here: a classifier's
cross-entropy over 5, 10 and 17 classes with its gradient, a Gaussian mixture's log-likelihood
over 17 components with its gradient (bench's `u_mixture_logsumexp_17_f32`), logsumexp over rows
of 5 in f64, products and reductions over outer axes with a short last axis, broadcasts of short
rows mixed with odd row counts. f32 and f64 within the "composite" / "reduction" tolerances of
tests/python/tolerances.py (gradients of means over 1,001 rows: 1e-4), maxima exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import check_both

RNG = np.random.default_rng(3507)
DTYPES = {"f32": np.float32, "f64": np.float64}


def _normal(shape, dtype, scale=1.0):
    return (scale * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("classes", [5, 10, 17])
def test_cross_entropy_and_gradient(classes, dtype):
    with jax.enable_x64(dtype == "f64"):
        logits = _normal((1001, classes), DTYPES[dtype], 3.0)
        labels = RNG.integers(0, classes, size=1001).astype(np.int32)

        def loss(z, y):
            logp = jax.nn.log_softmax(z, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))

        check_both(jax.value_and_grad(loss), logits, labels, kind="composite", rtol=1e-4,
                   atol=1e-6)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_mixture_loglikelihood_and_gradient(dtype):
    def loglik(x, logits, mu, log_sigma):
        log_w = jax.nn.log_softmax(logits)
        z = (x[:, None] - mu) / jnp.exp(log_sigma)
        log_p = -0.5 * z**2 - log_sigma - 0.5 * jnp.log(2 * jnp.pi)
        return jax.nn.logsumexp(log_w + log_p, axis=-1)

    with jax.enable_x64(dtype == "f64"):
        d = DTYPES[dtype]
        args = (_normal(4099, d), _normal(17, d), _normal(17, d), _normal(17, d, 0.1))
        check_both(loglik, *args, kind="composite")
        check_both(jax.grad(lambda *a: loglik(*a).sum(), argnums=(1, 2, 3)), *args,
                   kind="composite", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [2, 5, 9, 31])
def test_logsumexp_f64_short_rows_with_specials(n):
    with jax.enable_x64(True):
        x = _normal((2049, n), np.float64, 10.0)
        x[::11] = -np.inf  # rows of all -inf: -inf
        x[3, 0] = np.inf
        x[5, n - 1] = np.nan
        check_both(lambda v: jax.nn.logsumexp(v, axis=-1), x, kind="composite")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", [(3, 257, 7), (5, 33, 17), (2, 9, 31)])
def test_short_rows_under_reduced_outer_axes(shape, dtype):
    with jax.enable_x64(dtype == "f64"):
        x = _normal(shape, DTYPES[dtype])
        x.reshape(-1)[::97] = np.inf
        check_both(lambda v: jnp.max(v, axis=(0, 2)), x, kind="reduction", exact=True)
        x = _normal(shape, DTYPES[dtype])
        check_both(lambda v: (jnp.sum(v, axis=(0, 2)), jnp.prod(1 + 0.1 * v, axis=(0, 2))), x,
                   kind="reduction")


@pytest.mark.parametrize("rows", [1, 7, 61, 1027])
@pytest.mark.parametrize("n", [3, 8, 13, 64, 65])
def test_short_row_broadcasts_in_fused_runs(rows, n):
    """A row's maximum broadcast back across the row, a parameter row broadcast down the rows and
    a per-row scale, in one program (tiles that start mid-pattern, rows of up to 64 and past)."""
    x = _normal((rows, n), np.float32)
    w = _normal(n, np.float32)
    s = _normal(rows, np.float32)

    def f(x, w, s):
        y = x * w + s[:, None]
        return jnp.exp(y - jnp.max(y, axis=-1, keepdims=True)) * w - s[:, None]

    check_both(f, x, w, s, kind="composite")
