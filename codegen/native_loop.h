// Native code for a whole stablehlo.while (engine/flat_program.h: NativeLoop), generated from its
// condition's and body's flat programs (codegen/native_loop.cc).
#pragma once

#include <memory>

#include "engine/flat_program.h"

namespace kiln::codegen {

// The loop as native code, or null when none can be made for this machine or setting (no AVX,
// KILN_LOOP_JIT=0, tables too large, no executable memory): the engine then interprets the flat
// programs.
std::shared_ptr<const engine::NativeLoop> BuildNativeLoop(
    std::shared_ptr<const engine::FlatProgram> cond,
    std::shared_ptr<const engine::FlatProgram> body);

// One run of a flat program (a case/if branch) as native code, the steps emitted as in a loop's
// body; run it with NativeLoop::Run (every table entry that program's table), or null as above.
std::shared_ptr<const engine::NativeLoop> BuildNativeOnce(
    std::shared_ptr<const engine::FlatProgram> program);

}  // namespace kiln::codegen
