"""The acceptance MLP: a two-layer perceptron with softmax cross-entropy, differential vs CPU.

f32, batch 64, 784 -> 128 (relu) -> 10, fixed-seed synthetic data. The loss is written twice:
with integer labels through take_along_axis (gather/scatter in the program) and with one-hot
labels (a multiply-and-reduce instead).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import get_cpu_device, get_kiln_device, run_both, assert_close

BATCH, D_IN, D_HIDDEN, D_OUT = 64, 784, 128, 10
STEPS, LR = 20, 0.1

# rtol 1e-5 for the loss and every gradient entry (the acceptance criterion). atol 1e-6 only
# matters for gradient entries near zero: each entry is a sum of 64 (batch) or 128 products whose
# terms are up to ~1e-2, so with a different but valid summation order the absolute difference is
# bounded by ~n * eps_f32 * sum|terms| ~ 64 * 6e-8 * 1e-2 * 64 ~ 2.5e-7; an entry that cancels to
# ~0 has no meaningful relative error. 1e-6 is still 1e4 times smaller than the typical entry.
RTOL, ATOL = 1e-5, 1e-6


def make_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w1": (rng.standard_normal((D_IN, D_HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
        "b1": (0.1 * rng.standard_normal(D_HIDDEN)).astype(np.float32),
        "w2": (rng.standard_normal((D_HIDDEN, D_OUT)) / np.sqrt(D_HIDDEN)).astype(np.float32),
        "b2": (0.1 * rng.standard_normal(D_OUT)).astype(np.float32),
    }
    x = rng.random((BATCH, D_IN), dtype=np.float32)
    y = rng.integers(0, D_OUT, size=BATCH).astype(np.int32)
    return params, x, y


def forward(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_take_along_axis(params, x, y):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def loss_one_hot(params, x, y):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.sum(jax.nn.one_hot(y, D_OUT, dtype=logp.dtype) * logp, axis=1))


LOSSES = {"take_along_axis": loss_take_along_axis, "one_hot": loss_one_hot}


def test_data_is_well_conditioned():
    """Precondition for the tolerances: no relu pre-activation sits so close to 0 that rounding
    differences between backends could flip it (which would legitimately change a gradient)."""
    params, x, _ = make_data()
    pre = x.astype(np.float64) @ params["w1"] + params["b1"]
    assert np.min(np.abs(pre)) > 1e-4, np.min(np.abs(pre))


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_value_and_grad_matches_cpu(loss_name):
    loss = LOSSES[loss_name]
    params, x, y = make_data()
    (k_loss, k_grads), (c_loss, c_grads) = run_both(jax.value_and_grad(loss), params, x, y)
    assert set(k_grads) == {"w1", "b1", "w2", "b2"}
    assert_close(k_loss, c_loss, RTOL, ATOL)
    assert_close(k_grads, c_grads, RTOL, ATOL)
    # The gradients are not trivially zero (the test would otherwise be weak).
    for name, g in c_grads.items():
        assert np.count_nonzero(g) > g.size // 4, name
    assert 1.0 < float(c_loss) < 5.0


def _sgd_curve(loss, device, params, x, y):
    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), value

    params, x, y = jax.device_put((params, x, y), device)
    losses = []
    for _ in range(STEPS):
        params, value = step(params, x, y)  # outputs are fed back as inputs, staying on device
        losses.append(value)
    for leaf in jax.tree_util.tree_leaves((params, losses)):
        assert leaf.devices() == {device}
    return np.array([float(v) for v in losses], np.float32), jax.device_get(params)


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_sgd_loss_curve_matches_cpu(loss_name):
    loss = LOSSES[loss_name]
    params, x, y = make_data()
    k_curve, k_params = _sgd_curve(loss, get_kiln_device(), params, x, y)
    c_curve, c_params = _sgd_curve(loss, get_cpu_device(), params, x, y)
    assert c_curve[-1] < 0.9 * c_curve[0], f"training does not make progress on CPU: {c_curve}"
    np.testing.assert_allclose(k_curve, c_curve, rtol=RTOL, atol=0,
                               err_msg="SGD loss curve (20 steps) differs from CPU")
    # After 20 steps the parameters agree too (errors compound a little per step: 1e-4).
    assert_close(k_params, c_params, 1e-4, 1e-5)
