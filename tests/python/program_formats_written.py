"""KILN_PROGRAM_FORMAT=written: the program JAX sends Kiln (its portable artifact), read by Kiln and
printed back as MLIR text by Kiln's own writer (ir::WriteMlirText, via `ir_dump --mlir` from the
build directory that holds the plugin under test, else build/dev), checked to parse and verify in
jaxlib's MLIR parser, then compiled from that text through pypjrt: the outputs must equal JAX's
bytecode run bit for bit (program_formats.check_formats). This measures the writer on every
differential program of the suite; what the writer refuses by name (UNIMPLEMENTED: e.g. Shardy
sharding rules the bytecode reader keeps opaque) is skipped and counted in
program_formats.REFUSED. Without an `ir_dump` the format is refused.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

from pjrt_client import kiln_library


def _ir_dump() -> str:
    """`ir_dump` beside the plugin under test (a build directory), else build/dev's."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates = [os.path.join(os.path.dirname(kiln_library()), "ir_dump"),
                  os.path.join(repo, "build", "dev", "ir_dump")]
    for path in candidates:
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"KILN_PROGRAM_FORMAT=written needs one of {candidates}")


def rewrite_with_ir_dump(lowered, flag: str) -> bytes:
    """The artifact JAX would send for `lowered`, read by Kiln and written back by `ir_dump FLAG`
    (its stdout). A refusal by name (UNIMPLEMENTED) raises program_formats.NotEncodable."""
    from jax._src import xla_bridge
    from jax._src.lib import _jax

    version = xla_bridge.backend_stablehlo_version("kiln") or (1, 17, 0)
    artifact = _jax.mlir.serialize_portable_artifact(
        lowered.as_text(debug_info=True), ".".join(str(v) for v in version), True)
    with tempfile.NamedTemporaryFile(suffix=".mlir.bc") as f:
        f.write(artifact)
        f.flush()
        out = subprocess.run([_ir_dump(), flag, f.name], capture_output=True, timeout=300)
    if out.returncode != 0 and out.stderr.startswith(b"UNIMPLEMENTED"):
        import program_formats  # noqa: PLC0415

        raise program_formats.NotEncodable(out.stderr.decode())
    assert out.returncode == 0, f"Kiln's writer (ir_dump {flag}) failed: {out.stderr.decode()}"
    return out.stdout


def written_program(lowered) -> tuple[bytes, bytes]:
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    text = rewrite_with_ir_dump(lowered, "--mlir").decode()
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        assert module.operation.verify(), "jaxlib's verifier refuses the written text"
    return text.encode(), b"mlir"
