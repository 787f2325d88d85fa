// Structural verification of a module before lowering: value ids in range, single definitions,
// signatures consistent with bodies. Per-op type rules are checked by each op's lowering rule.
#pragma once

#include "ir/module.h"
#include "support/status.h"

namespace kiln::compiler {

Status VerifyModule(const ir::Module& module);

}  // namespace kiln::compiler
