"""stablehlo.convolution on Kiln vs JAX's CPU backend: every form JAX emits.

Covers 0-3 spatial dims, NCHW/NHWC/odd dimension numbers, strides, SAME/VALID/explicit and negative
padding, lhs dilation (transposed convolutions), rhs dilation (atrous), feature groups (grouped and
depthwise), batch groups (which JAX emits for kernel gradients of grouped convolutions), gradients
of both operands, and f32/f64/bf16/f16/complex/integer types including mixed precision. Float
results are sums over a window, compared with the "reduction" tolerance (tolerances.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from opdata import BF16, C64, F16, F32, F64, I8, I32, rand
from test_ops import check

NHWC = ("NHWC", "HWIO", "NHWC")


def conv(**kw):
    def f(x, w):
        return lax.conv_general_dilated(x, w, **kw)
    return f


# name -> (lhs shape, rhs shape, conv_general_dilated kwargs)
CASES = {
    "nchw_same": ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="SAME")),
    "nchw_valid_strided": ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(2, 3), padding="VALID")),
    "explicit_negative_pad": ((2, 3, 9, 8), (4, 3, 3, 2),
                              dict(window_strides=(1, 1), padding=[(2, 1), (-1, 0)])),
    "lhs_rhs_dilation": ((2, 3, 9, 8), (4, 3, 3, 2),
                         dict(window_strides=(2, 1), padding=[(1, 2), (0, -1)], lhs_dilation=(2, 1),
                              rhs_dilation=(1, 2))),
    # Six output phases (lhs dilation 3 with stride 2, 2 with stride 1), padding that leaves some
    # phases' taps on padding only, atrous taps: the phase-split path (kernels/conv_plan.h).
    "lhs_dilation_phases": ((2, 5, 7, 6), (3, 3, 6, 4),
                            dict(window_strides=(2, 1), padding=[(2, 1), (1, 2)],
                                 lhs_dilation=(3, 2), rhs_dilation=(1, 2), dimension_numbers=NHWC)),
    "nhwc": ((2, 9, 8, 6), (3, 3, 6, 5),
             dict(window_strides=(1, 1), padding="SAME", dimension_numbers=NHWC)),
    "nhwc_1x1": ((2, 9, 8, 6), (1, 1, 6, 5),
                 dict(window_strides=(1, 1), padding="VALID", dimension_numbers=NHWC)),
    "nhwc_1x1_strided": ((2, 9, 8, 6), (1, 1, 6, 5),
                         dict(window_strides=(2, 2), padding="VALID", dimension_numbers=NHWC)),
    "feature_groups": ((2, 9, 8, 6), (3, 3, 3, 4),
                       dict(window_strides=(1, 1), padding="SAME", dimension_numbers=NHWC,
                            feature_group_count=2)),
    "depthwise": ((2, 9, 8, 6), (3, 3, 1, 12),
                  dict(window_strides=(1, 1), padding="SAME", dimension_numbers=NHWC,
                       feature_group_count=6)),
    "batch_groups": ((4, 7, 6, 3), (3, 2, 3, 4),
                     dict(window_strides=(1, 1), padding="VALID", dimension_numbers=NHWC,
                          batch_group_count=2)),
    "odd_dimension_numbers": ((5, 7, 2, 3), (2, 3, 4, 7),
                              dict(window_strides=(1, 2), padding="SAME",
                                   dimension_numbers=("HCWN", "WOHI", "WNHC"))),
    "conv1d": ((3, 4, 17), (5, 4, 4), dict(window_strides=(3,), padding=[(2, 1)],
                                          rhs_dilation=(2,))),
    "conv3d": ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
    "no_spatial_dims": ((3, 4), (5, 4), dict(window_strides=(), padding=[],
                                             dimension_numbers=("NC", "OI", "NC"))),
    "window_larger_than_input": ((1, 2, 3, 3), (2, 2, 5, 5),
                                 dict(window_strides=(1, 1), padding="VALID")),
    "empty_batch": ((0, 3, 5, 5), (2, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    "big_tiles": ((2, 40, 40, 16), (3, 3, 16, 24),
                  dict(window_strides=(1, 1), padding="SAME", dimension_numbers=NHWC)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_f32(name):
    lshape, rshape, kw = CASES[name]
    check(conv(**kw), rand(F32, lshape, "unit"), rand(F32, rshape, "unit", seed=1),
          kind="reduction")


@pytest.mark.parametrize("name", ["nchw_same", "lhs_rhs_dilation", "feature_groups", "batch_groups",
                                  "conv1d", "conv3d", "odd_dimension_numbers",
                                  "lhs_dilation_phases"])
def test_conv_gradients(name):
    lshape, rshape, kw = CASES[name]
    f = conv(**kw)

    def loss(x, w):
        return jnp.sum(jnp.tanh(f(x, w)))

    check(jax.grad(loss, argnums=(0, 1)), rand(F32, lshape, "unit"),
          rand(F32, rshape, "unit", seed=1), kind="composite", atol=1e-5)


def test_padding_and_dilation_holes_meet_no_weight():
    # Padding and the holes of an lhs-dilated input are not elements: XLA:CPU multiplies no weight
    # by them, so an infinite or NaN weight spoils only the sums where it meets an input element
    # (0 * inf would be NaN everywhere it reaches).
    f = conv(window_strides=(1,), padding=[(1, 0)], dimension_numbers=("NWC", "WIO", "NWC"))
    check(f, np.ones((1, 2, 1), F32), np.array([np.inf, 1.0], F32).reshape(2, 1, 1),
          kind="reduction")
    check(f, np.ones((1, 2, 1), C64), np.array([np.inf, 1.0], C64).reshape(2, 1, 1),
          kind="reduction")
    x = np.arange(1, 5, dtype=F32).reshape(1, 4, 1)
    w = np.array([1.0, np.inf], F32).reshape(2, 1, 1)
    f = conv(window_strides=(1,), padding=[(0, 0)], lhs_dilation=(2,),
             dimension_numbers=("NWC", "WIO", "NWC"))
    check(f, x, w, kind="reduction")
    x2 = np.arange(1, 13, dtype=F32).reshape(1, 3, 4, 1)
    w2 = np.array([[1.0, np.inf, 2.0], [np.nan, 3.0, -np.inf]], F32).reshape(2, 3, 1, 1)
    for pad in ([(0, 0), (0, 0)], [(1, 2), (2, 0)]):
        check(conv(window_strides=(1, 1), padding=pad, lhs_dilation=(2, 3),
                   dimension_numbers=NHWC), x2, w2, kind="reduction")


def test_conv_transpose_and_its_gradient():
    x, w = rand(F32, (2, 5, 6, 4), "unit"), rand(F32, (3, 3, 4, 3), "unit", seed=1)

    def f(x, w):
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=NHWC)

    check(f, x, w, kind="reduction")
    check(jax.grad(lambda x, w: jnp.sum(f(x, w) ** 2), argnums=(0, 1)), x, w, kind="composite",
          atol=1e-4)


@pytest.mark.parametrize("dtype", [F64, BF16, F16, C64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["nchw_same", "feature_groups", "lhs_rhs_dilation"])
def test_conv_float_types(name, dtype):
    lshape, rshape, kw = CASES[name]
    x, w = rand(dtype, lshape, "unit"), rand(dtype, rshape, "unit", seed=1)
    check(conv(**kw), x, w, kind="reduction")


@pytest.mark.parametrize("dtype", [I32, I8], ids=lambda d: np.dtype(d).name)
def test_conv_integer(dtype):
    lshape, rshape, kw = CASES["nchw_same"]
    x, w = rand(dtype, lshape, "small"), rand(dtype, rshape, "small", seed=1)
    check(conv(**kw), x, w)


@pytest.mark.parametrize("src,dst", [(I8, I32), (BF16, F32), (F16, F32)],
                         ids=lambda d: np.dtype(d).name)
def test_conv_preferred_element_type(src, dst):
    lshape, rshape, kw = CASES["nhwc"]
    x, w = rand(src, lshape, "small"), rand(src, rshape, "small", seed=1)
    check(conv(preferred_element_type=dst, **kw), x, w, kind="reduction")


def test_flax_style_cnn_step():
    """A small CNN's loss and gradients (conv, relu, pooling via reduce_window, dense)."""
    x = rand(F32, (4, 16, 16, 3), "unit")
    params = {
        "c1": rand(F32, (3, 3, 3, 8), seed=1) * 0.3,
        "c2": rand(F32, (3, 3, 8, 16), seed=2) * 0.2,
        "d": rand(F32, (16 * 4 * 4, 10), seed=3) * 0.05,
    }
    labels = np.arange(4) % 10

    def loss(p, x):
        h = jax.nn.relu(lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME",
                                                 dimension_numbers=NHWC))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, p["c2"], (2, 2), "SAME",
                                                 dimension_numbers=NHWC))
        logits = h.reshape(h.shape[0], -1) @ p["d"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(4), labels])

    check(jax.value_and_grad(loss), params, x, kind="composite", atol=1e-5)
