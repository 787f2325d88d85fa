"""A run after a joined row reduction (compiler/fusion.cc): when an elementwise run's row reduction
joins it, a second run that reads the reduction's result only through broadcasts along its rows
(and the first run's values, and inputs from before) joins the same tile loop and runs on each
tile after its rows are reduced: softmax's division of each exponential by its row's sum never
stores the exponentials. And a row reduction of an input just before a run that reads its result
through row broadcasts joins ahead of it (softmax's row maximum).

Each program runs three ways: in one jit on Kiln (the joined loop), split at the reduction into two
jits on Kiln (the first run with its reduction, then the division: nothing joins across a jit
boundary), and on JAX's CPU backend. The first two must agree bit for bit: joining changes no
result. Row lengths that divide the 1,024-element tile and that do not, a last partial tile, f32
and f64 (natively generated code for both), and programs whose second part must not join (the
result read other than by a row broadcast).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import get_cpu_device, get_kiln_device
from native_code import canonical_bytes, traced_step_names
from opdata import F32, F64, x64_if

# Rows of 300 (three per 900-element tile), 128 (eight per tile), 1000 and 1024 (one row per tile:
# the row broadcasts are read as one value per tile), 2048 (longer than a tile: nothing joins).
SHAPES = [(48, 300), (1000, 128), (37, 1000), (64, 1024), (3, 5, 64), (129, 8), (6, 2048)]


def _exp_rows(x):
    return jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))


# name -> (whole program, first part (ends with the row reduction), second part)
CASES = {
    "softmax": (
        lambda x, y: jax.nn.softmax(x, axis=-1),
        lambda x, y: (lambda e: (e, e.sum(axis=-1)))(_exp_rows(x)),
        lambda e, s, x, y: e / s[..., None],
    ),
    "softmax_times_y": (
        lambda x, y: (lambda e: e / e.sum(axis=-1, keepdims=True) * y)(_exp_rows(x)),
        lambda x, y: (lambda e: (e, e.sum(axis=-1)))(_exp_rows(x)),
        lambda e, s, x, y: e / s[..., None] * y,
    ),
    "exponentials_returned": (
        lambda x, y: (lambda e: (e, e / e.sum(axis=-1, keepdims=True)))(_exp_rows(x)),
        lambda x, y: (lambda e: (e, e.sum(axis=-1)))(_exp_rows(x)),
        lambda e, s, x, y: (e, e / s[..., None]),
    ),
    "sum_of_squares_then_scale": (
        lambda x, y: (lambda v: v * jnp.sum(v * v, axis=-1, keepdims=True) - x)(x * y + 0.5),
        lambda x, y: (lambda v: (v, jnp.sum(v * v, axis=-1)))(x * y + 0.5),
        lambda v, s, x, y: v * s[..., None] - x,
    ),
    # A row reduction of an input joins ahead of the run that reads it through a row broadcast
    # (compiler/fusion.cc: FusedPlan::pre): split at that reduction, nothing joins.
    "max_then_exp": (
        lambda x, y: jnp.exp(x - jnp.max(x, axis=-1, keepdims=True)) * y,
        lambda x, y: (x, jnp.max(x, axis=-1)),
        lambda v, s, x, y: jnp.exp(v - s[..., None]) * y,
    ),
    # JAX's softmax takes the maximum with initial=-inf, maximum(m, -inf), a view of m (the
    # program builder's identity rule): its reduction then joins ahead, and the row sum after.
    "softmax_split_at_the_max": (
        lambda x, y: jax.nn.softmax(x, axis=-1),
        lambda x, y: (x, jnp.max(x, axis=-1, initial=-jnp.inf)),
        lambda v, s, x, y: (lambda e: e / e.sum(axis=-1, keepdims=True))(jnp.exp(v - s[..., None])),
    ),
    # The leading reduction's result also returned, and a minimum with initial=+inf.
    "min_returned": (
        lambda x, y: (lambda m: (m, (x - m) * y))(jnp.min(x, axis=-1, keepdims=True,
                                                          initial=jnp.inf)),
        lambda x, y: (x, jnp.min(x, axis=-1, initial=jnp.inf)),
        lambda v, s, x, y: (s[..., None], (v - s[..., None]) * y),
    ),
    # The result is scaled before its broadcast: the second run does not join (checked by the
    # trace test below), and the program is still right.
    "mean_centered": (
        lambda x, y: (lambda v: v - jnp.sum(v, axis=-1, keepdims=True) / v.shape[-1])(x * y + 1),
        lambda x, y: (lambda v: (v, jnp.sum(v, axis=-1)))(x * y + 1),
        lambda v, s, x, y: v - (s / v.shape[-1])[..., None],
    ),
}


def _inputs(dtype, shape):
    rng = np.random.default_rng(sum(shape) + len(str(dtype)))
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    # Rows whose max is inf (inf - inf is NaN there, the rest of the row exp(-inf) = 0) and rows
    # with -inf. No NaN inputs: XLA:CPU's row maximum of a row holding NaN and inf depends on their
    # order (its vector max returns the second operand when one is NaN).
    flat[::97] = np.inf
    flat[5::131] = -np.inf
    return x, y


def _leaves(tree):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(tree)]


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_joined_equals_split_bit_for_bit_and_matches_cpu(case, shape, dtype):
    whole, first, second = CASES[case]
    kiln, cpu = get_kiln_device(), get_cpu_device()
    with x64_if(dtype):
        x, y = _inputs(dtype, shape)
        xk, yk = jax.device_put(x, kiln), jax.device_put(y, kiln)
        joined = _leaves(jax.jit(whole)(xk, yk))
        v, s = jax.jit(first)(xk, yk)
        split = _leaves(jax.jit(second)(v, s, xk, yk))
        want = _leaves(jax.jit(whole)(jax.device_put(x, cpu), jax.device_put(y, cpu)))
    assert len(joined) == len(split) == len(want)
    tol = 2e-6 if dtype == F32 else 1e-13
    for j, sp, w in zip(joined, split, want):
        assert j.dtype == sp.dtype == w.dtype and j.shape == sp.shape == w.shape
        assert canonical_bytes(j) == canonical_bytes(sp), (case, shape)
        np.testing.assert_allclose(j, w, rtol=tol, atol=tol, equal_nan=True)


TRACED = r"""
import numpy as np, jax, jax.numpy as jnp
x = jax.device_put(np.random.default_rng(0).normal(size=(64, 300)).astype(np.float32),
                   jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(lambda x: jax.nn.softmax(x, axis=-1) * x)(x))
jax.block_until_ready(jax.jit(
    lambda x: (lambda v: v - jnp.sum(v, axis=-1, keepdims=True) / 300)(x * 2 + 1))(x))
jax.block_until_ready(jax.jit(lambda x: x - jnp.max(x, axis=-1, keepdims=True))(x))
"""


@pytest.mark.requires_kiln
def test_which_runs_join(tmp_path):
    all_names = traced_step_names(TRACED, tmp_path)
    names = [n for n in all_names if n.startswith("fused")]
    # softmax(x) * x: one loop with its row maximum ahead and its row sum inside, in native code;
    # no reduction of its own.
    assert "with two row reductions (native code)" in names[0], names
    # Centering by the mean: the sum is divided before its broadcast, so the subtraction is a run
    # of its own after the joined reduction.
    assert "and a row reduction" in names[1] and "around" not in names[1], names
    assert "around" not in names[2] and "reduction" not in names[2], names
    # x - max: the broadcast and the subtraction, with the row maximum ahead.
    assert "2 elementwise ops after a row reduction (native code)" in names[3], names
    assert len(names) == 4, names
    assert not [n for n in all_names if n.startswith("stablehlo.reduce")], all_names
