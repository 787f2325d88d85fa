"""Integer programs as native code (codegen/native_int32.cc, compiler/inline_calls.cc): s32/u32
division and remainder, jnp's `%` and `//` (floor semantics, negative operands), sign, abs,
compares, `where`, conversions between int32, uint32, bool and float32, in fused runs of
sizes that take the whole-vector and the masked-tail paths, and in a `while_loop` and a
`fori_loop` carrying int32 arrays. Against JAX's CPU backend, bit for bit, including the edge
cases StableHLO defines: division by zero (-1 for the quotient, the dividend for the
remainder), INT_MIN / -1 (INT_MIN, remainder 0), shifts by 32 and more.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both
from native_code import cpu_flags, traced_step_names

SIZES = (257, 1031, 4096)
I32_MIN, I32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def ints(dtype, n: int, seed: int) -> np.ndarray:
    """Random values of `dtype` with its edges mixed in: 0, +-1, INT_MIN, INT_MAX, -7, 7."""
    rng = np.random.default_rng(seed * 100 + n)
    info = np.iinfo(dtype)
    out = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64).astype(dtype)
    small = rng.integers(-20, 20, size=n).astype(dtype)
    out = np.where(rng.random(n) < 0.5, small, out)
    edges = np.array([0, 1, info.max, info.min, 7, 2] + ([-1, -7, -2] if info.min < 0 else [3]),
                     dtype=np.int64).astype(dtype)
    pick = rng.random(n) < 0.3
    out[pick] = rng.choice(edges, size=int(pick.sum()))
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_divide_and_remainder_every_pair(dtype, n):
    x, y = ints(dtype, n, 1), ints(dtype, n, 2)
    check_both(lambda a, b: (lax.div(a, b), lax.rem(a, b), a * 3 + lax.rem(a, b)), x, y,
               exact=True)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_division_edge_cases(dtype):
    info = np.iinfo(dtype)
    vals = np.array([0, 1, 2, 7, info.max, info.min] + ([-1, -2, -7] if info.min < 0 else [3]),
                    dtype=np.int64).astype(dtype)
    x = np.repeat(vals, len(vals))  # every pair, dividend by divisor
    y = np.tile(vals, len(vals))
    x = np.tile(x, 4)[:300]  # past 256 elements: a native run, with a tail
    y = np.tile(y, 4)[:300]
    k, _ = check_both(lambda a, b: (lax.div(a, b), lax.rem(a, b)), x, y, exact=True)
    q, r = (np.asarray(v) for v in k)
    zero = y == 0
    np.testing.assert_array_equal(q[zero], np.array(-1).astype(dtype))  # all bits set
    np.testing.assert_array_equal(r[zero], x[zero])
    if info.min < 0:
        trap = (x == info.min) & (y == -1)
        assert trap.any()
        np.testing.assert_array_equal(q[trap], info.min)
        np.testing.assert_array_equal(r[trap], 0)


@pytest.mark.parametrize("n", SIZES)
def test_floor_divide_and_mod_negative_operands(n):
    x = ints(np.int32, n, 3)
    y = ints(np.int32, n, 4)
    check_both(lambda a, b: (a // b, a % b, a % 7, a // -3, a % -5, (-a) // 2), x, y, exact=True)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_sign_abs_compares_where_converts(dtype, n):
    x, y = ints(dtype, n, 5), ints(dtype, n, 6)

    def f(a, b):
        lt, le, eq = a < b, a <= b, a == b
        both = (lt & ~eq) | (a > b)
        out = [jnp.sign(a), jnp.abs(a) if dtype == np.int32 else a, jnp.where(lt, a, b),
               jnp.where(both ^ le, a - b, b * 5), (a != b).astype(dtype) + a,
               (a >= 3) != (b > a), lt.astype(jnp.float32) * 2.5, a.astype(jnp.bool_),
               a.astype(np.uint32 if dtype == np.int32 else np.int32) >> 1]
        if dtype == np.int32:
            out.append(a.astype(jnp.float32) * 0.5)
        return out

    check_both(f, x, y, exact=True)


@pytest.mark.parametrize("n", SIZES)
def test_shifts_past_the_width(n):
    x = ints(np.int32, n, 7)
    s = np.random.default_rng(8).integers(-3, 70, size=n).astype(np.int32)
    check_both(lambda a, c: (lax.shift_left(a, c), lax.shift_right_logical(a, c),
                             lax.shift_right_arithmetic(a, c), a % (c | 1)), x, s, exact=True)


def test_int32_bitops_with_mod_run_natively():
    x = np.random.default_rng(9).integers(0, 1 << 30, 1 << 16).astype(np.int32)
    check_both(lambda a: ((a ^ (a >> 3)) & 0xFFFF) * 3 + (a % 7), x, exact=True)


def test_collatz_while_loop():
    def steps(n):
        def cond(s):
            return jnp.any(s[0] != 1)

        def body(s):
            x, count = s
            done = x == 1
            x = jnp.where(done, x, jnp.where(x % 2 == 0, x // 2, 3 * x + 1))
            return x, count + (~done).astype(jnp.int32)

        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))[1]

    check_both(steps, np.arange(1, 1301, dtype=np.int32), exact=True)


def test_hash_fori_loop_uint32():
    def run(x):
        def body(i, h):
            h = h ^ (h >> 16)
            h = h * np.uint32(0x7FEB352D)
            h = h ^ (h >> 15)
            return h + (h % np.uint32(977)) // np.uint32(3) + i.astype(jnp.uint32)

        return lax.fori_loop(0, 40, body, x)

    check_both(run, np.arange(2000, dtype=np.uint32) * np.uint32(2654435761), exact=True)


TRACED = """
import jax, jax.numpy as jnp, numpy as np
x = jax.device_put(np.arange(4099, dtype=np.int32) * 977, jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(lambda x: ((x ^ (x >> 3)) & 0xFFFF) * 3 + (x % 7) + x // -3)(x))
"""


@pytest.mark.requires_kiln
def test_int_run_with_mod_and_floor_divide_is_one_native_run(tmp_path):
    # jnp's % and // are calls of @remainder / @floor_divide with scalar compares and selects:
    # inlined, those hoisted ahead, the whole expression is one fused run of native code.
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test checks native code is used"
    names = traced_step_names(TRACED, tmp_path)
    fused = [n for n in names if n.startswith("fused")]
    native = {"avx2", "bmi2"} <= cpu_flags()
    assert len(fused) == 1, names
    assert ("(native code)" in fused[0]) == native, names


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_division_by_scalar_exact_multiples(dtype):
    # A divisor the same in every lane is divided by as a multiplication by its f64 reciprocal and
    # corrected: exact quotients (x = k * b) are where a product can fall just short of k.
    signed = dtype == np.int32
    divisors = [3, 7, 10, 49, 98, 641, 1000003, 65537, 2, 1, 0]
    divisors += [-7, -49, -1, I32_MIN, I32_MAX] if signed else [0xFFFFFFFF, 0x80000000, 0xFFFFFFFE]
    k = np.arange(-700, 700 if signed else 700, dtype=np.int64)
    for b in divisors:
        x = (k * b).astype(np.int64)
        x = np.concatenate([x, x + 1, x - 1, ints(dtype, 300, b % 97)]).astype(dtype)
        bb = dtype(b) if signed else np.uint32(b)
        check_both(lambda a: (lax.div(a, bb), lax.rem(a, bb), a // bb, a % bb), x, exact=True)
