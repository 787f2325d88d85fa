"""Native loop code (codegen/native_loop.cc): loop conditions and bodies run as x86-64
code generated at compile time, with small elementwise steps as instructions.

Every op the generator emits, on each element type it handles and on sizes that take each of its
paths (one element, xmm and ymm chunks with a scalar tail, element-by-element up to 16, calls
beyond), and small data movement (slices, concatenates, broadcasts: inline copies), runs inside
a loop body on values that include NaNs, infinities, signed zeros, denormals
and integer extremes. Two checks:
  * bit for bit against Kiln's interpreter of the same loop (KILN_LOOP_JIT=0, in a subprocess):
    the generated code must compute exactly what the range functions compute (signed zeros
    included; any NaN equals any NaN, see _bits);
  * against JAX's CPU backend (tolerances.py; integers, predicates and conversions exact).
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from native_code import differing, results_with

SIZES = (1, 6, 13, 16, 40)
FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def values(dtype: str, n: int, seed: int, subnormals: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed * 1000 + n + len(dtype))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(n) < 0.5
    if dt.kind == "f":
        out = (rng.standard_normal(n) * 4).astype(dt)
        pick = rng.random(n) < 0.6
    else:
        info = np.iinfo(dt)
        out = rng.integers(max(info.min, -100), min(info.max, 100), size=n, endpoint=True).astype(dt)
        pick = rng.random(n) < 0.4
    out[pick] = rng.choice(specials(dtype, subnormals), size=int(pick.sum()))
    return out


def specials(dtype: str, subnormals: bool = True) -> np.ndarray:
    """16 values of `dtype` at the edges of its arithmetic."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        # XLA:CPU flushes subnormals to zero; Kiln keeps them (compared with the interpreter only).
        tiny = np.finfo(dt).smallest_subnormal if subnormals else np.finfo(dt).tiny
        nan_payload = np.array([0x7FC00123 if dt == np.float32 else 0x7FF8000000000123],
                               np.uint32 if dt == np.float32 else np.uint64).view(dt)[0]
        return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, tiny, -tiny * 3,
                         np.finfo(dt).max, -np.finfo(dt).max, 0.1, 7.0, -np.nan, nan_payload, 3.0],
                        dt)
    info = np.iinfo(dt)
    low = [info.min, info.min + 1, -1, -2] if info.min < 0 else [4, 5, 6, 7]
    return np.array(low + [info.max, info.max - 1, 0, 1, 2, 3, 8, 9, 10, 11, 100, 127], dt)


