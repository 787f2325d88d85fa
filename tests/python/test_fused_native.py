"""Native code for fused elementwise runs (codegen/fused_native.cc): float arithmetic and vector
functions over a tile in registers, 8 f32 (4 f64) lanes at a time, or 16 (8) in zmm registers on
CPUs with AVX-512, two vectors per iteration, the rest one vector at a time under a lane mask.

Every op the generator emits runs on f32 and f64 (the integer ones on int32 and uint32, whose
runs are integer instructions on AVX2 CPUs) at sizes that take each path (runs of at least
256 elements are native code: pairs of whole vectors, a last whole vector alone, a partial one,
several tiles, a last tile of 5 elements that is only a partial vector; smaller runs stay
interpreted and are checked too), on values that include NaNs, infinities, signed zeros and
denormals; every pair of special values meets in every binary op; chains keep many values live
across vector-function calls (spills), read scalar operands and broadcast rows (softmax).
Three checks:
  * the fused steps ran as native code (the trace names them "(native code)");
  * bit for bit against Kiln's interpreted tiles (KILN_FUSED_JIT=0, in a subprocess): the code
    must compute exactly what the members' range functions compute (any NaN equals any NaN);
  * against JAX's CPU backend (tolerances below);
  * on AVX-512 machines, zmm code bit for bit against ymm code (KILN_FUSED_JIT_AVX512=0).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from native_code import cpu_flags, differing, results_with, traced_step_names

# Tiles are 1024 elements; whole iterations take two vectors, the rest goes one vector at a time:
# 264 ends on one whole ymm vector (a partial zmm one), 277 on a whole zmm vector and a partial
# one, 5003 (last tile 907) on a whole vector and a partial one.
SIZES = (1, 5, 8, 13, 264, 277, 1029, 5003)
FLOATS = ("float32", "float64")

BINARY = {
    "add": jnp.add,
    "subtract": jnp.subtract,
    "multiply": jnp.multiply,
    "divide": jnp.divide,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
}
UNARY = {
    "negate": lax.neg,
    "abs": lax.abs,
    "sqrt": lax.sqrt,
    "exp": lax.exp,
    "expm1": lax.expm1,
    "log": lax.log,
    "sin": lax.sin,
    "cos": lax.cos,
    "tan": lax.tan,
    "tanh": lax.tanh,
    "cbrt": lax.cbrt,
}
# Vector functions (SLEEF, 1 ulp) against XLA:CPU's own approximations.
FUNCTIONS = ("exp", "expm1", "log", "sin", "cos", "tan", "tanh", "cbrt")


def _chain(x, y):
    return jnp.tanh(x) * y + jnp.exp(-x * x) - jnp.sqrt(jnp.abs(y))


def _pressure(x, y):
    # 14 values live across 14 vector-function calls, then combined: more than the 13 registers.
    # (Sums, not products: XLA:CPU would contract a product and a sum into an FMA.)
    vals = [jnp.sin(x + (k + 1)) for k in range(14)]
    out = vals[0]
    for v in vals[1:]:
        out = out * 0.5 + v
    return out * y


CHAINS = {
    "chain": _chain,
    "pressure": _pressure,
    "scalar": lambda x, y: x * y[0] + jnp.exp(x - y[-1]),
    "softmax": lambda x, y: jax.nn.softmax(jnp.stack([x, y, x * y]), axis=-1),
    "mixed": lambda x, y: jnp.maximum(jnp.sqrt(jnp.abs(x * y + 1.5)) - x / (y * y + 2.0),
                                      -(x - y) * 0.5) * jnp.cos(x),
}


def values(dtype: str, n: int, seed: int, specials_too: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed * 1000 + n + len(dtype))
    dt = np.dtype(dtype)
    out = (rng.standard_normal(n) * 3).astype(dt)
    if specials_too:
        pick = rng.random(n) < 0.3
        out[pick] = rng.choice(specials(dtype), size=int(pick.sum()))
    return out


def specials(dtype: str, subnormals: bool = True) -> np.ndarray:
    dt = np.dtype(dtype)
    tiny = np.finfo(dt).smallest_subnormal if subnormals else np.finfo(dt).tiny
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, tiny, -tiny * 3,
                     np.finfo(dt).max, -np.finfo(dt).max, 0.1, 7.0, -np.nan, 100.0, 3.0], dt)


def programs(subnormals: bool = True):
    """(name -> function, inputs) per element type and size: each program's ops fuse into runs."""
    out = []
    for dt in FLOATS:
        for n in SIZES:
            a, b = values(dt, n, 1), values(dt, n, 2)
            if not subnormals:
                a, b = (np.where(np.abs(v) < np.finfo(dt).tiny, 0, v).astype(dt) for v in (a, b))
            ops = {f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x, y) * 1.0) for op, f in BINARY.items()}
            ops.update({f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x) * 1.0)
                        for op, f in UNARY.items()})
            out.append((ops, (a, b)))
            c, d = values(dt, n, 3, False), values(dt, n, 4, False)
            out.append(({f"{k}-{dt}-{n}": f for k, f in CHAINS.items()}, (c, d)))
        s = np.tile(specials(dt, subnormals), 16)  # 256 elements: native code
        pairs = {f"{op}-{dt}-pairs{k}": (lambda x, y, f=f, k=k: f(x, jnp.roll(y, k)) * 1.0)
                 for op, f in BINARY.items() for k in range(16)}
        out.append((pairs, (s, s[::-1].copy())))
    return out


