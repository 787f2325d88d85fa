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

from program_formats_written import rewrite_with_ir_dump


def hlo_written_program(lowered) -> tuple[bytes, bytes]:
    from jaxlib import _hlo

    proto = rewrite_with_ir_dump(lowered, "--hlo")
    # jaxlib's HLO tooling reads it (HloModule::CreateFromProto) and prints it.
    assert _hlo.XlaComputation(proto).as_hlo_text().startswith("HloModule ")
    return proto, b"hlo"
