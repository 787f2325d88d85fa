"""Log-sum-exp over short rows, as users write it (issue 35): `jax.nn.logsumexp` over rows of 3,
5 and 17 (an HMM's forward-step normalisers), a Gaussian mixture's log-likelihood (column
broadcasts of per-component parameters, then logsumexp over the components), a categorical
log-normaliser with a per-class bias (`logsumexp(x + b)`) and a mixture's E-step responsibilities
(`softmax` over the components), in f32 and f64.

These are fused runs around joined row reductions whose members call vector functions (exp, log)
and read broadcasts of a short pattern, tile after tile. Checks:
  * against JAX's CPU backend (tolerances below: SLEEF's and XLA:CPU's exp and log differ by an
    ulp or so, and the sums' order differs);
  * bit for bit against Kiln's interpreted tiles (KILN_FUSED_JIT=0, in a subprocess);
  * on AVX-512 machines, bit for bit against ymm code (KILN_FUSED_JIT_AVX512=0): f64 runs calling
    exp or log run in zmm registers there, calling SLEEF's 8-lane function on 8 lanes.
Row counts are odd (tails of partial vectors and of a partial last tile).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from native_code import cpu_flags, differing, results_with

ROWS = (3, 5, 17)
FLOATS = ("float32", "float64")
N = 4099  # rows (points)


def _mixture_loglik(x, logits, mu, log_sigma):
    log_w = jax.nn.log_softmax(logits)
    z = (x[:, None] - mu) / jnp.exp(log_sigma)
    log_p = -0.5 * z**2 - log_sigma - 0.5 * jnp.log(2 * jnp.pi)
    return jax.nn.logsumexp(log_w + log_p, axis=-1)


def _responsibilities(x, logits, mu, log_sigma):
    log_w = jax.nn.log_softmax(logits)
    z = (x[:, None] - mu) / jnp.exp(log_sigma)
    return jax.nn.softmax(log_w - 0.5 * z * z - log_sigma, axis=-1)


def _biased_normaliser(x, b):
    return jax.nn.logsumexp(x + b, axis=-1)


def _inputs(dt: str, k: int, seed: int):
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((N, k))).astype(dt)
    x[7] = -np.inf  # a row of -inf: its maximum is not finite (logsumexp's select), result -inf
    x[11, 1] = np.inf
    pts = rng.standard_normal(N).astype(dt)
    logits = rng.standard_normal(k).astype(dt)
    mu = rng.standard_normal(k).astype(dt)
    log_sigma = (0.1 * rng.standard_normal(k)).astype(dt)
    return x, pts, logits, mu, log_sigma


def run_all(device) -> dict[str, np.ndarray]:
    out = {}
    with jax.enable_x64(True):
        for dt in FLOATS:
            for k in ROWS:
                x, pts, logits, mu, log_sigma = [jax.device_put(a, device)
                                                  for a in _inputs(dt, k, k)]
                tag = f"{dt}-{k}"
                out[f"logsumexp-{tag}"] = jax.jit(lambda x: jax.nn.logsumexp(x, axis=-1))(x)
                out[f"mixture-{tag}"] = jax.jit(_mixture_loglik)(pts, logits, mu, log_sigma)
                out[f"responsibilities-{tag}"] = jax.jit(_responsibilities)(
                    pts, logits, mu, log_sigma)
                out[f"biased-{tag}"] = jax.jit(_biased_normaliser)(x, logits)
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.requires_kiln
def test_short_row_logsumexp_matches_the_cpu_backend():
    kiln = run_all(jax.devices("kiln")[0])
    cpu = run_all(jax.devices("cpu")[0])
    for name, k in kiln.items():
        c = cpu[name]
        assert k.dtype == c.dtype, name
        f32 = k.dtype == np.float32
        tol = 2e-5 if f32 else 1e-12
        np.testing.assert_allclose(k, c, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
        if name.startswith("logsumexp") or name.startswith("biased"):
            assert k[7] == -np.inf and k[11] == np.inf, name


@pytest.mark.requires_kiln
def test_short_row_logsumexp_matches_the_interpreter_bit_for_bit(tmp_path):
    interpreted = results_with(__file__, "KILN_FUSED_JIT", tmp_path)
    differ = differing(run_all(jax.devices("kiln")[0]), interpreted)
    assert not differ, differ


@pytest.mark.requires_kiln
@pytest.mark.skipif(not {"avx512f", "avx512dq"} <= cpu_flags(),
                    reason="zmm code needs a CPU with AVX512F and AVX512DQ")
def test_short_row_logsumexp_zmm_matches_ymm_bit_for_bit(tmp_path):
    narrow = results_with(__file__, "KILN_FUSED_JIT_AVX512", tmp_path)
    differ = differing(run_all(jax.devices("kiln")[0]), narrow)
    assert not differ, differ


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all(jax.devices("kiln")[0]))
