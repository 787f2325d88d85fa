"""Host callbacks on Kiln: jax.pure_callback, jax.experimental.io_callback (ordered or not) and
jax.debug.callback / jax.debug.print, inside jit, scan, while_loop, cond and vmap.

JAX emits callbacks through `jax._src.callback.emit_python_callback`, which only knows the
platforms cpu, cuda, rocm and tpu, and registers the debug primitives' lowerings only for those.
For platform "kiln", `register()` wraps that function (other platforms go to JAX's own code) and
registers JAX's own debug lowering rules; a callback becomes

    stablehlo.custom_call @kiln_host_callback(token?, operands...) {callback_id = N}

where N keys the Python callable and its operand and result types in this module's table. The
library calls back through one C trampoline made with ctypes and installed through Kiln's PJRT
extension (abi/kiln_extension.h), so it never links libpython. A callable stays in the table for
the life of the process (an executable may run at any time), as JAX's CPU backend keeps it alive
with its executable.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import threading
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from kiln import _extension

TARGET = "kiln_host_callback"

_lock = threading.Lock()
_ids = itertools.count(1)
# id -> (callable, operand avals, result avals)
_table: dict[int, tuple[Callable[..., Any], tuple, tuple]] = {}
_installed_in: set[str] = set()

_TrampolineType = _extension.HostCallbackFn


def _nbytes(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _read(ptr: int | None, aval) -> np.ndarray:
    dtype = np.dtype(aval.dtype)
    n = _nbytes(aval)
    if n == 0 or not ptr:
        return np.zeros(aval.shape, dtype)
    buf = (ctypes.c_char * n).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype).reshape(aval.shape).copy()


def _check_results(out_vals, result_avals) -> list[np.ndarray]:
    # The same checks (and messages) as JAX's CPU path applies to a callback's results.
    if len(out_vals) != len(result_avals):
        raise RuntimeError(
            "Mismatched number of outputs from callback. "
            f"Expected: {len(result_avals)}, Actual: {len(out_vals)}")
    try:
        from jax._src import dtypes as jdtypes
        canonicalize = jdtypes.canonicalize_value
    except (ImportError, AttributeError):  # older or newer JAX: plain arrays
        canonicalize = np.asarray
    checked = []
    for i, (val, aval) in enumerate(zip(out_vals, result_avals)):
        arr = np.asarray(canonicalize(np.asarray(val)))
        if arr.shape != tuple(aval.shape):
            raise RuntimeError(
                f"Incorrect output shape for return value #{i}: "
                f"Expected: {aval.shape}, Actual: {arr.shape}")
        if arr.dtype != np.dtype(aval.dtype):
            raise RuntimeError(
                f"Incorrect output dtype for return value #{i}: "
                f"Expected: {aval.dtype}, Actual: {arr.dtype}")
        checked.append(np.ascontiguousarray(arr))
    return checked


def _run(callback_id, num_args, args, num_results, results, error, error_size) -> int:
    try:
        with _lock:
            entry = _table.get(int(callback_id))
        if entry is None:
            raise RuntimeError(f"Kiln host callback {int(callback_id)} is not registered in this "
                               "process")
        fn, in_avals, out_avals = entry
        if num_args != len(in_avals) or num_results != len(out_avals):
            raise RuntimeError(f"Kiln host callback {int(callback_id)}: called with {num_args} "
                               f"operands and {num_results} results, lowered with "
                               f"{len(in_avals)} and {len(out_avals)}")
        inputs = [_read(args[i], aval) for i, aval in enumerate(in_avals)]
        outs = _check_results(tuple(fn(*inputs)), out_avals)
        for i, (arr, aval) in enumerate(zip(outs, out_avals)):
            n = _nbytes(aval)
            if n:
                ctypes.memmove(results[i], arr.ctypes.data, n)
        return 0
    except BaseException as e:  # noqa: BLE001 - every failure must reach the caller, not abort
        msg = "".join(traceback.format_exception_only(type(e), e)).strip()
        data = msg.encode("utf-8", "replace")[: max(0, int(error_size) - 1)]
        if error and error_size:
            ctypes.memmove(error, data, len(data))
            ctypes.memset(error + len(data), 0, 1)
        return 1


_trampoline = _TrampolineType(_run)  # kept alive for the life of the process


def _install(library: str) -> None:
    """Installs the trampoline in `library` (the plugin JAX loaded)."""
    with _lock:
        if library in _installed_in:
            return
    ext = _extension.find(library, 1, "host callbacks")
    with _lock:
        if library not in _installed_in:
            ext.set_host_callback(_trampoline)
            _installed_in.add(library)


def _ir_type(mlir, ctx, aval):
    # jax >= 0.7 takes the module context first; older releases take the aval alone.
    try:
        return mlir.aval_to_ir_type(ctx.module_context, aval)
    except TypeError:
        return mlir.aval_to_ir_type(aval)


@functools.cache
def _jaxlib_takes_python_host_callbacks() -> bool:
    """Whether jaxlib's Client.compile_and_load accepts Python callables as `host_callbacks`
    (jaxlib 0.10 does; 0.4.x types them as PyCapsules and rejects anything else)."""
    try:
        from jax._src.lib import xla_client
    except ImportError:
        return False
    client = getattr(xla_client, "Client", None)
    doc = getattr(getattr(client, "compile_and_load", None), "__doc__", None) or ""
    return "host_callbacks: Sequence[Callable" in doc


def _emit_kiln(library: str, ctx, callback, token, operands: Sequence[Any],
               operand_avals: Sequence[Any], result_avals: Sequence[Any], *,
               has_side_effect: bool, returns_token: bool = True, partitioned: bool = False,
               sharding: Any = None, **layouts: Any):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import hlo

    # One device: every callback runs once, on the host, and the op needs no sharding annotation
    # (JAX's would also have to cover the token result).
    # (jax 0.4.x also passes operand/result layouts; Kiln's are always the default row-major.)
    del returns_token, partitioned, sharding, layouts
    _install(library)
    with _lock:
        callback_id = next(_ids)
        _table[callback_id] = (callback, tuple(operand_avals), tuple(result_avals))
    # Declared to JAX as the program's host callback, as on the CPU backend: JAX then keeps the
    # callable with the executable, runs the program on its effects path, and does not write it to
    # the persistent compilation cache ("... because it uses host callbacks"). jaxlib hands the
    # callables to PJRT_Client_Compile's caller only; Kiln calls through its own table.
    # Only where jaxlib's compile takes Python callables there (jaxlib < 0.5 wants capsules and
    # refuses the call: then the program is simply not declared, as before).
    add_host_callback = getattr(ctx.module_context, "add_host_callback", None)
    if add_host_callback is not None and _jaxlib_takes_python_host_callbacks():
        add_host_callback(callback)
    result_types = [_ir_type(mlir, ctx, a) for a in result_avals]
    ops = list(operands)
    if token is not None:
        ops = [token, *ops]
        result_types = [hlo.TokenType.get(), *result_types]
    config = {"callback_id": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), callback_id)}
    op = mlir.custom_call(TARGET, result_types=result_types, operands=ops,
                          has_side_effect=has_side_effect, api_version=4,
                          backend_config=config)
    results = list(op.results)
    new_token = None
    if token is not None:
        new_token, *results = results
    return results, new_token, None


def register(platform: str, library: str) -> None:
    """Makes JAX lower host callbacks for `platform` to Kiln's target in `library`."""
    try:
        from jax._src import callback as cb
        from jax._src import debugging
        from jax._src.interpreters import mlir
    except ImportError:
        return
    from kiln._lowering import register_lowering
    # jax >= 0.5 has emit_python_callback in jax._src.callback; 0.4.x in mlir. Callers look it up
    # on that module at each call, so replacing the attribute reaches them all.
    if not hasattr(cb, "emit_python_callback"):
        cb = mlir
    original = cb.emit_python_callback
    if getattr(original, "_kiln_platform", None) != platform:
        def emit_python_callback(ctx, *args, **kwargs):
            platforms = ctx.module_context.platforms
            if len(platforms) == 1 and platforms[0] == platform:
                return _emit_kiln(library, ctx, *args, **kwargs)
            return original(ctx, *args, **kwargs)

        emit_python_callback._kiln_platform = platform  # type: ignore[attr-defined]
        emit_python_callback.__wrapped__ = original  # type: ignore[attr-defined]
        cb.emit_python_callback = emit_python_callback
    # JAX registers these only for cpu/gpu/tpu; its rules call emit_python_callback.
    for prim_name, rule_name in (("debug_callback_p", "debug_callback_lowering"),
                                 ("debug_print_p", "debug_print_lowering_rule")):
        prim, rule = getattr(debugging, prim_name, None), getattr(debugging, rule_name, None)
        if prim is not None and rule is not None:
            register_lowering(prim, rule, platform)


def library_in_env(platform: str) -> str | None:
    """The library path PJRT_NAMES_AND_LIBRARY_PATHS gives `platform`, if any."""
    spec = os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "")
    sep = ";" if os.name == "nt" else ","
    for item in spec.split(sep):
        name, _, path = item.partition(":")
        if name.strip() == platform and path.strip():
            return path.strip()
    return None
