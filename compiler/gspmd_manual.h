// shard_map and pmap as GSPMD lowers them (jax_use_shardy_partitioner=False):
//
//   %x' = custom_call @Sharding(%x) {mhlo.sharding = S}           how %x is split over devices
//   %l  = custom_call @SPMDFullToShardShape(%x') {"{manual}"}     each device's piece
//   %r  = call @body(%l, ...)                                    per-device code
//   %r' = custom_call @Sharding(%r) {"{manual}"}
//   %y  = custom_call @SPMDShardToFullShape(%r') {mhlo.sharding = T}   the pieces put together
//
// RewriteGspmdManual replaces each such group by one `kiln.gspmd_manual_computation` op (operands
// %x..., results %y..., attributes in_shardings = [S...], out_shardings = [T...] as text,
// num_devices) whose body calls @body: kernels/manual_computation.cc runs it once per device, as
// it runs Shardy's sdy.manual_computation. Groups whose values between the bridges are manual
// (`{manual}`, or manual along a subgroup and whole otherwise: a shard_map over some of the mesh's
// axes) and used by the group alone are rewritten, in any function or region; anything else keeps
// its custom calls, which Kiln refuses by name.
#pragma once

#include "ir/module.h"
#include "support/status.h"

namespace kiln::compiler {

// Whether `module` holds GSPMD bridges (@SPMDFullToShardShape / @SPMDShardToFullShape).
bool HasGspmdManual(const ir::Module& module);

// Rewrites the groups described above; `devices` is the program's partition count.
Status RewriteGspmdManual(ir::Module& module, int64_t devices);

}  // namespace kiln::compiler
