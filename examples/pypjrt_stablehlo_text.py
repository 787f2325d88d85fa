"""A hand-written StableHLO program (MLIR text) compiled and run on Kiln by a second PJRT client,
pypjrt (PyPI `pypjrt`, pure Python over ctypes), without JAX.

  python examples/pypjrt_stablehlo_text.py [path/to/libkiln_pjrt.so]

Without an argument it uses the library of the installed `kiln-pjrt` wheel. Prints
[ 1.5  3.5  5.5  7.5] and the same result again from the program given as bytes.
"""

from __future__ import annotations

import sys

import numpy as np
from pypjrt import Client
from pypjrt.typing import F32

PROGRAM = """
module @example {
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %two = stablehlo.constant dense<2.0> : tensor<4xf32>
    %0 = stablehlo.multiply %x, %two : tensor<4xf32>
    %1 = stablehlo.add %0, %y : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""


def main() -> None:
    if len(sys.argv) > 1:
        library = sys.argv[1]
    else:
        import kiln

        library = kiln.library_path()
    client = Client.create(library)
    executable = client.compile(PROGRAM)  # format "mlir": text (or a portable artifact's bytes)
    x = np.arange(4, dtype=np.float32)
    y = np.full(4, 1.5, np.float32)
    with client.device(0) as device:
        args = [client.typed_buffer(F32, bytearray(a.tobytes()), a.shape, device) for a in (x, y)]
    (out,) = executable(*args)
    result = np.frombuffer(out.to_host(), np.float32)
    print(result)
    assert np.array_equal(result, 2 * x + y)


if __name__ == "__main__":
    main()
