"""Integer loops whose `//` and `%` divide by constants (compiler/program_builder.cc folds the
constants a loop captures and jnp's scalar `_where` on the divisor; compiler/fusion.cc marks splat
constant inputs; codegen/native_int32.cc divides by a known power of two with shifts and by other
known divisors with a multiply-high). Against JAX's CPU backend, bit for bit: `while_loop`s whose
condition reads the carry, `fori_loop`s, on int32 and uint32 carries holding INT_MIN, INT_MAX,
-1, 0 and multiples of the divisors; shifts by constants of 32 and more; a complex escape-time
loop with infinite and NaN points. And the trace of the collatz loop: its body is one native run,
the divisor's scalar steps gone.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import jax.numpy as jnp
from jax import lax

from conftest import check_both
from native_code import cpu_flags, traced_step_names

I32_MIN, I32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def edged(dtype, n: int, seed: int, divisors=()) -> np.ndarray:
    """Random values of `dtype` over its whole range, with its extremes, -1, 0, 1 and multiples
    of `divisors` (and their neighbours) mixed in."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    out = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64)
    edges = [0, 1, info.max, info.min, info.max - 1, info.min + 1] + ([-1] if info.min else [])
    for d in divisors:
        k = rng.integers(-1000, 1000, size=4)
        edges += [int(v) for v in np.concatenate([k * d - 1, k * d, k * d + 1])
                  if info.min <= v <= info.max]
    pick = rng.random(n) < 0.4
    out[pick] = rng.choice(np.array(edges, dtype=np.int64), size=int(pick.sum()))
    return out.astype(dtype)


S32_DIVISORS = (1, 2, 3, 4, 7, 10, 16, 641, 1 << 30, I32_MAX, -1, -2, -10, I32_MIN)
U32_DIVISORS = (1, 2, 3, 10, 1 << 16, 1009, 1 << 31, (1 << 31) + 1, 0xFFFFFFFF)


@pytest.mark.parametrize("d", S32_DIVISORS)
def test_while_loop_floor_divide_and_mod_by_constant_int32(d):
    # Each iteration: x // d and x % d (jnp's floor forms) of the carry; the condition reads the
    # carry (a counter and whether any lane changed).
    def run(x):
        def cond(s):
            x, prev, i = s
            return jnp.logical_and(i < 6, jnp.any(x != prev))

        def body(s):
            x, _, i = s
            return x // d + x % d + (x & 3), x, i + 1

        return lax.while_loop(cond, body, (x, x + 1, 0))

    check_both(run, edged(np.int32, 1000, d % 1000 + 1, [abs(d) if d != I32_MIN else 7]),
               exact=True)


@pytest.mark.parametrize("d", U32_DIVISORS)
def test_fori_loop_divide_and_remainder_by_constant_uint32(d):
    dd = np.uint32(d)

    def run(x):
        def body(i, h):
            return (h // dd) * np.uint32(2654435761) + h % dd + (h >> 7) + i.astype(jnp.uint32)

        return lax.fori_loop(0, 5, body, x)

    check_both(run, edged(np.uint32, 1031, d % 997 + 3, [d]), exact=True)


def test_digit_sum_while_loop_with_negative_and_extreme_values():
    # Negative lanes floor toward -1 and stay there; positive ones reach 0, ending the loop.
    def run(n):
        def cond(s):
            return jnp.any(s[0] > 0)

        def body(s):
            x, total = s
            return x // 10, total + x % 10

        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))

    check_both(run, edged(np.int32, 4096, 11, [10, 100]), exact=True)


@pytest.mark.parametrize("n", [257, 1000, 70000])
def test_division_by_every_constant_kind_outside_loops(n):
    # 70000 lanes: past the folding limit, the divisor stays a broadcast of a scalar constant.
    x = edged(np.int32, n, 13, [3, 7, 10, 641])

    def f(a):
        return [a // d for d in S32_DIVISORS] + [a % d for d in S32_DIVISORS] + \
            [lax.div(a, np.int32(d)) for d in S32_DIVISORS] + \
            [lax.rem(a, np.int32(d)) for d in S32_DIVISORS]

    check_both(f, x, exact=True)


def test_shifts_by_constants_past_the_width_in_a_loop():
    def run(x):
        def body(i, h):
            return ((h << 33) ^ (h >> 40) ^ lax.shift_right_logical(h, 32) ^ (h << 31)
                    ^ lax.shift_right_arithmetic(h, 35) ^ (h >> 5)) + i

        return lax.fori_loop(0, 7, body, x)

    check_both(run, edged(np.int32, 1031, 17), exact=True)


def test_escape_time_loop_with_infinite_and_nan_points():
    rng = np.random.default_rng(19)
    re = rng.uniform(-2.0, 0.6, 1024).astype(np.float32)
    im = rng.uniform(-1.2, 1.2, 1024).astype(np.float32)
    c = (re + 1j * im).astype(np.complex64)
    c[:8] = [np.inf, -np.inf, 1j * np.inf, np.nan, complex(np.nan, 1.0), complex(1.0, np.nan),
             complex(np.inf, np.nan), 3.0e38 + 3.0e38j]

    def escape(c):
        def body(i, state):
            z, count = state
            z = jnp.where(jnp.abs(z) <= 2.0, z * z + c, z)
            return z, count + (jnp.abs(z) <= 2.0)

        return lax.fori_loop(0, 40, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]

    check_both(escape, c, exact=True)


COLLATZ = """
import jax, jax.numpy as jnp, numpy as np
from jax import lax
def steps(n):
    def body(s):
        x, count = s
        done = x == 1
        x = jnp.where(done, x, jnp.where(x % 2 == 0, x // 2, 3 * x + 1))
        return x, count + (~done).astype(jnp.int32)
    return lax.while_loop(lambda s: jnp.any(s[0] != 1), body, (n, jnp.zeros_like(n)))[1]
x = jax.device_put(np.arange(1, 1025, dtype=np.int32), jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(steps)(x))
"""


@pytest.mark.requires_kiln
def test_collatz_body_is_one_native_run(tmp_path):
    # The divisor 2 of `%` and `//` is a constant the loop captures: its compare, select and sign
    # fold at compile time, so an iteration is the condition's two steps and one fused run.
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test checks native code is used"
    names = traced_step_names(COLLATZ, tmp_path)
    body = [n for n in names if "while/cond" not in n and not n.startswith("stablehlo.while")
            and "dynamic_slice" not in n]
    fused = [n for n in body if n.startswith("fused")]
    assert fused and len(fused) == len(body), body
    if {"avx2", "bmi2"} <= cpu_flags():
        assert all("(native code)" in n for n in fused), fused
