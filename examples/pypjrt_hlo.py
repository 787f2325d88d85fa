"""An HloModuleProto (program format "hlo", what TensorFlow and PyTorch/XLA send) compiled and run
on Kiln through the PJRT C API by pypjrt. JAX only writes the proto here
(`compiler_ir("hlo").as_serialized_hlo_module_proto()`); Kiln reads it with its own HLO reader.

  python examples/pypjrt_hlo.py [path/to/libkiln_pjrt.so]

Prints the softmax of [0, 1, 2, 3] computed from the HLO program, equal to JAX's result.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
from pypjrt import Client, CompileOptions
from pypjrt.client import Executable
from pypjrt.typing import F32


def compile_hlo(client: Client, proto: bytes) -> Executable:
    """PJRT_Client_Compile with PJRT_Program.format = "hlo" (pypjrt's compile() sends "mlir"),
    through pypjrt's ABI bindings."""
    plugin = client._plugin  # noqa: SLF001
    options = CompileOptions().encode(plugin.abi)
    keep = [ctypes.create_string_buffer(b, len(b)) for b in (proto, b"hlo", options)]
    program = plugin.args("PJRT_Program", code=ctypes.cast(keep[0], ctypes.c_void_p),
                          code_size=len(proto), format=ctypes.cast(keep[1], ctypes.c_void_p),
                          format_size=3)
    args = plugin.args("PJRT_Client_Compile_Args", client=client._check(),  # noqa: SLF001
                       program=ctypes.addressof(program),
                       compile_options=ctypes.cast(keep[2], ctypes.c_void_p),
                       compile_options_size=len(options))
    plugin.call("PJRT_Client_Compile", args)
    return Executable(plugin, args.executable, client)


def main() -> None:
    import jax

    x = np.arange(4, dtype=np.float32)
    lowered = jax.jit(jax.nn.softmax).trace(x).lower(lowering_platforms=("cpu",))
    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    if len(sys.argv) > 1:
        library = sys.argv[1]
    else:
        import kiln

        library = kiln.library_path()
    client = Client.create(library)
    executable = compile_hlo(client, proto)
    with client.device(0) as device:
        (out,) = executable(client.typed_buffer(F32, bytearray(x.tobytes()), x.shape, device))
    result = np.frombuffer(out.to_host(), np.float32)
    print(result)
    np.testing.assert_allclose(result, np.asarray(jax.nn.softmax(x)), rtol=1e-6)


if __name__ == "__main__":
    main()
