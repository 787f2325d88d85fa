// The plan of a manual computation's kernel (kernels/manual_computation.cc): what each device's
// instance of the body reads and writes. Private to the manual-computation kernels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"
#include "lower/op_registry.h"
#include "lower/program.h"
#include "lower/sharding.h"
#include "support/status.h"

namespace kiln::kernels::manual {

using lower::ShardBox;
using lower::TensorSharding;

struct Piece {
  ShardBox box;
  bool whole = false;  // the instance uses the global array itself
  bool zeros = false;  // an unreduced operand's partial sum on a device off the unreduced origin
  size_t offset = 0;   // of the local buffer in the instance's scratch
  // Results: the primary holder writes its block, partial holders (along unreduced axes) add
  // theirs, replicas write nothing.
  TensorSharding::Holder holder = TensorSharding::Holder::kPrimary;
};

struct ManualPlan {
  std::shared_ptr<const lower::Program> body;
  int devices = 1;
  std::vector<ir::Type> in_global, out_global;  // operand / result types
  std::vector<ir::Type> in_local, out_local;    // the body's parameter / result types
  std::vector<std::vector<Piece>> in, out;      // [device][operand or result]
  // Nested in another manual computation: the devices that differ from device d only along this
  // op's manual axes (d's group, d included), and how each device holds each result within its
  // group (along those axes only).
  std::vector<std::vector<int>> peers;
  std::vector<std::vector<TensorSharding::Holder>> group_holders;  // [device][result]
  // Per operand / result: the boundary value that passes per device, or -1.
  std::vector<ir::ValueId> in_per_device, out_per_device;
  std::vector<TensorSharding> ins, outs;  // along the manual axes, per operand / result
  size_t frame_offset = 0;
  size_t instance_bytes = 0;
  std::string name;
};

// Plans a kiln.gspmd_manual_computation (GSPMD's shard_map, compiler/gspmd_manual.h): its
// device count, each value's sharding from its text, and one group of every device.
Status PlanGspmd(lower::LowerContext& ctx, ManualPlan& plan);

}  // namespace kiln::kernels::manual
