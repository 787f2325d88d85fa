// The lowering contract's vocabulary (lower/), named without qualification in kernels/: what a
// lowering rule gets (LowerContext), returns (Kernel and its parts) and registers with
// (OpRegistry), and the programs control-flow kernels run.
#pragma once

#include "lower/kernel.h"
#include "lower/op_registry.h"
#include "lower/program.h"

namespace kiln::kernels {

using lower::AlignUp64;
using lower::BytePiece;
using lower::CustomCallDef;
using lower::DeviceValues;
using lower::Direct;
using lower::ExecContext;
using lower::Kernel;
using lower::KernelFn;
using lower::LowerContext;
using lower::MapCode;
using lower::MapInfo;
using lower::MapOp;
using lower::OpDef;
using lower::OpRegistry;
using lower::OutputAlias;
using lower::Program;
using lower::RangeFn;
using lower::Step;

}  // namespace kiln::kernels