BINARY = {
    "add": (jnp.add, FLOATS + INTS + ("bool",)),
    "subtract": (jnp.subtract, FLOATS + INTS),
    "multiply": (jnp.multiply, FLOATS + INTS + ("bool",)),
    "divide": (lax.div, FLOATS + ("int32",)),  # integer division stays a call
    "maximum": (jnp.maximum, FLOATS + INTS + ("bool",)),
    "minimum": (jnp.minimum, FLOATS + INTS + ("bool",)),
    "and": (jnp.bitwise_and, INTS + ("bool",)),
    "or": (jnp.bitwise_or, INTS + ("bool",)),
    "xor": (jnp.bitwise_xor, INTS + ("bool",)),
    "eq": (lax.eq, FLOATS + INTS + ("bool",)),
    "ne": (lax.ne, FLOATS + INTS + ("bool",)),
    "lt": (lax.lt, FLOATS + INTS),
    "le": (lax.le, FLOATS + INTS),
    "gt": (lax.gt, FLOATS + INTS),
    "ge": (lax.ge, FLOATS + INTS),
    "select": (lambda a, b: lax.select(a > b, b, a), FLOATS + INTS),
    "pow": (lax.pow, ("float32",)),  # a call in the generated code
}
UNARY = {
    "negate": (lax.neg, FLOATS + INTS),
    "abs": (lax.abs, FLOATS + ("int32",)),  # integer abs stays a call
    "sqrt": (lax.sqrt, FLOATS),
    "not": (lax.bitwise_not, INTS + ("bool",)),
    "exp": (lax.exp, ("float32", "float64")),  # a vector function (one element or a register)
    "sin": (lax.sin, FLOATS),
    # Whole-array reductions: inline up to 16 elements (Direct::reduce_all), calls beyond.
    "sum": (jnp.sum, FLOATS),
    "prod": (jnp.prod, FLOATS),
    "max": (jnp.max, FLOATS),
    "min": (jnp.min, FLOATS),
}
# Vector functions: on one element, an xmm and a ymm register of lanes Kiln's own f32 exp and tanh
# are emitted inline (codegen/native_math.h) and the others called; beyond that the array form.
VECTOR = {"exp": lax.exp, "tanh": lax.tanh, "sin": lax.sin}
VECTOR_SIZES = {"float32": (1, 4, 8, 11), "float64": (1, 2, 4, 5)}
MOVES = {
    "slice-rows": lambda a: a[1:],
    "slice-strided": lambda a: a[:, ::2],
    "slice-element": lambda a: a[1, 3],
    "concatenate": lambda a: jnp.concatenate([a, a[::-1], a[:1]]),
    "concatenate-columns": lambda a: jnp.concatenate([a[:, 3:], a[:, :3]], axis=1),
    "stack-scalars": lambda a: jnp.stack([a[0, 0], a[2, 4], a[1, 1]]),
    # Pieces of 4, 8 and 12 bytes go through the register cache (CopyFloat), whatever the type.
    "pairs": lambda a: jnp.concatenate([a[0, 1:3], a[2, 3:5], a[1, :1], a[1, 2:5]]),
    "broadcast": lambda a: jnp.broadcast_to(a[0], (2, 3, 5)),
    # One element (or one pair) copied to consecutive places: a register broadcast and wide
    # stores (NativeEmitter::Splat), with 16-, 8- and 4-byte tails.
    "splat-7": lambda a: jnp.broadcast_to(a[1, 2], (7,)) + 0 * a[0, 0],
    "splat-rows": lambda a: jnp.broadcast_to(a[:, 1:2], (3, 9)),
    "splat-pairs": lambda a: jnp.broadcast_to(a[0, :2], (4, 2)),
    "splat-13": lambda a: jnp.broadcast_to(a[2, 4], (13,)),
    "transpose": lambda a: a.T,
    "pad": lambda a: jnp.pad(a, ((1, 0), (0, 2))),
    "roll": lambda a: jnp.roll(a, 2, axis=1),
    "splat": lambda a: a * a[1, 2] + a[0, 0],  # one-element broadcasts inside fused steps
}
def _rk4(y, h):
    def f(y):
        return jnp.stack([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1],
                          y[0] * y[1] - 8.0 / 3.0 * y[2]])
    k1 = f(y)
    k2 = f(y + h / 2 * k1)
    k3 = f(y + h / 2 * k2)
    k4 = f(y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _gathered(x, y, n):
    """Vector ops on arrays built from n scalars (jnp.array([...]) in a loop body): the elements,
    stored one at a time, are read back as one 16- or 32-byte vector, composed from the registers
    holding them (NativeEmitter::ComposeVector), some elements cached and some loaded."""
    n = min(n, x.shape[0] - 1)
    computed = jnp.stack([x[k] * y[k] - x[k + 1] for k in range(n)])
    mixed = jnp.stack([x[0] * 2.0] + [y[k] for k in range(1, n)])
    return computed * mixed + computed - jnp.stack([x[n - 1 - k] for k in range(n)])


# Chains of small steps whose intermediates live in the loop's frame and in fused steps'
# temporaries, read back from registers (the register cache) and addressed without pointers.
CHAINS = {
    "gathered2": lambda x, y: _gathered(x, y, 2),
    "gathered4": lambda x, y: _gathered(x, y, 4),
    "gathered8": lambda x, y: _gathered(x, y, 8),
    "rk4": lambda x, y: _rk4(x[:3], 0.01),
    "mixed": lambda x, y: jnp.maximum(jnp.sqrt(jnp.abs(x * y + 1.5)) - x / (y * y + 2.0),
                                      -(x - y) * 0.5) * jnp.where(x > y, x, y + 1.0),
    "splat": lambda x, y: x * y[0] + jnp.maximum(x, y[1]) - y[2] * jnp.sin(y[3]),
    "long": lambda x, y: functools.reduce(lambda a, k: a * 0.75 + y * k - a / 3.0, range(12), x),
    # A scan whose step returns its new carry twice: a carry copy and a dynamic_update_slice.
    "scan": lambda x, y: lax.scan(lambda c, _: (_rk4(c, 0.01),) * 2, x[:3] * y[:3], None, 3)[1],
}
CONVERT_TYPES = FLOATS + ("int8", "int32", "int64", "uint8", "uint32", "uint64", "bool")


def _updated(shape, update_shape, index_dtype="int32", in_place=True, axis=0):
    """A 9-trip loop writing update rows into a zero-initialised carry of `shape` with
    dynamic_update_slice at start i * 5 - 20 (of `index_dtype`, along `axis`; the other starts 0):
    negative, in range and past the end, so clamped at both ends (unsigned: wrapped, so clamped
    to the end). In place when nothing else reads the carry; otherwise another step reads it too
    and the operand is copied first."""
    def run(a, b):
        upd = jnp.resize(a, update_shape)

        def body(i, c):
            start = (i * 5 - 20).astype(index_dtype)
            zero = jnp.zeros((), index_dtype)
            starts = tuple(start if d == axis else zero for d in range(len(shape)))
            u = upd * (i + 1).astype(upd.dtype) if upd.dtype.kind == "f" else upd + i.astype(upd.dtype)
            new = lax.dynamic_update_slice(c[0], u, starts)
            return (new, c[1] + c[0].ravel()[:1]) if not in_place else (new, c[1])

        init = (jnp.zeros(shape, a.dtype), jnp.zeros((1,), a.dtype))
        out, extra = lax.fori_loop(0, 9, body, init)
        return out if in_place else (out, extra)[0]
    return run


# dynamic_update_slice in loop bodies (Direct::update: inline when its update is one contiguous
# run of up to 256 bytes; a call otherwise), one dtype each.
UPDATES = {
    "row": lambda: _updated((9, 3), (1, 3)),  # 12 bytes of f32: through the register cache
    "element": lambda: _updated((20,), (1,)),
    "rows2": lambda: _updated((9, 3), (2, 3)),
    "wide": lambda: _updated((6, 40), (1, 40)),  # 32-byte chunks, then the tail
    "too-wide": lambda: _updated((4, 80), (1, 80)),  # past the inline limit: a call
    "block": lambda: _updated((5, 5), (2, 2)),  # not contiguous: a call
    "column": lambda: _updated((4, 6), (4, 1), axis=1),  # a column, not contiguous: a call
    "copied": lambda: _updated((9, 3), (1, 3), in_place=False),
}
UPDATE_INDEX_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _loop(ops, args):
    """Runs every op of `ops` (name -> function of args) once per iteration of a 2-trip loop."""
    def body(i, c):
        return c[0], {name: fn(*c[0]) for name, fn in ops.items()}
    init = {name: jnp.zeros_like(fn(*args)) for name, fn in ops.items()}
    return lax.fori_loop(0, 2, body, (args, init))[1]


def cases(subnormals: bool = True):
    """(size-and-type tag, {op: function}, inputs): one loop program per element type and size."""
    out = []
    for dt, sizes in VECTOR_SIZES.items():
        for size in sizes:
            a = values(dt, size, 8, subnormals)
            b = values(dt, size, 9, subnormals)
            out.append(({f"vector-{op}-{dt}-{size}": (lambda x, y, fn=fn: fn(x))
                         for op, fn in VECTOR.items()}, (a, b)))
    for size in SIZES:
        for dt in FLOATS + INTS + ("bool",):
            a = values(dt, size, 1, subnormals)
            b = values(dt, size, 2, subnormals)
            ops = {f"{op}-{dt}-{size}": (lambda x, y, fn=fn: fn(x, y))
                   for op, (fn, dtypes) in BINARY.items() if dt in dtypes}
            ops.update({f"{op}-{dt}-{size}": (lambda x, y, fn=fn: fn(x))
                        for op, (fn, dtypes) in UNARY.items() if dt in dtypes})
            out.append((ops, (a, b)))
        if size in (6, 13):
            for dt in FLOATS:
                a = values(dt, size, 6, subnormals)
                b = values(dt, size, 7, subnormals)
                out.append(({f"chain-{op}-{dt}-{size}": fn for op, fn in CHAINS.items()}, (a, b)))
        if size != 16:
            continue
        # Data movement (slices, concatenates, broadcasts, transposes, pads: Direct::pieces).
        for dt in ("float32", "int8", "int32", "float64"):
            a = values(dt, 15, 5, subnormals).reshape(3, 5)
            ops = {f"{op}-{dt}": fn for op, fn in MOVES.items()}
            out.append((ops, (a,)))
        for dt in ("float32", "float64", "int8", "float16", "int32"):
            a = values(dt, 7, 8, subnormals)
            ops = {f"update-{name}-{dt}": make() for name, make in UPDATES.items()}
            if dt == "float32":
                ops.update({f"update-row-{dt}-start-{it}": _updated((9, 3), (1, 3), it)
                            for it in UPDATE_INDEX_TYPES})
            out.append((ops, (a, a)))
        # Every pair of special values meets in every binary op: b rotated by each amount.
        for dt in FLOATS + INTS:
            a = specials(dt, subnormals)
            ops = {f"{op}-{dt}-pairs{k}": (lambda x, y, fn=fn, k=k: fn(x, jnp.roll(y, k)))
                   for op, (fn, dtypes) in BINARY.items() if dt in dtypes for k in range(16)}
            out.append((ops, (a, a[::-1].copy())))
        for src in CONVERT_TYPES:
            a = values(src, size, 4, subnormals)
            if np.dtype(src).kind == "f":
                a = np.nan_to_num(a, posinf=0, neginf=0)  # float -> int of these is not defined
            ops = {f"convert-{src}-{dst}-{size}": (lambda x, dst=dst: x.astype(dst))
                   for dst in CONVERT_TYPES if dst != src}
            out.append((ops, (a,)))
    return out


def run_all(device, subnormals: bool = True) -> dict[str, np.ndarray]:
    results = {}
    with jax.enable_x64(True):
        for ops, args in cases(subnormals):
            placed = [jax.device_put(a, device) for a in args]
            got = jax.jit(lambda *a, ops=ops: _loop(ops, a))(*placed)
            results.update({name: np.asarray(v) for name, v in got.items()})
    return results


@pytest.mark.requires_kiln
def test_native_code_matches_the_interpreter_bit_for_bit(tmp_path):
    assert os.environ.get("KILN_LOOP_JIT", "1") != "0", "this test compares native code to the interpreter"
    interpreted = results_with(__file__, "KILN_LOOP_JIT", tmp_path)
    differ = differing(run_all(jax.devices("kiln")[0]), interpreted)
    assert not differ, differ[:20]


@pytest.mark.requires_kiln
def test_native_code_matches_the_cpu_backend():
    kiln = run_all(jax.devices("kiln")[0], subnormals=False)
    cpu = run_all(jax.devices("cpu")[0], subnormals=False)
    for name, k in kiln.items():
        c = cpu[name]
        assert k.dtype == c.dtype, name
        if k.dtype.kind == "f" and name.startswith(
                ("pow-", "exp-", "sin-", "sum-", "prod-", "chain-", "splat-", "vector-")):
            # Library functions, and XLA:CPU contracting a * b + c into an FMA.
            np.testing.assert_allclose(k, c, rtol=2e-6, atol=np.finfo(k.dtype).tiny,
                                       equal_nan=True, err_msg=name)
        elif k.dtype.kind == "f":
            # Same IEEE operations: equal values, NaN where the CPU backend has NaN; XLA:CPU
            # flushes subnormal results to zero, Kiln does not (either way, below the smallest
            # normal number).
            np.testing.assert_allclose(k, c, rtol=0, atol=np.finfo(k.dtype).tiny, equal_nan=True,
                                       err_msg=name)
            if name.startswith(("maximum-", "minimum-", "negate-", "abs-", "select-")):
                # Signed zeros as XLA:CPU gives them (which NaN a NaN result is may differ).
                num = ~np.isnan(c)
                np.testing.assert_array_equal(np.signbit(k[num]), np.signbit(c[num]), err_msg=name)
        else:
            np.testing.assert_array_equal(k, c, err_msg=name)


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all(jax.devices("kiln")[0]))
