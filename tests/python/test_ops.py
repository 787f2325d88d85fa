"""Differential op tests: each jitted program runs on Kiln and on JAX's CPU backend with the same
inputs, and the results must agree (dtype, shape, values) within tolerances.py.

Integers and bools are compared exactly, data movement bit-exactly, floats per the `kind` of
computation (arith / transcendental / reduction / composite).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import SELFCHECK, check_both
from opdata import (BF16, BOOL, C64, F16, F32, F64, I8, I16, I32, I64, SPECIAL_F32, U8, U16, U32,
                    U64, rand, x64_if)


def _id(v):
    if isinstance(v, np.dtype):
        return v.name
    return str(v)


def check(f, *args, dtypes=(), **kw):
    """check_both under x64 mode when any input/output dtype needs it."""
    dts = [np.asarray(a).dtype for a in jax.tree_util.tree_leaves(args)
           if not isinstance(a, jax.Array) or not jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key)]
    with x64_if(*dts, *dtypes):
        return check_both(f, *args, **kw)


# ================================================================================================
# Elementwise unary
# ================================================================================================

FLOATS = (F32, F64)
FLOATS_I = (F32, F64, I32)

# name -> (fn, dtypes, input domain, tolerance kind)
UNARY = {
    "neg": (lax.neg, FLOATS_I, "any", "arith"),
    "abs": (jnp.abs, FLOATS_I, "any", "arith"),
    "sign": (jnp.sign, FLOATS_I, "any", "arith"),
    "square": (jnp.square, FLOATS_I, "any", "arith"),
    "integer_pow3": (lambda x: x ** 3, FLOATS_I, "small", "arith"),
    "floor": (jnp.floor, FLOATS, "any", "arith"),
    "ceil": (jnp.ceil, FLOATS, "any", "arith"),
    "round_half_even": (jnp.round, FLOATS, "small", "arith"),
    "round_away": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), FLOATS, "small",
                   "arith"),
    "trunc": (jnp.trunc, FLOATS, "any", "arith"),
    "reciprocal": (jnp.reciprocal, FLOATS, "nonzero", "arith"),
    "sqrt": (jnp.sqrt, FLOATS, "pos", "arith"),
    "rsqrt": (lax.rsqrt, FLOATS, "pos", "transcendental"),
    "cbrt": (jnp.cbrt, FLOATS, "any", "transcendental"),
    "exp": (jnp.exp, FLOATS, "any", "transcendental"),
    "exp2": (jnp.exp2, FLOATS, "any", "transcendental"),
    "expm1": (jnp.expm1, FLOATS, "any", "transcendental"),
    "log": (jnp.log, FLOATS, "pos", "transcendental"),
    "log1p": (jnp.log1p, FLOATS, "unit", "transcendental"),
    "log2": (jnp.log2, FLOATS, "pos", "transcendental"),
    "sin": (jnp.sin, FLOATS, "any", "transcendental"),
    "cos": (jnp.cos, FLOATS, "any", "transcendental"),
    "tan": (jnp.tan, FLOATS, "unit", "transcendental"),
    "tanh": (jnp.tanh, FLOATS, "any", "transcendental"),
    "logistic": (jax.nn.sigmoid, FLOATS, "any", "transcendental"),
    "arctan": (jnp.arctan, FLOATS, "any", "transcendental"),
    "arcsin": (jnp.arcsin, FLOATS, "unit", "transcendental"),   # stablehlo.composite "chlo.asin"
    "arccos": (jnp.arccos, FLOATS, "unit", "transcendental"),   # composite "chlo.acos"
    "sinh": (jnp.sinh, FLOATS, "any", "transcendental"),        # composite "chlo.sinh"
    "cosh": (jnp.cosh, FLOATS, "any", "transcendental"),        # composite "chlo.cosh"
    "arcsinh": (jnp.arcsinh, FLOATS, "any", "transcendental"),  # composite "chlo.asinh"
    "arccosh": (jnp.arccosh, FLOATS, "ge1", "transcendental"),  # composite "chlo.acosh"
    "arctanh": (jnp.arctanh, FLOATS, "unit", "transcendental"),  # composite "chlo.atanh"
    "erf": (jax.scipy.special.erf, FLOATS, "any", "transcendental"),  # composite "chlo.erf"
    "erfc": (jax.scipy.special.erfc, FLOATS, "unit", "transcendental"),
    "erf_inv": (jax.scipy.special.erfinv, FLOATS, "unit", "transcendental"),
    "lgamma": (jax.scipy.special.gammaln, FLOATS, "pos", "composite"),
    "digamma": (jax.scipy.special.digamma, FLOATS, "pos", "composite"),
    "is_finite": (jnp.isfinite, FLOATS, "any", "arith"),
    "not": (jnp.invert, (I32, BOOL, U8), "any", "arith"),
    "popcount": (lax.population_count, (I32, U32, I8), "any", "arith"),
    "clz": (lax.clz, (I32, U32), "any", "arith"),
}

# arcsin, sinh, erf, top_k, ... reach Kiln as stablehlo.composite ops (jaxlib keeps these CHLO ops
# as named composites with a decomposition function); Kiln runs the decomposition.
UNARY_CASES = [pytest.param(n, d, id=f"{n}-{d.name}")
               for n, (_, dts, _, _) in UNARY.items() for d in dts]


@pytest.mark.parametrize("name,dtype", UNARY_CASES)
def test_unary(name, dtype):
    fn, _, domain, kind = UNARY[name]
    check(fn, rand(dtype, (4, 5), domain), kind=kind)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=_id)
@pytest.mark.parametrize("name", ["neg", "abs", "floor", "sqrt", "exp", "tanh"])
def test_unary_half(name, dtype):
    fn, _, domain, kind = UNARY[name]
    check(fn, rand(dtype, (16,), domain), kind=kind)


SPECIAL_UNARY = {
    "neg": lax.neg, "abs": jnp.abs, "sign": jnp.sign, "floor": jnp.floor, "ceil": jnp.ceil,
    "round": jnp.round, "sqrt": jnp.sqrt, "exp": jnp.exp, "log": jnp.log, "tanh": jnp.tanh,
    "is_finite": jnp.isfinite, "isnan": jnp.isnan, "logistic": jax.nn.sigmoid,
    "log1p": jnp.log1p, "expm1": jnp.expm1, "square": jnp.square,
}


@pytest.mark.parametrize("name", sorted(SPECIAL_UNARY))
def test_unary_special_values(name):
    """0, -0, +-inf, NaN, huge and tiny (normal) values, negative inputs to sqrt/log."""
    kind = "transcendental" if name in ("exp", "log", "tanh", "logistic", "log1p", "expm1") else "arith"
    check(SPECIAL_UNARY[name], SPECIAL_F32, kind=kind)


def test_negative_zero_sign_preserved():
    x = np.array([0.0, -0.0, -1.5, 2.0], np.float32)
    check(lambda x: (-x, jnp.abs(x), x * 1.0, jnp.floor(x), jnp.sqrt(x)), x, exact=True)


# ================================================================================================
# Elementwise binary
# ================================================================================================

BINARY = {
    "add": (jnp.add, FLOATS_I + (U8, I8, U32), ("any", "any"), "arith"),
    "sub": (jnp.subtract, FLOATS_I + (U32,), ("any", "any"), "arith"),
    "mul": (jnp.multiply, FLOATS_I + (U32, I8), ("any", "any"), "arith"),
    "div": (lax.div, FLOATS_I + (U32,), ("any", "nonzero"), "arith"),
    "rem": (lax.rem, FLOATS_I, ("any", "nonzero"), "arith"),
    "floor_divide": (jnp.floor_divide, FLOATS_I, ("any", "nonzero"), "arith"),
    "remainder": (jnp.remainder, FLOATS_I, ("any", "nonzero"), "arith"),
    "max": (jnp.maximum, FLOATS_I + (U8,), ("any", "any"), "arith"),
    "min": (jnp.minimum, FLOATS_I + (U8,), ("any", "any"), "arith"),
    "pow": (jnp.power, FLOATS, ("pos", "any"), "transcendental"),
    "pow_int": (jnp.power, (I32,), ("small", "shift"), "arith"),
    "atan2": (jnp.arctan2, FLOATS, ("any", "any"), "transcendental"),
    "nextafter": (jnp.nextafter, (F32,), ("any", "any"), "arith"),
    "and": (jnp.bitwise_and, (I32, U32, BOOL), ("any", "any"), "arith"),
    "or": (jnp.bitwise_or, (I32, U32, BOOL), ("any", "any"), "arith"),
    "xor": (jnp.bitwise_xor, (I32, U32, BOOL), ("any", "any"), "arith"),
    "shift_left": (lax.shift_left, (I32, U32, I8), ("any", "shift"), "arith"),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, (I32, I8), ("any", "shift"), "arith"),
    "shift_right_logical": (lax.shift_right_logical, (I32, U32), ("any", "shift"), "arith"),
}

BINARY_CASES = [(n, d) for n, (_, dts, _, _) in BINARY.items() for d in dts]


@pytest.mark.parametrize("name,dtype", BINARY_CASES, ids=[f"{n}-{d.name}" for n, d in BINARY_CASES])
def test_binary(name, dtype):
    fn, _, (da, db), kind = BINARY[name]
    a = rand(dtype, (4, 5), da, seed=1)
    b = rand(dtype, (4, 5), db, seed=2)
    if name == "pow_int":
        b = rand(dtype, (4, 5), "small", seed=3) % 5   # non-negative exponents
    check(fn, a, b, kind=kind)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=_id)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max"])
def test_binary_half(name, dtype):
    fn, _, (da, db), kind = BINARY[name]
    check(fn, rand(dtype, (16,), da, seed=1), rand(dtype, (16,), db, seed=2), kind=kind)


def test_integer_overflow_wraps():
    big = np.array([2**31 - 1, -2**31, 2**30, -7, 123456789], np.int32)
    check(lambda a: (a + a, a * 3, a - big[::-1], -a, jnp.abs(a)), big)


def test_unsigned_wraps():
    a = np.array([0, 1, 2**32 - 1, 2**31, 12345], np.uint32)
    check(lambda a: (a - 1, a + a, a * 7, a >> 3), a)


def test_shift_out_of_range_amounts():
    # StableHLO: shift amounts >= bit width give 0 (left, logical) or the sign fill (arithmetic).
    x = np.array([1, -1, 0x12345678, -0x12345678, 7, -8], np.int32)
    s = np.array([0, 31, 32, 33, 100, 2**31 - 1], np.int32)
    check(lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s),
                        lax.shift_right_arithmetic(x, s)), x, s)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "pow", "atan2",
                                  "rem", "nextafter"])
def test_binary_special_values(name):
    fn = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide,
          "max": jnp.maximum, "min": jnp.minimum, "pow": jnp.power, "atan2": jnp.arctan2,
          "rem": lax.rem, "nextafter": jnp.nextafter}[name]
    a, b = np.meshgrid(SPECIAL_F32, SPECIAL_F32, indexing="ij")
    kind = "transcendental" if name in ("pow", "atan2") else "arith"
    check(fn, a, b, kind=kind)


def test_binary_broadcasting_and_scalars():
    a = rand(F32, (3, 1, 5), seed=1)
    b = rand(F32, (4, 1), seed=2)
    check(lambda a, b: (a + b, a * 2.5, 3.0 - b, jnp.maximum(a, 0.0)), a, b)


def test_mixed_python_scalar_weak_types():
    check(lambda x, i: (x + 1, x * 0.5, i + 1, i * 2.0, x / i), rand(F32, 6), rand(I32, 6, "nonzero"))


# ================================================================================================
# Comparisons, select, clip
# ================================================================================================

COMPARE = {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
           "gt": jnp.greater, "ge": jnp.greater_equal}
COMPARE_CASES = [(n, d) for n in COMPARE for d in (F32, F64, I32, U32, BOOL)]


@pytest.mark.parametrize("name,dtype", COMPARE_CASES, ids=[f"{n}-{d.name}" for n, d in COMPARE_CASES])
def test_compare(name, dtype):
    a = rand(dtype, (5, 6), "small" if dtype != BOOL else "any", seed=1)
    b = rand(dtype, (5, 6), "small" if dtype != BOOL else "any", seed=2)
    b[0] = a[0]  # guarantee some equal elements
    check(COMPARE[name], a, b)


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_compare_special_values(name):
    a, b = np.meshgrid(SPECIAL_F32, SPECIAL_F32, indexing="ij")
    check(COMPARE[name], a, b)


@pytest.mark.parametrize("dtype", [F32, F64, I32, BOOL, BF16], ids=_id)
def test_select_where(dtype):
    c = rand(BOOL, (4, 5), seed=3)
    a, b = rand(dtype, (4, 5), seed=1), rand(dtype, (4, 5), seed=2)
    check(lambda c, a, b: (jnp.where(c, a, b), lax.select(c, b, a)), c, a, b, exact=True)


def test_where_broadcast_scalar_pred():
    check(lambda p, a: (jnp.where(p, a, 0.0), jnp.where(a > 0, a, -1.0)),
          np.bool_(True), rand(F32, (3, 4)))


def test_select_n():
    which = rand(I32, (4, 5), "shift") % 3
    check(lambda w, a, b, c: lax.select_n(w, a, b, c), which, rand(F32, (4, 5), seed=1),
          rand(F32, (4, 5), seed=2), rand(F32, (4, 5), seed=3))


@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=_id)
def test_clip(dtype):
    x = rand(dtype, (20,), "small")
    check(lambda x: (jnp.clip(x, -2, 3), lax.clamp(dtype.type(-1), x, dtype.type(1))), x)


def test_clip_nan():
    check(lambda x: jnp.clip(x, -1.0, 1.0), SPECIAL_F32)


# ================================================================================================
# Conversions
# ================================================================================================

CONVERT_CASES = [
    (F32, I32), (F32, I8), (F32, U8), (F32, U32), (I32, F32), (U32, F32), (I8, F32), (U8, F32),
    (F32, F64), (F64, F32), (F64, I64), (I64, F64), (F32, F16), (F16, F32), (F32, BF16),
    (BF16, F32), (F16, BF16), (I32, I8), (I8, I32), (U8, I32), (I32, U8), (I32, U32), (U32, I32),
    (I32, I64), (I64, I32), (U32, U64), (BOOL, F32), (BOOL, I32), (F32, BOOL), (I32, BOOL),
    (U8, BOOL), (I16, U16), (F64, F16), (F32, C64),
]


def _convert_input(src, dst):
    if src.kind == "f" and dst.kind in "iu":
        # in range of the destination: truncation toward zero, negatives only for signed
        lo = 0.0 if dst.kind == "u" else -100.0
        hi = 120.0
        v = np.random.default_rng(7).uniform(lo, hi, 32)
        v[:4] = [lo, hi, 0.5, 2.75]
        if dst.kind == "i":
            v[4:6] = [-0.5, -2.75]
        return v.astype(src)
    if src == BOOL:
        return rand(BOOL, 32)
    if src.kind in "iu":
        info = np.iinfo(src)
        v = np.random.default_rng(8).integers(int(info.min), int(info.max), 32, endpoint=True)
        v[:3] = [info.min, info.max, 0]
        return v.astype(src)
    v = rand(src, 32, seed=9) * src.type(8)
    v[:4] = np.array([0.0, -0.0, 1.0, -1.0]).astype(src)
    return v


@pytest.mark.parametrize("src,dst", CONVERT_CASES, ids=[f"{s.name}-to-{d.name}" for s, d in CONVERT_CASES])
def test_convert(src, dst):
    x = _convert_input(src, dst)
    kind = "arith"
    check(lambda x: lax.convert_element_type(x, dst), x, dtypes=(dst,), kind=kind)


def test_convert_float_specials_to_float():
    check(lambda x: (x.astype(jnp.float16), x.astype(jnp.bfloat16)), SPECIAL_F32)


def test_convert_float_to_int_out_of_range():
    # XLA saturates float->int conversions and maps NaN to 0. StableHLO leaves this
    # implementation-defined; JAX users observe XLA's behaviour, so Kiln is compared to it.
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, 300.0, -300.0], np.float32)
    check(lambda x: (x.astype(jnp.int32), x.astype(jnp.int8), x.astype(jnp.uint8)), x)


@pytest.mark.parametrize("src,dst", [(F32, I32), (I32, F32), (F32, U32), (U32, F32),
                                     (F16, I16), (BF16, U16), (F64, I64), (F32, U8)],
                         ids=lambda v: v.name)
def test_bitcast_convert(src, dst):
    x = rand(src, (3, 4)) if src.kind != "u" else rand(src, (3, 4), "pos")
    check(lambda x: lax.bitcast_convert_type(x, dst), x, dtypes=(dst,))


# ================================================================================================
# Shape and data movement (bit-exact)
# ================================================================================================

MOVE_DTYPES = [BOOL, I8, U8, I16, F16, BF16, I32, U32, F32, I64, F64, C64]


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=_id)
def test_transpose(dtype):
    x = rand(dtype, (2, 3, 4))
    check(lambda x: (x.T, jnp.transpose(x, (1, 0, 2)), jnp.transpose(x, (0, 2, 1)),
                     jnp.transpose(x, (2, 0, 1))), x, exact=True)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=_id)
def test_slice_concat_reverse(dtype):
    x = rand(dtype, (5, 6))
    check(lambda x: (x[1:4, ::2], x[::-1], x[:, ::-2], lax.slice(x, (0, 1), (5, 6), (2, 3)),
                     jnp.concatenate([x, x[:2]], axis=0), jnp.concatenate([x[:, :1], x], axis=1),
                     jnp.flip(x, (0, 1))), x, exact=True)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=_id)
def test_pad(dtype):
    x = rand(dtype, (3, 4))
    pv = np.zeros((), dtype) if dtype != BOOL else np.bool_(True)
    check(lambda x, pv: (lax.pad(x, pv, [(1, 2, 0), (0, 1, 1)]),
                         lax.pad(x, pv, [(-1, 1, 1), (2, -2, 0)])), x, pv, exact=True)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=_id)
def test_dynamic_update_slice(dtype):
    x = rand(dtype, (5, 6), seed=1)
    u = rand(dtype, (2, 3), seed=2)
    check(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), x, u, np.int32(2),
          np.int32(1), exact=True)


def test_broadcast_reshape_squeeze():
    x = rand(F32, (3, 1, 4))
    check(lambda x: (jnp.broadcast_to(x, (2, 3, 5, 4)), x.reshape(4, 3), x.reshape(-1),
                     jnp.squeeze(x, 1), jnp.expand_dims(x, 0), x.reshape(2, 6)[:, None, :],
                     lax.broadcast_in_dim(x[:, 0, :], (3, 2, 4), (0, 2))), x, exact=True)


def test_stack_tile_repeat_roll():
    x = rand(I32, (3, 4))
    check(lambda x: (jnp.stack([x, -x, x * 2], axis=1), jnp.tile(x, (2, 1)),
                     jnp.repeat(x, 2, axis=1), jnp.roll(x, 1, axis=0), jnp.roll(x, -3)), x)


def test_tril_triu_eye():
    x = rand(F32, (4, 5))
    # (Not eye * x: IEEE gives 0 * negative = -0.0, but XLA rewrites the multiply by a 0/1 mask into
    # a select and returns +0.0, so the sign of zero would differ for a legitimate reason.)
    check(lambda x: (jnp.tril(x), jnp.triu(x, 1), jnp.eye(3, 4, 1, dtype=jnp.float32),
                     jnp.where(jnp.eye(3, 4, -1) > 0, x[:3, :4], 2.0)), x, exact=True)


@pytest.mark.parametrize("start", [(0, 0), (2, 3), (4, 5), (-1, 2), (10, 10)], ids=str)
def test_dynamic_slice_clamped(start):
    # StableHLO clamps start indices so that the slice stays in bounds.
    x = rand(F32, (5, 6))
    check(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), x, np.int32(start[0]),
          np.int32(start[1]), exact=True)


@pytest.mark.parametrize("start", [(0, 0), (4, 5), (-3, 1), (7, -7)], ids=str)
def test_dynamic_update_slice_clamped(start):
    x = rand(F32, (5, 6), seed=1)
    u = rand(F32, (2, 3), seed=2)
    check(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), x, u, np.int32(start[0]),
          np.int32(start[1]), exact=True)


def test_dynamic_index_in_loop_scalar():
    x = rand(F32, (6,))
    check(lambda x, i: (x[i], lax.dynamic_index_in_dim(x, i, keepdims=False)), x, np.int32(4),
          exact=True)


@pytest.mark.parametrize("dtype", [I32, F32, U8, F64], ids=_id)
def test_iota(dtype):
    with jax.enable_x64(dtype == F64):
        check(lambda x: (jnp.arange(7, dtype=dtype) + x, lax.broadcasted_iota(dtype, (3, 4), 0),
                         lax.broadcasted_iota(dtype, (3, 4), 1)), np.zeros((), dtype), exact=True)


def test_arange_float_steps():
    check(lambda x: jnp.arange(0.0, 3.0, 0.25) * x, np.float32(1.0), exact=True)


def test_zero_size_arrays():
    x = np.zeros((0, 3), np.float32)
    check(lambda x: (x + 1, x.T, jnp.concatenate([x, x]), x.sum(axis=0), x.max(axis=1),
                     jnp.zeros((2, 0)) @ jnp.zeros((0, 3))), x)


# ================================================================================================
# Reductions
# ================================================================================================

SHAPE3 = (2, 3, 4)
AXES = [None] + [c for r in range(1, 4) for c in itertools.combinations(range(3), r)]
REDUCE = {
    "sum": (jnp.sum, (F32, I32, F64, U8), "any", "reduction"),
    "max": (jnp.max, (F32, I32, U32, BF16, F16), "any", "arith"),
    "min": (jnp.min, (F32, I32, F64, BF16, F16), "any", "arith"),
    "prod": (jnp.prod, (F32, I32), "near1", "reduction"),
    "mean": (jnp.mean, (F32,), "any", "reduction"),
    "any": (jnp.any, (BOOL,), "any", "arith"),
    "all": (jnp.all, (BOOL,), "any", "arith"),
}
REDUCE_CASES = [(n, d, ax) for n, (_, dts, _, _) in REDUCE.items() for d in dts for ax in AXES]


@pytest.mark.parametrize("name,dtype,axis", REDUCE_CASES,
                         ids=[f"{n}-{d.name}-{a}" for n, d, a in REDUCE_CASES])
def test_reduce(name, dtype, axis):
    fn, _, domain, kind = REDUCE[name]
    if dtype.kind in "iu" and name == "prod":
        x = np.random.default_rng(5).choice(np.array([-2, -1, 1, 2], dtype), SHAPE3)
    else:
        x = rand(dtype, SHAPE3, domain)
    if dtype == BOOL and name == "all":
        x = x | (rand(BOOL, SHAPE3, seed=1))   # mostly True so that some all() are True
    check(lambda x: fn(x, axis=axis), x, kind=kind)


ARG_CASES = [(n, d, ax) for n in ("argmax", "argmin") for d in (F32, I32, F64)
             for ax in (None, 0, 1, 2)]


@pytest.mark.parametrize("name,dtype,axis", ARG_CASES, ids=[f"{n}-{d.name}-{a}" for n, d, a in ARG_CASES])
def test_argmax_argmin(name, dtype, axis):
    fn = jnp.argmax if name == "argmax" else jnp.argmin
    domain = "small" if dtype == I32 else "any"   # small ints: many ties (first index wins)
    check(lambda x: fn(x, axis=axis), rand(dtype, SHAPE3, domain))


def test_argmax_with_nan_and_ties():
    x = np.array([[1.0, 3.0, 3.0, -1.0], [np.nan, 2.0, np.nan, 5.0], [-np.inf] * 4], np.float32)
    check(lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=1), jnp.max(x, axis=1),
                     jnp.min(x, axis=1)), x)


@pytest.mark.parametrize("shape", [(9, 24, 17), (16, 40), (3, 2051)])
def test_argmax_argmin_vector_paths(shape):
    # Rows of 8 side by side and blocks of columns (kernels/reduce_simd_avx2.cc: ArgRows8,
    # ArgColumns) over every axis, with ties, NaNs, infinities and signed zeros.
    rng = np.random.default_rng(len(shape))
    x = rng.integers(-3, 4, size=shape).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    pick = rng.random(shape) < 0.05
    x[pick] = rng.choice(specials, size=int(pick.sum()))
    for axis in range(len(shape)):
        check(lambda x, axis=axis: (jnp.argmax(x, axis=axis), jnp.argmin(x, axis=axis)), x)
    check(lambda x: (jnp.argmax(x), jnp.argmin(x)), x)


def test_reduce_special_values():
    x = np.array([[1.0, np.inf, -np.inf], [np.nan, 1.0, 2.0], [-0.0, 0.0, -0.0]], np.float32)
    check(lambda x: (x.sum(1), x.max(1), x.min(1), x.prod(1), x.max(0)), x)


@pytest.mark.parametrize("dtype", [BF16, F16], ids=_id)
def test_narrow_max_min_reduce_exactly(dtype):
    # bf16/f16 maximum and minimum reduce in f32 (kernels/reduction.cc): exact, NaNs, infinities
    # and signed zeros included, over every axis of an odd-sized array and of a softmax's rows.
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((5, 33, 17)) * 100).astype(dtype)
    pick = rng.random(x.shape) < 0.02
    x[pick] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0]).astype(dtype),
                         size=int(pick.sum()))
    for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
        check(lambda x, axis=axis: (jnp.max(x, axis=axis), jnp.min(x, axis=axis)), x, exact=True)
    check(lambda y: jnp.max(y, axis=-1, keepdims=True) - y, x.reshape(-1, 17)[:64], exact=True)


def test_reduce_empty_gives_identity():
    x = np.zeros((0, 4), np.float32)
    check(lambda x: (x.sum(0), x.prod(0), jnp.max(x, 0, initial=-jnp.inf), jnp.min(x, 0, initial=7.0),
                     jnp.any(x > 0, 0), jnp.all(x > 0, 0)), x)


def test_var_std_norm():
    x = rand(F32, (6, 7))
    check(lambda x: (jnp.var(x, axis=0), jnp.std(x), jnp.linalg.norm(x, axis=1)), x, kind="composite")


def test_large_sum():
    x = rand(F32, (1000, 257), "near1")
    check(lambda x: (x.sum(), x.sum(0), x.sum(1)), x, rtol=1e-5, atol=1e-3)


def test_variadic_reduce():
    # A two-operand reduce (value, index) written with lax.reduce.
    x = rand(F32, (4, 6))
    idx = np.broadcast_to(np.arange(6, dtype=np.int32), (4, 6)).copy()

    def f(x, idx):
        def comb(a, b):
            (av, ai), (bv, bi) = a, b
            take_a = av >= bv
            return lax.select(take_a, av, bv), lax.select(take_a, ai, bi)
        return lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), comb, (1,))
    check(f, x, idx)


# ================================================================================================
# Dot / matmul / einsum
# ================================================================================================

@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=_id)
def test_matmul(dtype):
    a, b = rand(dtype, (5, 7), "small", seed=1), rand(dtype, (7, 3), "small", seed=2)
    v = rand(dtype, (7,), "small", seed=3)
    check(lambda a, b, v: (a @ b, a @ v, v @ b, v @ v, jnp.outer(v, v[:3])), a, b, v, kind="reduction")


EINSUMS = [
    ("bij,bjk->bik", (4, 3, 5), (4, 5, 2)),
    ("ji,jk->ik", (5, 3), (5, 4)),          # lhs contracted on its leading dim
    ("ij,kj->ik", (3, 5), (4, 5)),          # rhs transposed
    ("ji,kj->ik", (5, 3), (4, 5)),
    ("abij,abjk->abik", (2, 3, 4, 5), (2, 3, 5, 2)),
    ("ibj,bjk->bik", (3, 4, 5), (4, 5, 2)),  # batch dim not leading on the lhs
    ("bij,bkj->bki", (2, 3, 4), (2, 5, 4)),
    ("ijk,jkl->il", (2, 3, 4), (3, 4, 5)),  # two contracting dims
    ("i,j->ij", (4,), (3,)),
    ("bi,bi->b", (6, 5), (6, 5)),
]


@pytest.mark.parametrize("spec,sa,sb", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(spec, sa, sb):
    check(lambda a, b: jnp.einsum(spec, a, b), rand(F32, sa, seed=1), rand(F32, sb, seed=2),
          kind="reduction")


def test_dot_general_direct():
    a, b = rand(F32, (2, 3, 4), seed=1), rand(F32, (2, 4, 5), seed=2)
    check(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), a, b, kind="reduction")


def test_matmul_preferred_element_type():
    a8, b8 = rand(I8, (4, 6), seed=1), rand(I8, (6, 3), seed=2)
    ab, bb = rand(BF16, (4, 6), seed=3), rand(BF16, (6, 3), seed=4)
    check(lambda a8, b8, ab, bb: (jnp.matmul(a8, b8, preferred_element_type=jnp.int32),
                                  jnp.matmul(ab, bb, preferred_element_type=jnp.float32)),
          a8, b8, ab, bb, kind="reduction")


@pytest.mark.parametrize("dtype", [C64, np.dtype(np.complex128)], ids=_id)
@pytest.mark.parametrize("spec,sa,sb", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_complex(spec, sa, sb, dtype):
    check(lambda a, b: jnp.einsum(spec, a, b), rand(dtype, sa, "unit", seed=1),
          rand(dtype, sb, "unit", seed=2), kind="reduction")


def test_complex_matmul_real_operand_and_vdot():
    a, b = rand(F32, (4, 6), "unit", seed=1), rand(C64, (6, 3), "unit", seed=2)
    v = rand(C64, (6,), "unit", seed=3)
    check(lambda a, b, v: (a @ b, b.T @ v, jnp.vdot(v, v), jnp.vdot(b[:, 0], v)), a, b, v,
          kind="reduction")


def test_tensordot_and_vdot():
    a, b = rand(F32, (3, 4, 5), seed=1), rand(F32, (4, 5, 2), seed=2)
    check(lambda a, b: (jnp.tensordot(a, b, axes=2), jnp.vdot(a[0], b[:, :, 0].T)), a, b,
          kind="reduction")


# ================================================================================================
# Gather / scatter
# ================================================================================================

def test_gather_indexing():
    x = rand(F32, (6, 5))
    idx = np.array([4, 0, 5, 0, 2], np.int32)
    idx2 = np.array([[1, 3], [5, 0]], np.int32)
    check(lambda x, i, i2: (x[i], x[:, i[:3]], x[i2], x[i, i], x[i2, 1], x[-1], x[i - 6]),
          x, idx, idx2, exact=True)


def test_gather_3d_mixed():
    x = rand(I32, (4, 5, 6))
    i = np.array([3, 1, 0], np.int32)
    j = np.array([5, 0, 2], np.int32)
    check(lambda x, i, j: (x[i, :, j], x[:, i, 1:4], x[1, :, j]), x, i, j)


def test_take_modes():
    x = rand(F32, (4, 5))
    idx = np.array([0, 4, 7, -1, 9], np.int32)
    check(lambda x, i: (jnp.take(x, i, axis=1, mode="clip"), jnp.take(x, i, axis=1, mode="fill"),
                        jnp.take(x, i, axis=1, mode="wrap"), x.at[:, i].get(mode="fill", fill_value=-1.0)),
          x, idx, exact=True)


def test_take_along_axis():
    x = rand(F32, (4, 6))
    i = rand(I32, (4, 3), "shift") % 6
    check(lambda x, i: (jnp.take_along_axis(x, i, axis=1), jnp.take_along_axis(x, i[:, :1] % 4, axis=0)),
          x, i, exact=True)


@pytest.mark.parametrize("shape,axis", [((300, 257), 1), ((300, 257), 0), ((7, 40, 301), 2),
                                        ((7, 40, 301), 1)])
def test_take_along_axis_large(shape, axis):
    # Batched gathers (operand_batching_dims) of more than one task's worth of indices: each task
    # starts mid-row, and rows of the last batch dimension are walked in one loop. Indices out of
    # range (JAX fills NaN there) and negative ones (counted from the end) included.
    rng = np.random.default_rng(len(shape) * 10 + axis)
    x = rng.standard_normal(shape).astype(np.float32)
    i = rng.integers(-shape[axis] - 2, shape[axis] + 2, shape).astype(np.int32)
    check(lambda x, i: jnp.take_along_axis(x, i, axis=axis), x, i, exact=True)


SCATTER = ["set", "add", "mul", "min", "max"]


@pytest.mark.parametrize("dtype", [F32, I32], ids=_id)
@pytest.mark.parametrize("op", SCATTER)
def test_scatter(op, dtype):
    x = rand(dtype, (6, 3), "small", seed=1)
    # "set" with duplicate indices is implementation-defined (which write wins), so unique there.
    idx = np.array([4, 1, 0] if op == "set" else [4, 1, 4, 0, 4], np.int32)
    upd = rand(dtype, (len(idx), 3), "small", seed=2)
    check(lambda x, i, u: getattr(x.at[i], op)(u), x, idx, upd, kind="reduction")


def test_scatter_2d_index_and_slices():
    x = rand(F32, (4, 5, 3))
    i = np.array([0, 3, 1], np.int32)
    j = np.array([4, 4, 0], np.int32)
    check(lambda x, i, j: (x.at[i, j].add(1.0), x.at[:, j].set(-2.0), x.at[1, :, 2].mul(3.0),
                           x.at[i, 1:3].max(0.0)), x, i, j)


def test_scatter_out_of_bounds_dropped():
    x = rand(F32, (5,))
    idx = np.array([1, 9, -9, 4, 5], np.int32)
    check(lambda x, i: (x.at[i].add(10.0), x.at[i].set(7.0, mode="drop"),
                        x.at[i].add(1.0, mode="clip")), x, idx)


def test_segment_sum():
    data = rand(F32, (10, 3))
    seg = np.array([0, 0, 1, 3, 3, 3, 2, 1, 0, 3], np.int32)
    check(lambda d, s: (jax.ops.segment_sum(d, s, num_segments=4),
                        jax.ops.segment_max(d, s, num_segments=5)), data, seg, kind="reduction")


@pytest.mark.parametrize("sort_ids", [True, False])
def test_segment_ops_large(sort_ids):
    # 2^17 updates: the bases are computed in several tasks, and runs of equal ids (sorted) combine
    # in a register; either way each element sees its updates in update order, as on XLA:CPU, so
    # the sums are bit for bit the same. Ids out of range (negative, >= num_segments) are dropped.
    rng = np.random.default_rng(7)
    data = rng.standard_normal(1 << 17).astype(np.float32)
    seg = rng.integers(-3, 1003, 1 << 17).astype(np.int32)
    if sort_ids:
        seg.sort()
    factors = (1.0 + 1e-3 * data).astype(np.float32)
    check(lambda d, f, s: (jax.ops.segment_sum(d, s, num_segments=1000),
                           jax.ops.segment_max(d, s, num_segments=1000),
                           jax.ops.segment_prod(f, s, num_segments=1000)),
          data, factors, seg, exact=True)


# ================================================================================================
# Sort
# ================================================================================================

SORT_SPECIAL = np.array([3.0, np.nan, -1.0, 0.0, -0.0, np.inf, 2.5, -np.inf, 1.0, -1.0,
                         -np.nan, 0.0, -3.5, 0.5, 1.0, -0.0], np.float32)


@pytest.mark.parametrize("dtype", [F32, F64, I32, U32, BOOL, BF16, I8], ids=_id)
def test_sort(dtype):
    x = rand(dtype, (4, 9), "small")
    check(lambda x: (jnp.sort(x, axis=1), jnp.sort(x, axis=0), jnp.sort(x.ravel())), x, exact=True)


def test_sort_special_values():
    check(lambda x: (jnp.sort(x), jnp.sort(x, descending=True), jnp.argsort(x, stable=True)),
          SORT_SPECIAL, exact=True)


def test_argsort_stable_ties():
    x = rand(I32, (3, 12), "small")
    check(lambda x: (jnp.argsort(x, axis=1, stable=True), jnp.argsort(x, axis=0, stable=True),
                     jnp.argsort(x, axis=1, stable=True, descending=True)), x)


def test_sort_multiple_operands():
    k1 = rand(I32, (10,), "small", seed=1)
    k2 = rand(I32, (10,), "small", seed=2)
    v = rand(F32, (10,), seed=3)
    check(lambda k1, k2, v: (lax.sort((k1, v), num_keys=1), lax.sort((k1, k2, v), num_keys=2),
                             jnp.lexsort((k2, k1))), k1, k2, v, exact=True)


def test_top_k():
    # lax.top_k reaches the plugin as stablehlo.composite "chlo.top_k" (+ decomposition).
    x = rand(F32, (3, 10))
    check(lambda x: lax.top_k(x, 4), x, exact=True)


def test_median_quantile():
    x = rand(F32, (5, 8))
    check(lambda x: (jnp.median(x, axis=1), jnp.quantile(x, 0.25)), x, kind="composite")


def test_searchsorted():
    a = np.sort(rand(F32, (12,), "small"))
    v = rand(F32, (7,), "small", seed=4)
    check(lambda a, v: (jnp.searchsorted(a, v), jnp.searchsorted(a, v, side="right")), a, v)


# ================================================================================================
# Cumulative ops and reduce_window
# ================================================================================================

CUMULATIVE = {"cumsum": jnp.cumsum, "cumprod": jnp.cumprod, "cummax": lax.cummax,
              "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}
CUM_CASES = [(n, d, a) for n in CUMULATIVE for d in (F32, I32) for a in (0, 1)
             if not (n == "cumlogsumexp" and d == I32)]


@pytest.mark.parametrize("name,dtype,axis", CUM_CASES, ids=[f"{n}-{d.name}-{a}" for n, d, a in CUM_CASES])
def test_cumulative(name, dtype, axis):
    x = rand(dtype, (5, 6), "near1" if name == "cumprod" and dtype == F32 else "small")
    kind = "composite" if name == "cumlogsumexp" else "reduction"
    check(lambda x: CUMULATIVE[name](x, axis=axis), x, kind=kind)


def test_cumsum_reverse_and_f64():
    x = rand(F64, (4, 7))
    check(lambda x: (lax.cumsum(x, axis=1, reverse=True), jnp.cumsum(x)), x, kind="reduction")


@pytest.mark.parametrize("dtype", [F32, I32], ids=lambda d: d.name)
def test_cumulative_million_elements(dtype):
    # 2^20-long windows (JAX lowers cumulative ops to reduce_window): Kiln scans them in linear
    # time. Small integer values keep every partial sum exact in f32, so any order must agree.
    x = np.random.default_rng(0).integers(0, 3, size=1 << 20).astype(dtype)
    check(lambda x: (jnp.cumsum(x), lax.cumsum(x, reverse=True), lax.cummax(x),
                     lax.cummin(x.reshape(1024, 1024), axis=0, reverse=True)), x, kind="reduction")


def test_reduce_window_pooling():
    x = rand(F32, (1, 6, 7, 2))
    check(lambda x: (lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                     lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME"),
                     lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 3, 1), (1, 1, 2, 1),
                                       [(0, 0), (1, 1), (0, 2), (0, 0)])),
          x, kind="reduction")


def test_reduce_window_dilation():
    x = rand(F32, (7, 8))
    check(lambda x: (lax.reduce_window(x, 0.0, lax.add, (2, 3), (1, 2), [(1, 1), (0, 1)],
                                       window_dilation=(2, 1)),
                     lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID",
                                       base_dilation=(2, 1))), x, kind="reduction")


# ================================================================================================
# Control flow
# ================================================================================================

def test_while_loop():
    def f(n, x):
        def body(c):
            i, acc, v = c
            return i + 1, acc + jnp.sum(v) * i, v * 0.5 + 1.0
        return lax.while_loop(lambda c: c[0] < n, body, (0, 0.0, x))
    check(f, np.int32(7), rand(F32, (3,)), kind="reduction")


def test_while_loop_zero_trips():
    check(lambda n, x: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2), (0, x)),
          np.int32(0), rand(F32, (4,)))


@pytest.mark.parametrize("dtype", [F32, F64], ids=_id)
def test_fori_loop_static_and_dynamic(dtype):
    def f(x, n):
        a = lax.fori_loop(0, 5, lambda i, x: x * 1.5 + i, x)         # static trip count
        b = lax.fori_loop(0, n, lambda i, x: jnp.sin(x) + i, x)      # dynamic: while
        return a, b
    check(f, rand(dtype, (4,)), np.int32(6), kind="transcendental")


@pytest.mark.parametrize("pred", [True, False])
def test_cond(pred):
    check(lambda p, x: lax.cond(p, lambda x: (x + 1.0, jnp.sum(x)), lambda x: (x * 2.0, jnp.max(x)), x),
          np.bool_(pred), rand(F32, (5,)), kind="reduction")


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps_index(index):
    branches = [lambda x: x + 1.0, lambda x: jnp.sin(x), lambda x: x * x]
    check(lambda i, x: lax.switch(i, branches, x), np.int32(index), rand(F32, (4,)),
          kind="transcendental")


def test_cond_with_operand_free_branches_and_int_pred():
    check(lambda i, x: lax.cond(i > 2, lambda: x.sum(), lambda: -x.sum()), np.int32(3), rand(F32, (6,)),
          kind="reduction")


@pytest.mark.parametrize("reverse", [False, True])
def test_scan(reverse):
    def f(c0, xs):
        def body(c, x):
            c = c * 0.9 + x
            return c, (c.sum(), x * 2)
        return lax.scan(body, c0, xs, reverse=reverse)
    check(f, rand(F32, (3,)), rand(F32, (6, 3)), kind="reduction")


def test_scan_length_only_and_map():
    check(lambda x: (lax.scan(lambda c, _: (c + 1.0, c), x, length=4), lax.map(jnp.cumsum, x[None] * 2)),
          rand(F32, (3,)), kind="reduction")


def test_nested_control_flow():
    def f(n, x):
        def outer(i, x):
            return lax.cond(i % 2 == 0,
                            lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + 1.0), (0, x))[1],
                            lambda x: lax.fori_loop(0, i, lambda j, y: y * 0.5, x), x)
        return lax.fori_loop(0, n, outer, x)
    check(f, np.int32(5), rand(F32, (4,)))


def test_associative_scan():
    check(lambda x: lax.associative_scan(jnp.add, x), rand(F32, (10,)), kind="reduction")


def test_while_with_closure_over_array():
    w = rand(F32, (3, 3), seed=5) * 0.3
    check(lambda x, w: lax.while_loop(lambda c: jnp.sum(jnp.abs(c[1])) > 1e-3,
                                      lambda c: (c[0] + 1, w @ c[1]), (0, x))[0], rand(F32, (3,)), w)


# ================================================================================================
# Random numbers (threefry in StableHLO)
# ================================================================================================

def test_random_bits_exact():
    key = jax.random.key(42)
    check(lambda k: (jax.random.bits(k, (257,)), jax.random.bits(k, (3, 5), jnp.uint8),
                     jax.random.bits(k, (4,), jnp.uint16)), key)


def test_random_bits_legacy_key_and_split_fold_in():
    key = np.asarray(jax.random.PRNGKey(7))
    check(lambda k: (jax.random.split(k, 4), jax.random.fold_in(k, 3),
                     jax.random.bits(jax.random.fold_in(k, 1), (16,))), key)


def test_random_uniform_normal():
    key = jax.random.key(0)
    check(lambda k: (jax.random.uniform(k, (200,)), jax.random.normal(k, (200,)),
                     jax.random.uniform(k, (5,), minval=-2.0, maxval=3.0)), key, kind="composite")


def test_random_normal_f64():
    with jax.enable_x64(True):
        check(lambda k: jax.random.normal(k, (50,), dtype=jnp.float64), jax.random.key(3),
              kind="composite")


def test_random_discrete():
    key = jax.random.key(11)
    check(lambda k: (jax.random.randint(k, (40,), -5, 17), jax.random.bernoulli(k, 0.3, (40,)),
                     jax.random.permutation(k, 20), jax.random.categorical(k, jnp.arange(5.0), shape=(30,)),
                     jax.random.choice(k, 10, (6,), replace=False)), key)


def test_random_key_created_inside_jit():
    check(lambda s: jax.random.normal(jax.random.key(s), (8,)), np.uint32(5), kind="composite")


# ================================================================================================
# Softmax family
# ================================================================================================

@pytest.mark.parametrize("dtype", [F32, F64], ids=_id)
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_family(dtype, axis):
    x = rand(dtype, (6, 7)) * dtype.type(5)
    check(lambda x: (jax.nn.softmax(x, axis=axis), jax.nn.log_softmax(x, axis=axis),
                     jax.nn.logsumexp(x, axis=axis)), x, kind="composite")


def test_softmax_large_and_masked_values():
    x = np.array([[1000.0, 1001.0, 999.0], [-np.inf, 0.0, 1.0], [-1e4, -1e4 + 1, -1e4 - 2]], np.float32)
    check(lambda x: (jax.nn.softmax(x), jax.nn.log_softmax(x), jax.nn.logsumexp(x, axis=1),
                     jax.nn.logsumexp(x, b=jnp.array([1.0, 0.5, 2.0]), axis=1)), x, kind="composite")


def test_activation_functions():
    x = rand(F32, (40,))
    check(lambda x: (jax.nn.relu(x), jax.nn.gelu(x), jax.nn.gelu(x, approximate=False), jax.nn.silu(x),
                     jax.nn.softplus(x), jax.nn.elu(x), jax.nn.leaky_relu(x)), x, kind="composite")


def test_zero_element_constants():
    # MLIR writes zero-element dense constants as a one-element splat blob (issue 11).
    c = np.zeros((0, 3), np.float32)
    check(lambda x: (jnp.concatenate([x, jnp.asarray(c)]), jnp.asarray(c) + 1.0,
                     jnp.asarray(np.ones((0,), np.int32)) * 2), rand(F32, (2, 3)))
