"""bf16 and f16 programs as native code (codegen/native_half.h): fused runs over 16-bit floats
compute in f32 lanes (loads widen, every member rounds its result to its type, stores narrow),
and 16-bit row maxima reduce blocks of widened rows (kernels/reduction.cc).

Programs: every arithmetic op and vector function on bf16 and f16, chains (gelu, softmax, a
layernorm), conversions to and from f32 with f32 members between, sums and means (which JAX
computes in f32) and row maxima, at sizes that take each path of the code (whole vector pairs, a
partial vector, several tiles); values include NaNs with payloads, infinities, signed zeros,
subnormals and rounding ties (sums exactly halfway between two 16-bit values, both parities).
16-bit dots widen operands that BLAS can read in place as stored and round the f32 products once
(kernels/dot.cc). Checks:
  * gelu's run is native code (the trace names it "(native code)");
  * bit for bit against Kiln's interpreted tiles (KILN_FUSED_JIT=0, in a subprocess);
  * on AVX-512 CPUs, zmm code against ymm code (KILN_FUSED_JIT_AVX512=0), and on AVX-512 BF16
    CPUs, rounding by vcvtneps2bf16 against rounding by integer instructions
    (KILN_FUSED_JIT_AVX512BF16=0), bit for bit;
  * against JAX's CPU backend, without subnormal operands and with subnormal results read as
    zeros (XLA:CPU flushes both to zero, Kiln keeps them): arithmetic ops and conversions bit for bit (XLA:CPU also rounds each bf16/f16 op's
    f32 result to its type), vector functions and chains within one unit in the last place of the
    16-bit type (their f32 functions differ), reductions no further from float64 sums of the
    same 16-bit terms than XLA:CPU's results (or one unit in the last place), the chains around
    sums (softmax, layernorm) within 4 units in the last place of the largest result.
"""

from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from native_code import cpu_flags, results_with, traced_step_names

HALVES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
MANTISSA = {"bfloat16": 7, "float16": 10}
# 264 ends on one whole ymm vector (a partial zmm one), 277 on a partial one, 5003 spans tiles.
SIZES = (5, 264, 277, 1029, 5003)

BINARY = {"add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply,
          "divide": jnp.divide, "maximum": jnp.maximum, "minimum": jnp.minimum}
UNARY = {"negate": lax.neg, "abs": lax.abs, "sqrt": lax.sqrt}
FUNCTIONS = {"exp": lax.exp, "tanh": lax.tanh, "log": lax.log, "sin": lax.sin}


def _layernorm(x, y):
    h = x.reshape(-1, 1) * y[:16] + y[:16]
    mu = h.mean(-1, keepdims=True)
    var = ((h - mu) ** 2).mean(-1, keepdims=True)
    return (h - mu) * lax.rsqrt(var + 1e-5)


CHAINS = {
    "gelu": lambda x, y: jax.nn.gelu(x),
    "softmax": lambda x, y: jax.nn.softmax(jnp.stack([x, y, x * y]), axis=-1),
    "layernorm": _layernorm,
    "through_f32": lambda x, y: (x.astype(jnp.float32) * 1.5 - jnp.tanh(y.astype(jnp.float32)))
    .astype(x.dtype) * y,
    "mixed": lambda x, y: jnp.maximum(jnp.sqrt(jnp.abs(x * y + 1.5)) - x / (y * y + 2),
                                      -(x - y) * 0.5),
}
REDUCTIONS = {
    "sum_rows": lambda x, y: jnp.sum(x.reshape(-1, 1) * y[:16], axis=1),
    "mean_axis0": lambda x, y: jnp.mean(x.reshape(-1, 1) * y[:16], axis=0),
    "max_rows": lambda x, y: jnp.max(x.reshape(-1, 1) * y[:16], axis=1),
    "min_rows": lambda x, y: jnp.min(x.reshape(-1, 1) - y[:16], axis=1),
}
EXACT = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs", "sqrt",
         "mixed", "convert", "ties")


def specials(dtype: str, subnormals: bool) -> np.ndarray:
    dt = HALVES[dtype]
    info = ml_dtypes.finfo(dt)
    tiny = info.smallest_subnormal if subnormals else info.tiny
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, float(tiny), -3 * float(tiny),
                     float(info.max), -float(info.max), 0.1, 7.0, -np.nan, 100.0, 3.0], dt)


def values(dtype: str, n: int, seed: int, subnormals: bool, specials_too: bool = True):
    rng = np.random.default_rng(seed * 1000 + n + len(dtype))
    out = (rng.standard_normal(n) * 3).astype(np.float32)
    if subnormals:  # products of these reach the f32 subnormals, and 16-bit subnormals
        small = rng.random(n) < 0.1
        out[small] *= 2.0 ** (-120 if dtype == "bfloat16" else -13)
    out = out.astype(HALVES[dtype])
    if specials_too:
        pick = rng.random(n) < 0.2
        out[pick] = rng.choice(specials(dtype, subnormals), size=int(pick.sum()))
    if not subnormals:
        f = out.astype(np.float32)
        out[np.abs(f) < float(ml_dtypes.finfo(HALVES[dtype]).tiny)] = 0
    return out


