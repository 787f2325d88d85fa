"""PJRT program format "hlo": a JAX program as a serialized xla.HloModuleProto.

`hlo_program(lowered)` gives what TensorFlow and PyTorch/XLA send through
`PjRtCApiClient::Compile(XlaComputation)`: the `(code, format)` pair of a `PJRT_Program`.
`compile_program(client, code, fmt)` compiles such a pair with pypjrt (whose `Client.compile`
always sends format "mlir"), and `run_hlo(lowered, args)` runs a lowered JAX program on Kiln
through this path and returns numpy arrays.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

import jax


def hlo_program(lowered) -> tuple[bytes, bytes]:
    """The `PJRT_Program` (code, format) of a `jax.jit(f).lower(...)` result, as HLO."""
    return lowered.compiler_ir("hlo").as_serialized_hlo_module_proto(), b"hlo"


def kiln_library() -> str:
    """The Kiln plugin under test: PJRT_NAMES_AND_LIBRARY_PATHS's `kiln:` entry, else the
    installed package's."""
    for entry in os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "").split(","):
        name, _, path = entry.partition(":")
        if name == "kiln" and path:
            return path
    import kiln  # noqa: PLC0415

    return kiln.library_path() if hasattr(kiln, "library_path") else os.path.join(
        os.path.dirname(kiln.__file__), "libkiln_pjrt.so")


_clients: dict[str, object] = {}


def kiln_client():
    """One pypjrt client of the Kiln plugin per process."""
    if "kiln" not in _clients:
        import pypjrt  # noqa: PLC0415

        plugin = pypjrt.Plugin(kiln_library())
        _clients["plugin"] = plugin
        _clients["kiln"] = pypjrt.Client(plugin)
    return _clients["kiln"]


def compile_program(client, code: bytes, fmt: bytes, options=None):
    """`PJRT_Client_Compile` of `code` in program format `fmt`, with pypjrt's structures."""
    from pypjrt import CompileOptions  # noqa: PLC0415
    from pypjrt.client import Executable  # noqa: PLC0415

    plugin = client._plugin
    opts = (options or CompileOptions()).encode(plugin.abi)
    code_buf = ctypes.create_string_buffer(code, len(code))
    fmt_buf = ctypes.create_string_buffer(fmt, len(fmt))
    opt_buf = ctypes.create_string_buffer(opts, len(opts))
    prog = plugin.args("PJRT_Program", code=ctypes.cast(code_buf, ctypes.c_void_p),
                       code_size=len(code), format=ctypes.cast(fmt_buf, ctypes.c_void_p),
                       format_size=len(fmt))
    args = plugin.args("PJRT_Client_Compile_Args", client=client._check(),
                       program=ctypes.addressof(prog),
                       compile_options=ctypes.cast(opt_buf, ctypes.c_void_p),
                       compile_options_size=len(opts))
    plugin.call("PJRT_Client_Compile", args)
    return Executable(plugin, args.executable, client)


# numpy dtype -> PJRT_Buffer_Type.
_PJRT_TYPES = {
    np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
    np.dtype(np.int64): 5, np.dtype(np.uint8): 6, np.dtype(np.uint16): 7,
    np.dtype(np.uint32): 8, np.dtype(np.uint64): 9, np.dtype(np.float16): 10,
    np.dtype(np.float32): 11, np.dtype(np.float64): 12, np.dtype(jax.numpy.bfloat16): 13,
    np.dtype(np.complex64): 14, np.dtype(np.complex128): 15,
}


def run_program(code: bytes, fmt: bytes, args, out_avals) -> list[np.ndarray]:
    """Compiles `code` on Kiln, runs it on `args` (numpy arrays) and returns its results, whose
    shapes and dtypes are `out_avals`."""
    client = kiln_client()
    exe = compile_program(client, code, fmt)
    with client.device(0) as device:
        buffers = []
        for a in args:
            a = np.array(a, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
            data = a.tobytes() or b"\0"
            buffers.append(client.buffer_from_host(bytearray(data), _PJRT_TYPES[a.dtype],
                                                   list(a.shape), device))
        outs = exe(*buffers)
    results = []
    for buf, aval in zip(outs, out_avals):
        host = np.empty(aval.shape, aval.dtype)
        if host.nbytes:
            buf.to_host(memoryview(host.reshape(-1).view(np.uint8)))
        results.append(host)
    if len(outs) != len(out_avals):
        raise AssertionError(f"{len(outs)} results; JAX expects {len(out_avals)}")
    return results


def run_hlo(lowered, args) -> list[np.ndarray]:
    """Runs a lowered JAX program on Kiln from its HLO; the results, flattened."""
    code, fmt = hlo_program(lowered)
    return run_program(code, fmt, args, jax.tree.leaves(lowered.out_info))


def _seed_programs():
    import jax.numpy as jnp  # noqa: PLC0415
    from jax import lax  # noqa: PLC0415

    x = np.ones((3, 4), np.float32)
    return {
        "elementwise": (lambda a: jnp.tanh(a) * 2 + a, (x,)),
        "reduce_dot": (lambda a: a.sum(0) @ a.T.sum(1, keepdims=True).T.T[:4], (x,)),
        "control_flow": (lambda a: lax.fori_loop(0, 3, lambda i, c: lax.cond(
            i > 1, lambda v: v * 2, lambda v: v + 1, c), a), (x,)),
        "sort_gather_scatter": (lambda a: (jnp.sort(a, 1), a[jnp.array([2, 0])],
                                           a.at[1].add(1.0)), (x,)),
        "conv_window": (lambda a: (lax.conv(a[None, None], jnp.ones((2, 1, 2, 2)), (1, 1), "SAME"),
                                   lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 1), "VALID")),
                        (x,)),
    }


def write_seeds(directory: str) -> None:
    """Writes the hlo_reader fuzzer's seed corpus (tools/make_fuzz_corpus.py keeps it)."""
    os.makedirs(directory, exist_ok=True)
    for name, (f, args) in _seed_programs().items():
        code, _ = hlo_program(jax.jit(f).lower(*args))
        with open(os.path.join(directory, name), "wb") as out:
            out.write(code)


if __name__ == "__main__":
    import sys  # noqa: PLC0415

    if sys.argv[1:] != ["--write-seeds"]:
        raise SystemExit("usage: program_formats_hlo.py --write-seeds")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    write_seeds(os.path.join(root, "tests", "fuzz", "corpus", "hlo_reader"))
