"""XLA FFI handlers on Kiln (kernels/ffi_call.cc, runtime/ffi.cc, python/kiln/_ffi.py).

A small handler library is compiled at test time with the system C++ compiler against the FFI
headers JAX ships (`jax.ffi.include_dir()`), loaded with ctypes and registered with
`jax.ffi.register_ffi_target` for platform "kiln" and for "cpu". Each program calls it through
`jax.ffi.ffi_call` inside jit (and vmap, and a custom_vjp for grad) and runs on Kiln and on JAX's
CPU backend with the same inputs: the same handler code runs on both, so what only the handler
computes must agree bit for bit (exact=True); programs with JAX ops around the call use those ops'
tolerances (tolerances.py). A handler's error must reach Python naming the target.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import assert_close, run_both

pytestmark = pytest.mark.requires_kiln

HANDLERS = r"""
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y[..., j] = x[..., j] / sqrt(mean(x[..., :]^2) + eps), over the last dimension.
static ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  const int64_t n = dims.size() == 0 ? 1 : dims.back();
  const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(x.element_count()) / n;
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += in[r * n + j] * in[r * n + j];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t j = 0; j < n; ++j) out[r * n + j] = in[r * n + j] * scale;
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// Two results from f64 x and i32 k: scaled = x * sum(weights) (+ offset from the dictionary
// `opts`, times 2 when mode == "double"), and count = k + len(mode) + flag.
static ffi::Error MultiImpl(std::string_view mode, ffi::Span<const int64_t> weights, bool flag,
                           ffi::Dictionary opts, ffi::Buffer<ffi::F64> x, ffi::Buffer<ffi::S32> k,
                           ffi::ResultBuffer<ffi::F64> scaled, ffi::ResultBuffer<ffi::S32> count) {
  double w = 0;
  for (int64_t v : weights) w += static_cast<double>(v);
  auto offset = opts.get<double>("offset");
  if (offset.has_error()) return offset.error();
  const double factor = mode == "double" ? 2.0 : 1.0;
  for (size_t i = 0; i < x.element_count(); ++i) {
    scaled->typed_data()[i] = (x.typed_data()[i] * w + *offset) * factor;
  }
  for (size_t i = 0; i < k.element_count(); ++i) {
    count->typed_data()[i] = k.typed_data()[i] + static_cast<int32_t>(mode.size()) + (flag ? 1 : 0);
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Multi, MultiImpl,
                              ffi::Ffi::Bind()
                                  .Attr<std::string_view>("mode")
                                  .Attr<ffi::Span<const int64_t>>("weights")
                                  .Attr<bool>("flag")
                                  .Attr<ffi::Dictionary>("opts")
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// Fails when any element of x is negative.
static ffi::Error CheckImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  for (size_t i = 0; i < x.element_count(); ++i) {
    if (x.typed_data()[i] < 0) {
      return ffi::Error::InvalidArgument("negative input at " + std::to_string(i));
    }
    y->typed_data()[i] = x.typed_data()[i];
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Check, CheckImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// In place: y (aliased to x) += 1.
static ffi::Error AddOneImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  (void)x;
  for (size_t i = 0; i < y->element_count(); ++i) y->typed_data()[i] += 1.0f;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AddOne, AddOneImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// No results: adds the sum of x to a counter the test reads (a side effect only).
static double g_total = 0;
extern "C" double Total() { return g_total; }

static ffi::Error AccumulateImpl(ffi::Buffer<ffi::F32> x) {
  for (size_t i = 0; i < x.element_count(); ++i) g_total += x.typed_data()[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Accumulate, AccumulateImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>());

// A handler on the bare C API: y = x * (the float the execution's user data of type g_scale_type
// points at), read with XLA_FFI_ExecutionContext_Get. The type's id is assigned at registration
// (jax.ffi.register_ffi_type writes it into g_scale_type).
static XLA_FFI_TypeId g_scale_type{0};
extern "C" void* ScaleTypeId() { return &g_scale_type; }

extern "C" XLA_FFI_Error* UserDataScale(XLA_FFI_CallFrame* frame) {
  if (frame->extension_start != nullptr &&
      frame->extension_start->type == XLA_FFI_Extension_Metadata) {
    auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
    ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
    ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
    ext->metadata->traits = 0;
    return nullptr;
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;
  XLA_FFI_TypeId id = g_scale_type;
  XLA_FFI_ExecutionContext_Get_Args get{};
  get.struct_size = XLA_FFI_ExecutionContext_Get_Args_STRUCT_SIZE;
  get.ctx = frame->ctx;
  get.type_id = &id;
  if (XLA_FFI_Error* error = frame->api->XLA_FFI_ExecutionContext_Get(&get)) return error;
  const float scale = *static_cast<const float*>(get.data);
  auto* x = static_cast<XLA_FFI_Buffer*>(frame->args.args[0]);
  auto* y = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[0]);
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (int64_t i = 0; i < n; ++i) {
    static_cast<float*>(y->data)[i] = static_cast<const float*>(x->data)[i] * scale;
  }
  return nullptr;
}
"""

TARGETS = {"kiln_test_rms_norm": "RmsNorm", "kiln_test_multi": "Multi",
           "kiln_test_check": "Check", "kiln_test_add_one": "AddOne",
           "kiln_test_accumulate": "Accumulate"}


@pytest.fixture(scope="module")
def handlers(tmp_path_factory):
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the FFI handler library")
    d = tmp_path_factory.mktemp("ffi")
    src, lib = d / "handlers.cc", d / "libhandlers.so"
    src.write_text(HANDLERS)
    subprocess.run([compiler, "-std=c++17", "-O1", "-shared", "-fPIC", "-I", jax.ffi.include_dir(),
                    str(src), "-o", str(lib)], check=True, capture_output=True, text=True)
    so = ctypes.cdll.LoadLibrary(str(lib))
    for target, symbol in TARGETS.items():
        capsule = jax.ffi.pycapsule(getattr(so, symbol))
        for platform in ("kiln", "cpu"):
            jax.ffi.register_ffi_target(target, capsule, platform=platform)
    return so


def rms_norm(x, eps=1e-5):
    return jax.ffi.ffi_call("kiln_test_rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="broadcast_all")(x, eps=np.float32(eps))


@pytest.mark.parametrize("shape", [(8,), (4, 16), (2, 3, 5), (0, 4)])
def test_rms_norm(handlers, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    k, c = run_both(rms_norm, x)
    assert_close(k, c, exact=True)
    if x.size:
        ref = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(k, ref, rtol=1e-5, atol=1e-6)


def test_rms_norm_in_a_larger_program(handlers):
    x = np.random.default_rng(1).standard_normal((6, 10)).astype(np.float32)
    k, c = run_both(lambda x: jnp.sum(rms_norm(jnp.tanh(x) * 2.0, eps=0.5) ** 2, axis=0), x)
    # tanh and the sum around the call are Kiln's and XLA's own: their tolerance, not bit equality.
    assert_close(k, c, kind="transcendental")


def test_rms_norm_under_vmap(handlers):
    x = np.random.default_rng(2).standard_normal((3, 4, 7)).astype(np.float32)
    k, c = run_both(jax.vmap(rms_norm), x)
    assert_close(k, c, exact=True)


def test_rms_norm_under_grad(handlers):
    # ffi_call has no derivative of its own: a custom_vjp whose backward pass is plain JAX.
    @jax.custom_vjp
    def f(x):
        return rms_norm(x)

    def fwd(x):
        return rms_norm(x), x

    def bwd(x, g):
        n = x.shape[-1]
        r = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)
        return (g * r - x * r ** 3 * jnp.sum(g * x, axis=-1, keepdims=True) / n,)

    f.defvjp(fwd, bwd)
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    k, c = run_both(jax.grad(lambda x: jnp.sum(f(x) * jnp.arange(8.0, dtype=jnp.float32))), x)
    assert_close(k, c, kind="transcendental")  # rsqrt and the sums of the backward pass


def test_rms_norm_under_sequential_vmap(handlers):
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)

    def f(x):
        return jax.ffi.ffi_call("kiln_test_rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype),
                                vmap_method="sequential")(x, eps=np.float32(1e-5))

    k, c = run_both(jax.vmap(f), x)
    assert_close(k, c, exact=True)


def test_side_effect_without_results_runs_once_per_call(handlers):
    handlers.Total.restype = ctypes.c_double

    def f(x):
        jax.ffi.ffi_call("kiln_test_accumulate", (), has_side_effect=True)(x)
        return x + 1

    x = np.arange(4, dtype=np.float32)  # sum 6
    for device in (jax.devices("kiln")[0], jax.devices("cpu")[0]):
        before = handlers.Total()
        out = jax.jit(f)(jax.device_put(x, device))
        np.testing.assert_array_equal(np.asarray(out), x + 1)
        jax.effects_barrier()
        assert handlers.Total() - before == 6.0, device


@pytest.mark.parametrize("mode", ["single", "double"])
def test_several_results_and_attribute_kinds(handlers, mode):
    with jax.enable_x64(True):
        x = np.linspace(-2, 3, 12).reshape(3, 4)
        i = np.arange(5, dtype=np.int32)

        def f(x, i):
            return jax.ffi.ffi_call(
                "kiln_test_multi",
                (jax.ShapeDtypeStruct(x.shape, jnp.float64), jax.ShapeDtypeStruct(i.shape, jnp.int32)),
            )(x, i, mode=mode, weights=np.array([1, 2, 4], dtype=np.int64), flag=True,
              opts={"offset": np.float64(0.25)})

        k, c = run_both(f, x, i)
        assert_close(k, c, exact=True)
        factor = 2.0 if mode == "double" else 1.0
        np.testing.assert_array_equal(k[0], (x * 7 + 0.25) * factor)
        np.testing.assert_array_equal(k[1], i + len(mode) + 1)


@pytest.mark.parametrize("layouts", [((1, 0), None), (None, (1, 0)), ((1, 0), (1, 0))])
def test_other_layouts(handlers, layouts):
    # kiln_test_check copies its operand's memory to its result's: with a column-major operand
    # (major-to-minor (1, 0)) and a row-major result the values come out transposed, and so on.
    def f(x):
        return jax.ffi.ffi_call("kiln_test_check", (jax.ShapeDtypeStruct(x.shape, x.dtype),),
                                input_layouts=[layouts[0]], output_layouts=[layouts[1]])(x)[0]

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    k, c = run_both(f, x)
    assert_close(k, c, exact=True)
    if (layouts[0] is None) != (layouts[1] is None):
        assert not np.array_equal(k, x)  # the layouts did matter


def test_input_output_alias(handlers):
    def f(x):
        return jax.ffi.ffi_call("kiln_test_add_one", jax.ShapeDtypeStruct(x.shape, x.dtype),
                                input_output_aliases={0: 0})(x * 3.0)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    k, c = run_both(f, x)
    assert_close(k, c, exact=True)
    np.testing.assert_array_equal(k, x * 3.0 + 1.0)


def test_registration_made_before_kiln_loads(handlers):
    """jaxlib keeps registrations for a platform whose handler is not installed yet and replays
    them when kiln.initialize() installs it: a fresh process registers first, then runs."""
    import sys
    script = f"""
import ctypes, jax, numpy as np
so = ctypes.cdll.LoadLibrary({handlers._name!r})
jax.ffi.register_ffi_target("early_rms_norm", jax.ffi.pycapsule(so.RmsNorm), platform="kiln")
x = jax.device_put(np.full((2, 4), 2.0, np.float32), jax.devices("kiln")[0])
y = jax.jit(lambda x: jax.ffi.ffi_call("early_rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype))(
    x, eps=np.float32(0.0)))(x)
print(np.asarray(y).tolist())
"""
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == str([[1.0] * 4] * 2)


def test_handler_error_names_the_target(handlers):
    def f(x):
        return jax.ffi.ffi_call("kiln_test_check", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    kiln = jax.devices("kiln")[0]
    ok = jax.jit(f)(jax.device_put(np.ones(3, np.float32), kiln))
    np.testing.assert_array_equal(np.asarray(ok), np.ones(3, np.float32))
    with pytest.raises(Exception, match=r"kiln_test_check.*negative input at 1"):
        np.asarray(jax.jit(f)(jax.device_put(np.array([1, -1, 2], np.float32), kiln)))
    # The process and the handler survive the error.
    again = jax.jit(f)(jax.device_put(np.full(2, 5, np.float32), kiln))
    np.testing.assert_array_equal(np.asarray(again), np.full(2, 5, np.float32))


def test_unregistered_target_is_a_compile_error(handlers):
    kiln = jax.devices("kiln")[0]
    f = jax.ffi.ffi_call("kiln_test_not_registered", jax.ShapeDtypeStruct((2,), jnp.float32))
    with pytest.raises(Exception, match=r"kiln_test_not_registered"):
        jax.jit(f).lower(jax.device_put(np.ones(2, np.float32), kiln)).compile()


def test_legacy_api_version_is_refused(handlers):
    jax.devices("kiln")  # Kiln's registration handler is installed: the error is raised here
    capsule = jax.ffi.pycapsule(handlers.Check)
    with pytest.raises(NotImplementedError, match="api_version=0"):
        jax.ffi.register_ffi_target("kiln_test_legacy", capsule, platform="kiln", api_version=0)


def test_wrong_attribute_type_is_the_handlers_error(handlers):
    def f(x):  # eps given as f64: the handler's decoder refuses it, naming the attribute
        return jax.ffi.ffi_call("kiln_test_rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype))(
            x, eps=np.int32(1))

    kiln = jax.devices("kiln")[0]
    with pytest.raises(Exception, match=r"kiln_test_rms_norm"):
        np.asarray(jax.jit(f)(jax.device_put(np.ones(4, np.float32), kiln)))


def test_execute_context_user_data_reaches_the_handler(handlers):
    """A second PJRT client (pypjrt) creates a PJRT_ExecuteContext, registers a type and adds user
    data through the PJRT FFI extension, and passes the context to Execute: the handler reads it
    with XLA_FFI_ExecutionContext_Get. Without a context the handler's lookup fails, by name."""
    pypjrt = pytest.importorskip("pypjrt")
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax

    from kiln import _callbacks, _ffi
    import kiln

    path = _callbacks.library_in_env("kiln") or kiln.library_path()
    lib = _ffi._Library(path)
    jax.devices("kiln")  # Kiln's registration handlers are installed
    handlers.ScaleTypeId.restype = ctypes.c_void_p
    type_id = ctypes.c_int64.from_address(handlers.ScaleTypeId())
    jax.ffi.register_ffi_type(
        "kiln_test_scale", {"type_id": jax.ffi.pycapsule(handlers.ScaleTypeId())}, platform="kiln")
    assert type_id.value > 0  # assigned by Kiln
    jax.ffi.register_ffi_target("kiln_test_user_data", jax.ffi.pycapsule(handlers.UserDataScale),
                                platform="kiln")

    x = np.arange(6, dtype=np.float32)
    f = jax.ffi.ffi_call("kiln_test_user_data", jax.ShapeDtypeStruct(x.shape, x.dtype))
    module = jax.jit(f).lower(x).compiler_ir("stablehlo")
    artifact = _jax.mlir.serialize_portable_artifact(mlir.module_to_bytecode(module), "1.0.0")

    client = pypjrt.Client.create(path)
    exe = client.compile(artifact)
    with client.devices() as devices:
        arg = client.buffer_from_host(x, 11, x.shape, devices[0])  # 11: PJRT_Buffer_Type_F32
        ctx = pypjrt.ExecuteContext.create(client._plugin)
        scale = ctypes.c_float(2.5)

        class UserDataAdd(ctypes.Structure):
            _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                        ("context", ctypes.c_void_p), ("type_id", ctypes.c_int64),
                        ("data", ctypes.c_void_p)]

        add = UserDataAdd(struct_size=40, context=ctx.address, type_id=type_id.value,
                          data=ctypes.addressof(scale))
        user_data_add = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(
            ctypes.c_void_p.from_address(lib.ext + 32).value)
        assert user_data_add(ctypes.addressof(add)) is None
        (out,), = exe.execute_sharded([[arg]], context=ctx)
        np.testing.assert_array_equal(np.frombuffer(out.to_host(), np.float32), x * 2.5)
        with pytest.raises(Exception, match=r"kiln_test_user_data.*user data"):
            (bad,), = exe.execute_sharded([[arg]])
            bad.to_host()
        ctx.close()


def test_second_client_registers_a_python_handler(handlers):
    """pypjrt registers a Python function as a handler through the PJRT FFI extension (platform
    "Host", its name for a CPU plugin), with attributes decoded from the call frame."""
    pypjrt = pytest.importorskip("pypjrt")
    from pypjrt import ffi as pffi
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax

    from kiln import _callbacks
    import kiln

    path = _callbacks.library_in_env("kiln") or kiln.library_path()
    client = pypjrt.Client.create(path)

    def scale(frame):
        x, y = frame.args[0].as_ctypes(), frame.rets[0].as_ctypes()
        factor = float(frame.attrs["factor"])
        for i in range(len(x)):
            y[i] = x[i] * factor

    pffi.register(client._plugin, "kiln_test_pypjrt_scale", scale, platform="Host")
    x = np.arange(5, dtype=np.float32)
    f = jax.ffi.ffi_call("kiln_test_pypjrt_scale", jax.ShapeDtypeStruct(x.shape, x.dtype))
    module = jax.jit(lambda x: f(x, factor=np.float32(3.0))).lower(x).compiler_ir("stablehlo")
    artifact = _jax.mlir.serialize_portable_artifact(mlir.module_to_bytecode(module), "1.0.0")
    exe = client.compile(artifact)
    with client.devices() as devices:
        arg = client.buffer_from_host(x, 11, x.shape, devices[0])  # 11: PJRT_Buffer_Type_F32
        (out,), = exe.execute_sharded([[arg]])
        np.testing.assert_array_equal(np.frombuffer(out.to_host(), np.float32), x * 3.0)
