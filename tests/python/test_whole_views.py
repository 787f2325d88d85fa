"""Elementwise steps read whole views through their source (compiler/whole_views.cc).

A view that only adds, drops or moves unit axes (a reshape, a `broadcast_in_dim` to a shape with a
new unit axis, a transpose over a unit axis) has the bytes of its operand; element-wise steps
read the operand itself and a view nothing else reads is dropped, so inside a fused run the
operand stays in its tile. JAX's `dot_product_attention` with a mask writes its scaled scores
through such a transpose and its `true` mask splat through such a broadcast; the run around the
softmax's row maximum then gets native code (checked in a trace). Results against the CPU
backend: attention with padding masks (some rows fully masked), element-wise chains through
reshapes and unit-axis transposes whose views are also returned or read by data movement (views
kept), in f32, f64 and int32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import check_both
from native_code import cpu_flags, traced_step_names

RNG = np.random.default_rng(3508)


def _attend(q, k, v, lengths):
    valid = jnp.arange(k.shape[1])[None, :] < lengths[:, None]
    return jax.nn.dot_product_attention(q, k, v, mask=valid[:, None, None, :])


@pytest.mark.parametrize("shape", [(2, 17, 3, 8), (6, 96, 4, 24), (1, 5, 1, 4)])
def test_masked_attention_matches_cpu(shape):
    b, s, h, d = shape
    q, k, v = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    lengths = RNG.integers(1, s + 1, b).astype(np.int32)
    check_both(_attend, q, k, v, lengths, kind="composite", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_chains_through_views(dtype):
    with jax.enable_x64(dtype == np.float64):
        x = (RNG.standard_normal((4, 1, 6, 5)) * 4).astype(dtype)
        y = (RNG.standard_normal((4, 6, 1, 5)) * 4).astype(dtype)

        def f(x, y):
            a = x * 2 + 1                                  # [4, 1, 6, 5]
            t = jnp.transpose(a, (0, 2, 1, 3))             # unit axis moved: a view
            r = jnp.reshape(t, (4, 6, 1, 5))               # and reshaped: a view of a view
            u = r * y - jnp.reshape(a, (4, 6, 1, 5))
            return u, t, jnp.flip(r, axis=1)               # a view returned, one read by a flip

        check_both(f, x, y, kind="arith", rtol=1e-6 if dtype == np.float32 else 1e-15)


TRACED = r"""
import numpy as np, jax, jax.numpy as jnp
rng = np.random.default_rng(0)
q, k, v = (jax.device_put(rng.normal(size=(6, 96, 4, 24)).astype(np.float32), jax.devices("kiln")[0])
           for _ in range(3))
lengths = jax.device_put(np.array([30, 96, 50, 1, 70, 96], np.int32), jax.devices("kiln")[0])
def attend(q, k, v, lengths):
    valid = jnp.arange(k.shape[1])[None, :] < lengths[:, None]
    return jax.nn.dot_product_attention(q, k, v, mask=valid[:, None, None, :])
jax.block_until_ready(jax.jit(attend)(q, k, v, lengths))
"""


@pytest.mark.requires_kiln
def test_masked_softmax_run_is_native(tmp_path):
    if not {"avx2", "bmi2"} <= cpu_flags():
        pytest.skip("native predicate members need AVX2 and BMI2")
    names = [n for n in traced_step_names(TRACED, tmp_path) if n.startswith("fused")]
    around = [n for n in names if "around a row reduction" in n]
    assert around and all("(native code)" in n for n in around), names