INTEGERS = ("int32", "uint32")
INT_BINARY = {
    "iadd": jnp.add, "isubtract": jnp.subtract, "imultiply": jnp.multiply,
    "imaximum": jnp.maximum, "iminimum": jnp.minimum, "and": jnp.bitwise_and,
    "or": jnp.bitwise_or, "xor": jnp.bitwise_xor, "shift_left": lax.shift_left,
    "shift_right_logical": lax.shift_right_logical,
    "shift_right_arithmetic": lax.shift_right_arithmetic,
}
INT_UNARY = {"not": jnp.bitwise_not, "inegate": lax.neg}


def _threefry_like(x, y):
    # Rotations by constants, adds and xors, as JAX's threefry rounds (and splat constants).
    for r in (13, 15, 26, 6):
        x = x + y
        y = ((y << r) | (y >> (32 - r))) ^ x
    return (y >> 9) | 0x3F80


def int_values(dtype: str, n: int, seed: int) -> np.ndarray:
    """Random 32-bit values, with shift counts (0-40), -1, 0, the extremes mixed in."""
    rng = np.random.default_rng(seed * 1000 + n + len(dtype))
    info = np.iinfo(dtype)
    out = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    small = rng.random(n) < 0.4
    out[small] = rng.integers(0, 41, int(small.sum())).astype(dtype)
    pick = rng.random(n) < 0.1
    out[pick] = rng.choice(np.array([info.min, info.max, 0, 1, 31, 32, -1 if info.min else 7],
                                    dtype), size=int(pick.sum()))
    return out


def int_programs():
    """Integer runs (s32 / u32 members are integer instructions in native code on AVX2 CPUs)."""
    out = []
    for dt in INTEGERS:
        for n in SIZES:
            a, b = int_values(dt, n, 1), int_values(dt, n, 2)
            ops = {f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x, y) ^ 1) for op, f in INT_BINARY.items()}
            ops.update({f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x) + 1)
                        for op, f in INT_UNARY.items()})
            ops[f"threefry_like-{dt}-{n}"] = _threefry_like
            out.append((ops, (a, b)))
    return out


def run_all(device, subnormals: bool = True) -> dict[str, np.ndarray]:
    results = {}
    with jax.enable_x64(True):
        for ops, args in programs(subnormals) + int_programs():
            placed = [jax.device_put(a, device) for a in args]
            got = jax.jit(lambda x, y, ops=ops: {k: f(x, y) for k, f in ops.items()})(*placed)
            results.update({k: np.asarray(v) for k, v in got.items()})
    return results