def ties(dtype: str, n: int):
    """x + y exactly halfway between two 16-bit values, the lower one even and odd in turn."""
    m = MANTISSA[dtype]
    k = np.arange(n) % (1 << m)
    x = (1.0 + k * 2.0 ** -m).astype(HALVES[dtype])
    y = np.full(n, 2.0 ** -(m + 1), HALVES[dtype])
    return x, y


def programs(subnormals: bool):
    out = []
    for dt in HALVES:
        for n in SIZES:
            a, b = values(dt, n, 1, subnormals), values(dt, n, 2, subnormals)
            ops = {f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x, y) * 1) for op, f in BINARY.items()}
            ops.update({f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x) * 1) for op, f in UNARY.items()})
            ops.update({f"{op}-{dt}-{n}": (lambda x, y, f=f: f(x) * 1)
                        for op, f in FUNCTIONS.items()})
            ops[f"convert-{dt}-{n}"] = lambda x, y: ((x.astype(jnp.float32) * 3.0)
                                                     .astype(x.dtype) + y)
            out.append((ops, (a, b)))
            c, d = values(dt, n, 3, subnormals, False), values(dt, n, 4, subnormals, False)
            chains = {f"{k}-{dt}-{n}": f for k, f in {**CHAINS, **REDUCTIONS}.items()}
            out.append((chains, (c, d)))
            out.append(({f"ties-{dt}-{n}": lambda x, y: (x + y) * 1}, ties(dt, n)))
        s = np.tile(specials(dt, subnormals), 16)  # 256 elements: every pair meets
        pairs = {f"{op}-{dt}-pairs{k}": (lambda x, y, f=f, k=k: f(x, jnp.roll(y, k)) * 1)
                 for op, f in BINARY.items() for k in range(16)}
        out.append((pairs, (s, s[::-1].copy())))
    return out


def run_all(device, subnormals: bool = True) -> dict[str, np.ndarray]:
    results = {}
    for ops, args in programs(subnormals):
        placed = [jax.device_put(a, device) for a in args]
        got = jax.jit(lambda x, y, ops=ops: {k: f(x, y) for k, f in ops.items()})(*placed)
        results.update({k: np.asarray(v).astype(np.float32) for k, v in got.items()})
    return results


def canonical(x: np.ndarray) -> bytes:
    x = np.array(x, np.float32)
    x[np.isnan(x)] = np.nan  # which NaN operand an op returns is not fixed
    return x.tobytes()


