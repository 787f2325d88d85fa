"""KILN_PROGRAM_FORMAT=hlo_written: the program JAX sends Kiln (its portable artifact), read by Kiln
and written back as a serialized HloModuleProto by Kiln's own HLO writer (ingest/hlo_writer.h, via
`ir_dump --hlo` from the build directory that holds the plugin under test, else build/dev), checked
to parse in jaxlib's own HLO tooling (`XlaComputation`), then compiled as format "hlo" through
pypjrt: the outputs must equal JAX's bytecode run bit for bit (program_formats.check_formats). This
measures the writer, and the reader on what the writer makes, on every differential program of the
suite; what the writer refuses by name (UNIMPLEMENTED) is skipped and counted in
program_formats.REFUSED.
"""
from __future__ import annotations

import subprocess
import tempfile

from program_formats_written import _ir_dump


def hlo_written_program(lowered) -> tuple[bytes, bytes]:
    from jax._src import xla_bridge
    from jax._src.lib import _jax
    from jaxlib import _hlo

    version = xla_bridge.backend_stablehlo_version("kiln") or (1, 17, 0)
    artifact = _jax.mlir.serialize_portable_artifact(
        lowered.as_text(debug_info=True), ".".join(str(v) for v in version), True)
    with tempfile.NamedTemporaryFile(suffix=".mlir.bc") as f:
        f.write(artifact)
        f.flush()
        out = subprocess.run([_ir_dump(), "--hlo", f.name], capture_output=True, timeout=300)
    if out.returncode != 0 and out.stderr.startswith(b"UNIMPLEMENTED"):
        import program_formats  # noqa: PLC0415

        raise program_formats.NotEncodable(out.stderr.decode())
    assert out.returncode == 0, f"Kiln's HLO writer failed: {out.stderr.decode()}"
    # jaxlib's HLO tooling reads it (HloModule::CreateFromProto) and prints it.
    assert _hlo.XlaComputation(out.stdout).as_hlo_text().startswith("HloModule ")
    return out.stdout, b"hlo"
