"""PJRT program format "hlo": JAX programs lowered to a serialized HloModuleProto, compiled on Kiln
through pypjrt (as TensorFlow and PyTorch/XLA send them) and run.

Each program's results must equal, bit for bit, what Kiln gives for the same program as StableHLO
through JAX (the same kernels run either way), and agree with JAX's CPU backend within the
tolerances of tolerances.py. Malformed and unsupported HLO is refused with an error naming the
problem.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, run_both
from pjrt_client import compile_program, kiln_client, run_to_numpy
from program_formats_hlo import hlo_program, run_hlo

pytestmark = pytest.mark.requires_kiln

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(dtype, *shape, lo=-50, hi=50):
    return RNG.integers(lo, hi, shape).astype(dtype)


def _dtype_case(dtype):
    if np.dtype(dtype) == np.bool_:
        a, b = RNG.integers(0, 2, (3, 5)).astype(bool), RNG.integers(0, 2, (3, 5)).astype(bool)
        return (lambda x, y: (x & y, x | ~y, x ^ y, x == y)), (a, b)
    if jnp.issubdtype(dtype, jnp.integer):
        lo = 0 if jnp.issubdtype(dtype, jnp.unsignedinteger) else -20
        a, b = ints(dtype, 3, 5, lo=lo, hi=20), ints(dtype, 3, 5, lo=1, hi=20)
        return (lambda x, y: (x + y, x * y, x // y, x % y, jnp.maximum(x, y), x < y, x >> 1,
                              jnp.asarray(7, dtype) * x, x.sum(0))), (a, b)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        a = (f32(3, 5) + 1j * f32(3, 5)).astype(dtype)
        b = (f32(3, 5) + 1j * f32(3, 5)).astype(dtype)
        return (lambda x, y: (x + y, x * y, x / y, jnp.conj(x), jnp.abs(x), jnp.exp(x),
                              jnp.asarray(1.5 - 2j, dtype) * x)), (a, b)
    a, b = f32(3, 5).astype(dtype), (np.abs(f32(3, 5)) + 0.5).astype(dtype)
    return (lambda x, y: (x + y, x * y, x / y, jnp.sqrt(y), jnp.exp(x), jnp.tanh(x), jnp.log(y),
                          jnp.floor(x), x < y, jnp.where(x > 0, x, y), jnp.clip(x, -0.5, 0.5),
                          jnp.asarray(0.25, dtype) * x, x.astype(jnp.int32))), (a, b)


ELEMENTWISE_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                      np.float16, jnp.bfloat16, np.float32, np.complex64]


def _cases():
    x, y = f32(4, 6), f32(6, 3)
    img, ker = f32(2, 3, 9, 9), f32(4, 3, 3, 3)
    idx = np.array([[0], [2], [1], [3]], np.int32)
    return {
        "reduce_sum_max": (lambda a: (a.sum(0), a.max(1), jnp.argmax(a, 1), a.prod()), (x,)),
        "dot": (lambda a, b: (a @ b, jnp.einsum("ij,jk->ik", a, b)), (x, y)),
        "batched_dot": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (f32(2, 3, 4), f32(2, 4, 5))),
        "conv": (lambda a, k: lax.conv_general_dilated(a, k, (2, 1), "SAME", rhs_dilation=(1, 2)),
                 (img, ker)),
        "conv_grouped": (lambda a, k: lax.conv_general_dilated(a, k, (1, 1), [(1, 0), (0, 2)],
                                                               feature_group_count=3),
                         (f32(1, 6, 5, 5), f32(6, 2, 2, 2))),
        "broadcast_reshape_transpose": (lambda a: (a[None, :, :] + a[:, None, :1],
                                                   a.reshape(3, 8).T, a[::-1, 1:5:2]), (x,)),
        "concat_pad_iota": (lambda a: (jnp.concatenate([a, a * 2], 1),
                                       jnp.pad(a, ((1, 2), (0, 3))),
                                       lax.pad(a, 0.0, [(1, -1, 1), (0, 0, 2)]),
                                       jnp.arange(12).reshape(3, 4)), (x,)),
        "dynamic_slice": (lambda a, i: (lax.dynamic_slice(a, (i, 1), (2, 3)),
                                        lax.dynamic_update_slice(a, jnp.ones((2, 2)), (i, i))),
                          (x, np.int32(1))),
        "gather_scatter": (lambda a, i: (a[i[:, 0]], a.at[i[:, 0]].add(1.0),
                                         jnp.take_along_axis(a, i, 1), a.at[1, 2].set(7.0)),
                           (x, idx)),
        "sort": (lambda a: (jnp.sort(a, 1), jnp.argsort(a[:, 0]), lax.sort((a[0], a[1]), num_keys=1)),
                 (x,)),
        "while_fori": (lambda a: lax.fori_loop(0, 5, lambda i, c: c * 1.5 + i, a), (x,)),
        "while_loop": (lambda a: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 3, c[1] * 2),
                                                (0, a)), (x,)),
        "cond": (lambda p, a: lax.cond(p > 0, lambda v: v * 2, lambda v: v - 1, a),
                 (np.float32(1.0), x)),
        "switch": (lambda i, a: lax.switch(i, [lambda v: v, lambda v: v + 1, lambda v: -v], a),
                   (np.int32(2), x)),
        "scan": (lambda a: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(6), a), (x,)),
        "cumsum_reduce_window": (lambda a: (jnp.cumsum(a, 0),
                                            lax.reduce_window(a, -jnp.inf, lax.max, (2, 2),
                                                              (1, 2), "SAME")), (x,)),
        "select_and_scatter": (lambda a: jax.grad(lambda v: lax.reduce_window(
            v, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum())(a), (x,)),
        "tuples_nested": (lambda a, b: ((a, (b, a + 1)), [a.sum()]), (x, y)),
        "rng_bit_generator": (lambda k: lax.rng_bit_generator(k, (4, 5), dtype=jnp.uint32),
                              (np.array([1, 2, 3, 4], np.uint32),)),
        "random_threefry": (lambda s: jax.random.normal(jax.random.key(s), (3, 4)),
                            (np.uint32(7),)),
        "softmax_grad": (lambda a: jax.grad(lambda v: jax.nn.log_softmax(v).sum() * v.mean())(a),
                         (x,)),
        "bitcast_clamp_compare": (lambda a: (lax.bitcast_convert_type(a, jnp.int32),
                                             lax.clamp(-0.5, a, 0.5),
                                             lax.population_count(jnp.int32(5) + 1),
                                             jnp.isnan(a / 0.0)), (x,)),
        "top_k": (lambda a, i: (lax.top_k(a, 3), lax.top_k(-i, 2), lax.top_k(a.at[0, 1].set(jnp.nan), 2)),
                  (x, ints(np.int32, 4, 6))),
        "count_leading_zeros": (lambda i: (lax.clz(i), lax.clz(i.astype(jnp.uint32))),
                                (ints(np.int32, 4, 6, lo=-1000, hi=1000),)),
        "cholesky_triangular": (lambda a: (lax.linalg.cholesky(a @ a.T + 6 * jnp.eye(4)),
                                           lax.linalg.triangular_solve(
                                               jnp.tril(a[:, :4]) + 4 * jnp.eye(4), a,
                                               left_side=True, lower=True)), (x,)),
    }


CASES = _cases()


def _check(f, args, kind="arith"):
    lowered = jax.jit(f).lower(*args)
    got = run_hlo(lowered, [np.asarray(a) for a in jax.tree.leaves(args)])
    kiln, cpu = run_both(f, *args)
    kiln_leaves = [np.asarray(v) for v in jax.tree.leaves(kiln)]
    cpu_leaves = [np.asarray(v) for v in jax.tree.leaves(cpu)]
    assert len(got) == len(cpu_leaves)
    assert_close(got, cpu_leaves, kind=kind)
    assert_close(got, kiln_leaves, exact=True)


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_elementwise(dtype):
    f, args = _dtype_case(dtype)
    _check(f, args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_program(name):
    f, args = CASES[name]
    _check(f, args, kind="composite")


def test_x64_types():
    with jax.enable_x64(True):
        for dtype in (np.int64, np.uint64, np.float64, np.complex128):
            f, args = _dtype_case(dtype)
            _check(f, args)


def test_mlp_training_step():
    params = {"w1": f32(8, 16) * 0.3, "b1": np.zeros(16, np.float32),
              "w2": f32(16, 4) * 0.3, "b2": np.zeros(4, np.float32)}
    xb, yb = f32(5, 8), f32(5, 4)

    def loss(p, a, t):
        h = jax.nn.relu(a @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - t) ** 2)

    def step(p, a, t):
        value, grads = jax.value_and_grad(loss)(p, a, t)
        return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)

    _check(step, (params, xb, yb), kind="composite")


def test_hlo_with_config_reads_the_module():
    lowered = jax.jit(lambda a: a * 3).lower(np.ones(3, np.float32))
    code, _ = hlo_program(lowered)
    # HloModuleProtoWithConfig { hlo_module = 1; config = 2 }: the module as field 1.
    n, length = len(code), bytearray()
    while True:
        length.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    wrapped = b"\x0a" + bytes(length) + code
    exe = compile_program(kiln_client(), wrapped, b"hlo_with_config")
    assert exe is not None


def test_serialized_hlo_executable_round_trips():
    # A serialized executable records its program format: one compiled from HLO loads again.
    a = f32(3, 4)
    lowered = jax.jit(lambda v: jnp.tanh(v) @ v.T).lower(a)
    client = kiln_client()
    exe = compile_program(client, *hlo_program(lowered))
    loaded = client.deserialize_executable(exe.serialize())
    with client.device(0) as device:
        buf = client.buffer_from_host(bytearray(a.tobytes()), 11, list(a.shape), device)
        out = loaded(buf)[0]
    got = np.empty((3, 3), np.float32)
    out.to_host(memoryview(got.reshape(-1).view(np.uint8)))
    assert_close([got], [np.asarray(run_hlo(lowered, [a])[0])], exact=True)


def test_optimized_program_is_the_module_with_its_config():
    # What PyTorch/XLA reads back after compiling: format "hlo_with_config" (it refuses "hlo"),
    # the module as given, and a config that holds the entry layout.
    import ctypes  # noqa: PLC0415

    lowered = jax.jit(lambda v: v.T * 2).lower(f32(3, 4))
    code, _ = hlo_program(lowered)
    client = kiln_client()
    plugin = client._plugin
    exe = compile_program(client, code, b"hlo")
    program = plugin.args("PJRT_Program")
    args = plugin.args("PJRT_Executable_OptimizedProgram_Args", executable=exe._executable(),
                       program=ctypes.addressof(program))
    plugin.call("PJRT_Executable_OptimizedProgram", args)
    buf = ctypes.create_string_buffer(program.code_size)
    program.code = ctypes.cast(buf, ctypes.c_void_p)
    plugin.call("PJRT_Executable_OptimizedProgram", args)
    assert ctypes.string_at(program.format, program.format_size) == b"hlo_with_config"
    wrapped = buf.raw[:program.code_size]
    n, length = len(code), bytearray()
    while True:
        length.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    head = b"\x0a" + bytes(length) + code
    assert wrapped.startswith(head)
    assert wrapped[len(head)] == 0x12  # config (field 2) follows
    config = wrapped[len(head):]
    assert b"\x0a" in config[:4]  # entry_computation_layout (field 1) inside it
    # It compiles again, as format hlo_with_config.
    assert compile_program(client, wrapped, b"hlo_with_config") is not None


def _compile_error(code: bytes, fmt: bytes = b"hlo") -> str:
    from pypjrt import errors  # noqa: PLC0415

    with pytest.raises(errors.PjrtError) as info:
        compile_program(kiln_client(), code, fmt)
    return str(info.value)


def test_malformed_protos_are_errors():
    lowered = jax.jit(lambda a, b: (a @ b).sum()).lower(f32(3, 4), f32(4, 2))
    code, _ = hlo_program(lowered)
    for cut in (1, 7, len(code) // 3, len(code) // 2, len(code) - 1):
        message = _compile_error(code[:cut])
        assert "HloModuleProto" in message or "instruction" in message, message
    assert "no computations" in _compile_error(b"")
    message = _compile_error(b"\x1a\x05\x12\x03\x0a\x01")  # a computation whose instruction is cut
    assert "malformed HloModuleProto" in message, message


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_erf(dtype):
    # HLO's `erf` becomes the polynomial StableHLO programs carry for it: the same bits.
    x = (np.linspace(-5, 5, 101).astype(np.float32)).astype(dtype)
    _check(lambda v: (lax.erf(v), jax.nn.gelu(v, approximate=False)), (x,), kind="transcendental")


def test_erf_f64_is_refused_by_name():
    with jax.enable_x64(True):
        message = _compile_error(hlo_program(jax.jit(lax.erf).lower(np.ones(3)))[0])
    assert "HLO opcode 'erf'" in message and "f64" in message, message


def test_unsupported_opcode_is_named():
    # A custom call to a target Kiln does not serve is refused at compile time, naming it.
    def f(a):
        return jax.ffi.ffi_call("kiln_no_such_target", jax.ShapeDtypeStruct(a.shape, a.dtype))(a)

    lowered = jax.jit(f).lower(f32(3))
    message = _compile_error(hlo_program(lowered)[0])
    assert "kiln_no_such_target" in message, message


# ---- batch-norm-* (PyTorch/XLA emits them; JAX never does): modules written by hand ----

def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    if isinstance(payload, float):
        return _varint(number << 3 | 5) + np.float32(payload).tobytes()
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _shape(*dims: int, tuple_of=None) -> bytes:
    if tuple_of is not None:
        return _field(2, 13) + b"".join(_field(4, s) for s in tuple_of)
    return _field(2, 11) + b"".join(_field(3, d) for d in dims)


def _instr(name, opcode, iid, shape, operands=(), **extra) -> bytes:
    body = _field(1, name) + _field(2, opcode) + _field(3, shape) + _field(35, iid)
    body += b"".join(_field(36, o) for o in operands)
    for number, value in extra.values():
        body += _field(number, value)
    return body


def _batch_norm_module(opcode: str, operand_dims: list, feature: int) -> bytes:
    c = operand_dims[feature]
    vec = _shape(c)
    full = _shape(*operand_dims)
    if opcode == "batch-norm-training":
        params, out = [full, vec, vec], _shape(tuple_of=[full, vec, vec])
    elif opcode == "batch-norm-inference":
        params, out = [full, vec, vec, vec, vec], full
    else:
        params, out = [full, vec, vec, vec, full], _shape(tuple_of=[full, vec, vec])
    instrs = [_instr(f"p{i}", "parameter", i + 1, s, parameter_number=(9, i))
              for i, s in enumerate(params)]
    root = len(params) + 1
    instrs.append(_instr("bn", opcode, root, out, range(1, root),
                         epsilon=(24, 1e-3), feature_index=(25, feature)))
    comp = _field(1, "main") + b"".join(_field(2, i) for i in instrs) + _field(5, 1) + _field(6, root)
    return _field(1, "batch_norm") + _field(6, 1) + _field(3, comp)


def _bn_reference(x, feature):
    axes = tuple(d for d in range(x.ndim) if d != feature)
    shape = [1] * x.ndim
    shape[feature] = -1
    mean = x.mean(axes)
    var = ((x - mean.reshape(shape)) ** 2).mean(axes)
    return axes, shape, mean, var


@pytest.mark.parametrize("feature", [1, 3])
def test_batch_norm_training_and_grad(feature):
    x = RNG.standard_normal((4, 3, 5, 2)).astype(np.float32) * 2 + 1
    c = x.shape[feature]
    scale, offset = f32(c), f32(c)
    axes, shape, mean, var = _bn_reference(x.astype(np.float64), feature)
    inv = 1 / np.sqrt(var + np.float32(1e-3))
    x_hat = (x - mean.reshape(shape)) * inv.reshape(shape)
    want_y = x_hat * scale.reshape(shape) + offset.reshape(shape)
    avals = [jax.ShapeDtypeStruct(x.shape, np.float32), jax.ShapeDtypeStruct((c,), np.float32),
             jax.ShapeDtypeStruct((c,), np.float32)]
    y, m, v = run_to_numpy(_batch_norm_module("batch-norm-training", list(x.shape), feature),
                          b"hlo", [x, scale, offset], avals)
    np.testing.assert_allclose(m, mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)

    (inf,) = run_to_numpy(_batch_norm_module("batch-norm-inference", list(x.shape), feature),
                         b"hlo", [x, scale, offset, m, v], avals[:1])
    np.testing.assert_allclose(inf, want_y, rtol=1e-5, atol=1e-5)

    dy = RNG.standard_normal(x.shape).astype(np.float32)
    n = x.size / c
    d_offset = dy.astype(np.float64).sum(axes)
    d_scale = (dy * x_hat).sum(axes)
    dx = (scale.reshape(shape) * inv.reshape(shape) / n
          * (n * dy - d_offset.reshape(shape) - x_hat * d_scale.reshape(shape)))
    gx, gs, go = run_to_numpy(_batch_norm_module("batch-norm-grad", list(x.shape), feature),
                              b"hlo", [x, scale, m, v, dy], avals)
    np.testing.assert_allclose(go, d_offset, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gs, d_scale, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, dx, rtol=1e-4, atol=1e-5)


def test_sharding_annotations_forward_their_operand():
    # jaxlib's HLO of a program taking a typed PRNG key annotates the key with a GSPMD
    # `custom-call(..., custom_call_target="Sharding", sharding={replicated})`: it changes no
    # value (kernels/custom_call.cc), and the random bits equal the CPU backend's.
    key = jax.random.key(7)
    f = lambda k: jax.random.bits(k, (16,))
    lowered = jax.jit(f).lower(key)
    assert 'custom_call_target="Sharding"' in lowered.compiler_ir("hlo").as_hlo_text()
    got = run_hlo(lowered, [np.asarray(jax.random.key_data(key))])
    want = jax.jit(f)(jax.device_put(key, jax.devices("cpu")[0]))
    np.testing.assert_array_equal(got[0], np.asarray(want))
