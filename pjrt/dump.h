// XLA's dump options, as a CPU backend serves them: `compile(compiler_options={"xla_dump_to": dir,
// ...})` (env_option_overrides) writes the program of every compile and every
// PJRT_Executable_DeserializeAndLoad (a persistent-cache hit) into `dir`, created if missing:
//
//   module_<id>.<module name>.before_optimizations.txt   the program as Kiln read it
//   module_<id>.<module name>.after_optimizations.txt    the program Kiln compiled (after its own
//                                                        rewrites: inlined calls, entry layouts,
//                                                        ...)
//
// as MLIR text (ir::WriteMlirText, the text compiled.as_text() is made from), and with
// `xla_dump_hlo_as_proto` the same programs as `*.hlo.pb`: an xla.HloProto holding the
// HloModuleProto Kiln's HLO writer makes of them (ingest/hlo_writer.h), which XLA's tools and
// Kiln's own `hlo` format read. `xla_dump_hlo_as_text` (on unless only the proto was asked for)
// turns the text files off. `<id>` is a four-digit number counting the dumped modules of the
// process. A program the HLO writer cannot express gets its text files and a warning on stderr
// naming the op instead of a `.hlo.pb`; a file that cannot be written is a warning too, never a
// failed compile. Other `xla_dump_*` options are accepted and ignored.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "compiler/compile.h"

namespace kiln::pjrt {

void DumpCompiled(const compiler::Executable& exe, std::span<const uint8_t> code,
                  std::string_view format);

}  // namespace kiln::pjrt