TRACED = """
import jax, jax.numpy as jnp, numpy as np
x = jax.device_put(np.linspace(-3, 3, 4099, dtype=np.float32), jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(lambda x: jnp.tanh(x) * x + jnp.exp(-x * x) - jnp.sqrt(jnp.abs(x)))(x))
jax.block_until_ready(jax.jit(lambda x: jax.nn.softmax(x.reshape(4099, 1) * x[:16], axis=-1))(x))
u = jax.device_put(np.arange(4099, dtype=np.uint32), jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(lambda u: ((u << 13) | (u >> 19)) ^ (u * 7 + 3))(u))
"""


@pytest.mark.requires_kiln
def test_fused_runs_are_native_code(tmp_path):
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test checks native code is used"
    names = traced_step_names(TRACED, tmp_path)
    fused = [n for n in names if n.startswith("fused")]
    # The chain; the product of broadcasts, its row maximum and x - max -> exp in one loop (two
    # pieces of native code around the reduction); the row sum ahead of e / sum.
    # The integer rotate-and-mix: one run of integer instructions (on AVX2 CPUs).
    assert len(fused) == 4 and all("(native code)" in n for n in fused[:3]), names
    assert ("(native code)" in fused[3]) == ("avx2" in cpu_flags()), names
    assert "around a row reduction" in fused[1], names
    assert "after a row reduction" in fused[2], names


@pytest.mark.requires_kiln
def test_native_tiles_match_the_interpreter_bit_for_bit(tmp_path):
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test compares native code"
    interpreted = results_with(__file__, "KILN_FUSED_JIT", tmp_path)
    differ = differing(run_all(jax.devices("kiln")[0]), interpreted)
    assert not differ, differ[:20]


@pytest.mark.requires_kiln
@pytest.mark.skipif(not {"avx512f", "avx512dq"} <= cpu_flags(), reason="zmm code needs a CPU with AVX512F and AVX512DQ")
def test_zmm_tiles_match_ymm_tiles_bit_for_bit(tmp_path):
    assert os.environ.get("KILN_FUSED_JIT_AVX512", "1") != "0", "this test compares zmm code"
    narrow = results_with(__file__, "KILN_FUSED_JIT_AVX512", tmp_path)
    differ = differing(run_all(jax.devices("kiln")[0]), narrow)
    assert not differ, differ[:20]


@pytest.mark.requires_kiln
def test_native_tiles_match_the_cpu_backend():
    kiln = run_all(jax.devices("kiln")[0], subnormals=False)
    cpu = run_all(jax.devices("cpu")[0], subnormals=False)
    for name, k in kiln.items():
        c = cpu[name]
        assert k.dtype == c.dtype, name
        if k.dtype.kind in "iu":  # integer runs: exact
            np.testing.assert_array_equal(k, c, err_msg=name)
            continue
        tiny = np.finfo(k.dtype).tiny
        op = name.split("-")[0]
        if op in FUNCTIONS or op in CHAINS:
            # SLEEF's 1-ulp functions against XLA:CPU's approximations; in chains XLA:CPU also
            # contracts a * b + c into FMAs.
            f32 = k.dtype == np.float32
            if op in CHAINS:
                rtol = atol = 4e-6 if f32 else 1e-13
            else:
                rtol, atol = (4e-6 if f32 else 1e-13), tiny
            np.testing.assert_allclose(k, c, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
        else:
            # The same IEEE operations (XLA:CPU flushes subnormal results, Kiln keeps them).
            np.testing.assert_allclose(k, c, rtol=0, atol=tiny, equal_nan=True, err_msg=name)
            if op in ("maximum", "minimum", "negate", "abs"):
                num = ~np.isnan(c)
                np.testing.assert_array_equal(np.signbit(k[num]), np.signbit(c[num]), err_msg=name)


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all(jax.devices("kiln")[0]))