def differing(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> list[str]:
    assert set(a) == set(b)
    return [k for k in a if canonical(a[k]) != canonical(b[k])]


TRACED = """
import jax, numpy as np, ml_dtypes
x = jax.device_put(np.linspace(-3, 3, 4099).astype(ml_dtypes.bfloat16), jax.devices("kiln")[0])
jax.block_until_ready(jax.jit(jax.nn.gelu)(x))
"""


@pytest.mark.requires_kiln
def test_gelu_bf16_is_one_native_run(tmp_path):
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test checks native code is used"
    fused = [n for n in traced_step_names(TRACED, tmp_path) if n.startswith("fused")]
    assert len(fused) == 1, fused
    assert ("(native code)" in fused[0]) == ("avx2" in cpu_flags()), fused


@pytest.mark.requires_kiln
def test_half_tiles_match_the_interpreter_bit_for_bit(tmp_path):
    assert os.environ.get("KILN_FUSED_JIT", "1") != "0", "this test compares native code"
    differ = differing(run_all(jax.devices("kiln")[0]),
                       results_with(__file__, "KILN_FUSED_JIT", tmp_path))
    assert not differ, differ[:20]


@pytest.mark.requires_kiln
@pytest.mark.skipif(not {"avx512f", "avx512dq"} <= cpu_flags(), reason="zmm code needs AVX-512")
def test_half_zmm_tiles_match_ymm_tiles_bit_for_bit(tmp_path):
    differ = differing(run_all(jax.devices("kiln")[0]),
                       results_with(__file__, "KILN_FUSED_JIT_AVX512", tmp_path))
    assert not differ, differ[:20]


@pytest.mark.requires_kiln
@pytest.mark.skipif("avx512_bf16" not in cpu_flags(), reason="vcvtneps2bf16 needs AVX512_BF16")
def test_bf16_instruction_rounding_matches_integer_rounding(tmp_path):
    differ = differing(run_all(jax.devices("kiln")[0]),
                       results_with(__file__, "KILN_FUSED_JIT_AVX512BF16", tmp_path))
    assert not differ, differ[:20]


def _ulp(c: np.ndarray, dtype: str) -> np.ndarray:
    """One unit in the last place of the 16-bit type at |c| (its subnormal step below)."""
    info = ml_dtypes.finfo(HALVES[dtype])
    mag = np.maximum(np.abs(c), float(info.tiny))
    return np.exp2(np.floor(np.log2(mag)) - MANTISSA[dtype])


def _reduction_reference(op: str, dtype: str, n: int) -> np.ndarray:
    """REDUCTIONS[op] on programs()' inputs: the 16-bit terms, summed in float64, rounded."""
    dt = HALVES[dtype]
    x = values(dtype, n, 3, False, False).astype(np.float32).reshape(-1, 1)
    y = values(dtype, n, 4, False, False).astype(np.float32)[:16]
    terms = ((x - y) if op == "min_rows" else (x * y)).astype(dt).astype(np.float64)
    out = {"sum_rows": lambda t: t.sum(1), "mean_axis0": lambda t: t.mean(0),
           "max_rows": lambda t: t.max(1), "min_rows": lambda t: t.min(1)}[op](terms)
    return _flushed(out.astype(dt).astype(np.float32), dtype)


def _flushed(x: np.ndarray, dtype: str) -> np.ndarray:
    """x with subnormal values as signed zeros, as XLA:CPU makes results; also the smallest
    normal, which is what Kiln rounds an f32 subnormal just below it to, where XLA:CPU flushed
    that f32 result first."""
    tiny = float(ml_dtypes.finfo(HALVES[dtype]).tiny)
    return np.where(np.abs(x) <= tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


@pytest.mark.requires_kiln
def test_half_programs_match_the_cpu_backend():
    kiln = run_all(jax.devices("kiln")[0], subnormals=False)
    cpu = run_all(jax.devices("cpu")[0], subnormals=False)
    for name, k in kiln.items():
        op, dtype = name.split("-")[:2]
        k, c = _flushed(k, dtype), _flushed(cpu[name], dtype)
        if op in EXACT:
            assert canonical(k) == canonical(c), (name, np.flatnonzero(
                (k != c) & ~(np.isnan(k) & np.isnan(c)))[:10])
            continue
        assert np.array_equal(np.isnan(k), np.isnan(c)), name
        fin = np.isfinite(c)
        assert np.array_equal(k[~fin & ~np.isnan(c)], c[~fin & ~np.isnan(c)]), name
        err = np.abs(k[fin] - c[fin])
        bound = _ulp(c[fin], dtype)
        if op in REDUCTIONS:
            # No further from float64 sums of the same 16-bit terms than XLA:CPU is, or a unit.
            ref = _reduction_reference(op, dtype, int(name.split("-")[2]))
            assert np.all(np.abs(k - ref) <= np.maximum(np.abs(c - ref), _ulp(ref, dtype))), name
            continue
        if op in ("softmax", "layernorm"):  # sums in other orders
            bound = np.maximum(bound, 4 * _ulp(np.abs(c[fin]).max(initial=0), dtype))
        assert np.all(err <= bound), (name, float(err.max()))


DOTS = [
    ("bij,bjk->bik", (4, 3, 5), (4, 5, 2)),
    ("ji,jk->ik", (5, 3), (5, 4)),          # lhs stored transposed
    ("ij,kj->ik", (3, 5), (4, 5)),          # rhs stored transposed
    ("bhqd,bhkd->bhqk", (2, 3, 16, 8), (2, 3, 16, 8)),  # attention's scores
    ("ibj,bjk->bik", (3, 4, 5), (4, 5, 2)),  # packed: batch not leading
    ("ijk,jkl->il", (2, 3, 4), (3, 4, 5)),  # two contracting dims
]


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", list(HALVES))
@pytest.mark.parametrize("spec,sa,sb", DOTS, ids=[d[0] for d in DOTS])
def test_half_dots_are_f32_products_rounded_once(spec, sa, sb, dtype):
    """A 16-bit dot (operands widened as stored, or packed) gives the bits of the f32 dot of the
    widened operands rounded once, on Kiln, and matches XLA:CPU within 1% of the largest result.
    Not the bits for bf16 on AVX512_BF16 CPUs, where bf16 dots read in place run on vdpbf16ps
    (kernels/gemm_bf16.h: exact products, sums in another order; tests/python/test_bf16_gemm.py
    bounds them)."""
    rng = np.random.default_rng(len(spec))
    a = rng.standard_normal(sa).astype(HALVES[dtype])
    b = rng.standard_normal(sb).astype(HALVES[dtype])
    kiln = jax.devices("kiln")[0]
    ka, kb = jax.device_put(a, kiln), jax.device_put(b, kiln)
    got = np.asarray(jax.jit(lambda x, y: jnp.einsum(spec, x, y))(ka, kb))
    wide = jax.jit(lambda x, y: jnp.einsum(spec, x.astype(jnp.float32), y.astype(jnp.float32))
                   .astype(x.dtype))(ka, kb)
    if dtype != "bfloat16" or "avx512_bf16" not in cpu_flags():
        assert got.tobytes() == np.asarray(wide).tobytes(), spec
    cpu = jax.devices("cpu")[0]
    ref = np.asarray(jnp.einsum(spec, jax.device_put(a, cpu), jax.device_put(b, cpu)))
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=0,
                               atol=0.01 * float(np.abs(ref.astype(np.float32)).max()))


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all(jax.devices("kiln")[0]))
