// Kernel: the executable form of one op, produced at compile time by the op's lowering rule.
// Shapes, dtypes and attributes are resolved during lowering, so a kernel only moves data.
//
// The contract: a kernel reads its inputs and writes every output into memory the execution plan
// assigned before the step runs (compiler/buffer_plan.h). It allocates nothing for its results and
// never writes an input. Outputs never overlap inputs. Ops whose result is an input's memory
// reinterpreted (reshape, a leading-axis slice, optimization_barrier) say so with `aliases` and
// need no code; constants point at their literal with `constant`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/view.h"
#include "support/status.h"

namespace kiln::runtime {
class Rendezvous;
class Network;
class FfiUserData;
}  // namespace kiln::runtime

namespace kiln::lower {

// A value of a partitioned program's boundary whose pieces differ per device beyond what its
// sharding says (compiler/partition.h): an unreduced argument (each device holds its own partial
// sum) or a result a manual computation makes (each device gets its own instance's value, as on
// XLA, even where the sharding claims replication). It passes straight between the devices'
// buffers and the manual computation that takes or makes it, instead of through one global array.
// A dot_general's unreduced result (SpmdLayout::partial_sums) passes the same way, the dot's
// kernel writing each device's partial sum.
// `value` is that manual computation's operand or result.
struct DeviceValues {
  int32_t value = -1;                         // ir::ValueId
  std::vector<runtime::View> per_device;      // device d's piece
  std::vector<std::vector<int64_t>> offsets;  // where device d's piece starts in the global value
};

struct Program;

// What a kernel may ask about where it runs.
struct ExecContext {
  int device_ordinal = 0;
  int replica_id = 0;
  int partition_id = 0;
  int num_replicas = 1;
  int num_partitions = 1;
  // Where the device instances of an SPMD execution meet for collectives (null outside one, e.g.
  // in a single-device program or the global part of a partitioned one). Participant index:
  // replica_id * num_partitions + partition_id.
  runtime::Rendezvous* rendezvous = nullptr;
  // The global part of a partitioned run: its boundary values that pass per device.
  std::span<const DeviceValues> device_values;
  // A run over devices of several processes, where every process runs every device's instance
  // (engine/cross_process.h): per participant, 1 when its device is another process's. Host
  // callbacks without results run only in the device's own process. Empty: all are here.
  std::span<const uint8_t> remote;
  // A per-device run over several processes (SpmdLayout::per_device): each process runs only its
  // own devices' instances, and collectives reach the others' through the network. Per
  // participant, the process it belongs to.
  runtime::Network* network = nullptr;
  std::span<const int> process_of;
  uint64_t program_id = 0;  // a hash of the program, compared between processes at each exchange
  bool RemoteParticipant(int participant) const {
    return participant >= 0 && static_cast<size_t>(participant) < remote.size() &&
           remote[static_cast<size_t>(participant)] != 0;
  }
  bool OnRemoteDevice() const {
    return RemoteParticipant(replica_id * num_partitions + partition_id);
  }
  // The user data the client attached to this execution (PJRT_ExecuteContext, for XLA FFI
  // handlers: runtime/ffi.h), or null; and the execution's id (0: none given).
  std::shared_ptr<const runtime::FfiUserData> ffi_user_data;
  int64_t run_id = 0;
  // Memory the running step may use for as long as it runs: `Kernel::scratch_bytes` bytes, 64-byte
  // aligned (sub-program frames, loop carries). Set by the runner for each step.
  std::byte* scratch = nullptr;
};

using KernelFn = std::function<Status(ExecContext& ctx, std::span<const runtime::View> inputs,
                                      std::span<const runtime::View> outputs)>;

// An elementwise ("map") kernel, described so the fusion pass (compiler/fusion.h) can run several
// of them in one loop: out[i] = f(in[0][i], in[1][i], ...) for i in [begin, end). `range` gets each
// input's element 0; inputs marked `scalar` hold one element and are never offset.
using RangeFn = void (*)(const void* const* in, void* out, int64_t begin, int64_t end,
                         const void* state);
inline constexpr size_t kMaxMapInputs = 3;

// What a map kernel computes per element, for the loop code generator
// (codegen/native_loop.cc), which emits the ones it knows as instructions instead of
// calling `range`; kNone (or element types it does not handle) keeps the call. Range input order:
// out = op(in0, in1), select: in0 ? in1 : in2; kConvert and kCopy convert or copy in0; kBroadcast
// (an index map, MapInfo::absolute) sets every output element to in0's only element. Compare
// directions GT/GE arrive as LT/LE with swapped inputs; compares are the non-total-order ones.
enum class MapOp : uint8_t {
  kNone,
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kMaximum,
  kMinimum,
  kAnd,
  kOr,
  kXor,
  kNegate,
  kAbs,
  kSqrt,
  kNot,
  kEq,
  kNe,
  kLt,
  kLe,
  kSelect,
  kConvert,
  kCopy,
  kBroadcast,
  kVectorCall,  // fn(x): one f32 or f64 vector function, called with the operand's lanes
  // Integer shifts, the amount (in1) read as unsigned: from the width on, shift_left and
  // shift_right_logical give 0 and shift_right_arithmetic the sign fill.
  kShiftLeft,
  kShiftRightLogical,
  kShiftRightArithmetic,
  kRemainder,  // integers: IntRem's (elementwise_ops.h); floats: fmod
  kSign,
  // Complex parts: real(x), imag(x) (in: the complex type, out: its part's); complex(re, im).
  kReal,
  kImag,
  kComplex,
};
struct MapCode {
  MapOp op = MapOp::kNone;
  ir::DType in = ir::DType::kInvalid;   // element type of the (value) inputs
  ir::DType out = ir::DType::kInvalid;  // of the result
  // kVectorCall: the function, System V vector calling convention: 32 bytes of lanes (8 f32 or 4
  // f64) in ymm0 and back in ymm0, every vector register clobbered; the same bits per lane as
  // `range` computes (kernels/vector_math.h).
  const void* fn = nullptr;
};

struct MapInfo {
  RangeFn range = nullptr;
  MapCode code = {};                  // what `range` computes, when the code generator may emit it
  std::shared_ptr<const void> state;  // what `range` reads (the op functor)
  std::vector<int> input_order;       // which kernel input feeds range input i
  std::vector<bool> scalar;           // per range input
  std::vector<int> in_widths;         // per kernel input: element bytes
  int64_t elements = 0;               // of the output
  int out_width = 0;
  int64_t chunk = 1;  // elements per parallel chunk (smaller for costly functions)
  // An index map rather than an elementwise function (broadcast_in_dim): `range` reads each input
  // whole, at positions of its own choosing, and writes output elements [begin, end) to
  // out[0 .. end - begin). It only runs inside fused loops; the kernel's own code does the rest.
  bool absolute = false;
  // For an index map that broadcasts along the last axis: the length L of that axis when output
  // element i reads input element i / L (a row broadcast, e.g. softmax's sum over each row back to
  // the row), else 0. Lets the fusion pass read it tile by tile from a row reduction joined to
  // the same run (compiler/fusion.h).
  int64_t row_broadcast = 0;
};

// The kernel inputs a map kernel's output may be computed into: those read element by element
// (not as a scalar) at the output's width.
inline std::vector<int32_t> MapOverwritableInputs(const MapInfo& map) {
  std::vector<int32_t> inputs;
  if (map.absolute) return inputs;
  for (size_t r = 0; r < map.input_order.size(); ++r) {
    const int ki = map.input_order[r];
    if (!map.scalar[r] && map.in_widths[static_cast<size_t>(ki)] == map.out_width) {
      inputs.push_back(ki);
    }
  }
  return inputs;
}

// Output i is input `input`'s memory from `byte_offset` on, reinterpreted with the output's type.
struct OutputAlias {
  int input = -1;
  size_t byte_offset = 0;
};

// The direct form of a kernel that cannot fail once its operands are the ones the plan made (data
// movement, reductions with a known reducer) (the declared types, in bounds): the same work as
// `fn`, without checks or a Status. Loops call it instead of `fn` (engine/flat_program.h), and
// the compiler uses it to fold such a step over constant operands.
using DirectFn = void (*)(const void* state, const runtime::View* in, const runtime::View* out);
// One contiguous byte copy: `bytes` bytes of input `input` from byte `from` to output 0 at byte
// `to`.
struct BytePiece {
  uint32_t input = 0;
  uint32_t bytes = 0;
  uint64_t from = 0, to = 0;
};
// Rows [r0, r1) of a reduction over contiguous rows (Direct::rows).
using RowsFn = void (*)(const void* state, const void* x, const void* init, void* out, int64_t r0,
                        int64_t r1);
// A dynamic_update_slice whose update is one contiguous run of bytes in the result
// (Direct::update): output 0 is input 0 (`operand_bytes`, copied unless the output is its very
// memory) with input 1's `update_bytes` bytes written from byte sum_i clamp(start_i, 0,
// start_max[i]) * start_stride[i], start_i being input 2 + i, a scalar of type start_types[i].
struct UpdateSliceCode {
  uint64_t operand_bytes = 0;
  uint64_t update_bytes = 0;
  std::vector<ir::DType> start_types;
  std::vector<int64_t> start_max;
  std::vector<int64_t> start_stride;
};
struct SmallDotCode;   // lower/small_ops.h
struct BitReduceCode;  // lower/small_ops.h

struct Direct {
  DirectFn fn = nullptr;
  std::shared_ptr<const void> state;
  // Set when `fn` does exactly these copies and nothing else (a small slice, concatenate,
  // broadcast, ...): the loop code generator then emits them as loads and stores.
  std::shared_ptr<const std::vector<BytePiece>> pieces = {};
  // Set when `fn` reduces all `reduce_elements` elements of input 0 to output 0's one element,
  // from the initial value in input 1: out = init op (x0 op x1 op ... op x[n-1]), folded left to
  // right (reduce_all.op is kAdd, kMultiply, kMaximum or kMinimum with the reducer's NaN rule:
  // a NaN accumulator stays, then a NaN operand wins). The loop generator emits it inline.
  MapCode reduce_all = {};
  int64_t reduce_elements = 0;
  // Set when `fn` reduces input 0, rows of `row_length` contiguous elements, to output 0, one
  // element per row, from the initial value in input 1: rows(state, x, init, out, r0, r1)
  // computes out[r0, r1) exactly as `fn` does. The fusion pass calls it on the rows each tile of
  // the fused step that computes input 0 has just written (compiler/fusion.h).
  RowsFn rows = nullptr;
  int64_t row_length = 0;
  // Set when `fn` is the dynamic_update_slice this describes: the loop generator emits it inline.
  std::shared_ptr<const UpdateSliceCode> update = {};
  // Set when `fn` is a dynamic_slice whose result is one contiguous run of the operand: output 0
  // is `update_bytes` bytes of input 0 from byte sum_i clamp(start_i, 0, start_max[i]) *
  // start_stride[i], start_i being input 1 + i (operand_bytes: input 0's). Emitted inline too.
  std::shared_ptr<const UpdateSliceCode> slice = {};
  // Set when `fn` computes the tiny f32/f64 dot this describes (lower/small_ops.h): loop code emits
  // its multiply-adds inline.
  std::shared_ptr<const SmallDotCode> small_dot = {};
  // Set when `fn` computes the bitwise reduction this describes (lower/small_ops.h): emitted inline
  // too.
  std::shared_ptr<const BitReduceCode> bit_reduce = {};
};

struct Kernel {
  // Writes the outputs. Empty when every output is an alias or the constant.
  KernelFn fn;
  // Per output; empty, or one entry per output with input = -1 for outputs `fn` writes.
  std::vector<OutputAlias> aliases;
  // Output 0 is these bytes (read-only, shared by every run): stablehlo.constant, tokens.
  std::shared_ptr<const void> constant;
  // Scratch memory `fn` needs (ExecContext::scratch).
  size_t scratch_bytes = 0;
  // Set for elementwise kernels the fusion pass may merge; `fn` still runs them alone.
  std::shared_ptr<const MapInfo> map;
  // Set for func.call and composites: `fn` runs this program on the op's operands and results,
  // so a loop may inline it instead (engine/flat_program.h).
  std::shared_ptr<const Program> callee;
  // Set for stablehlo.case and stablehlo.if: `fn` runs one of these on inputs 1.. (input 0 the
  // selector: an i32 index, out of range taking the last; for `if`, a predicate, true taking
  // branch 0) and writes the outputs, so a loop may inline every branch instead (FlatProgram).
  std::vector<std::shared_ptr<const Program>> branches;
  bool branch_on_pred = false;
  // Set for stablehlo.while: where `fn` keeps the loop's state in its scratch, so a loop may
  // inline a loop nested in it instead (FlatProgram). Carries alternate between two sets.
  struct WhileLayout {
    std::shared_ptr<const Program> cond, body;  // over (carries, captures)
    std::vector<bool> passthrough;              // carry i stays in the op's input i
    std::vector<uint64_t> offset[2];            // per set, per carry: its bytes in the scratch
    uint64_t pred_offset = 0, sub_offset = 0;   // the condition's result; the programs' memory
  };
  std::shared_ptr<const WhileLayout> loop;
  // Output 0 may be given input `in_place_input`'s very memory (>= 0): the kernel then writes only
  // what changes (dynamic_update_slice). Loops use it to update a carried array in place.
  int in_place_input = -1;
  // Set for data-movement kernels: their direct form.
  Direct direct;
  // Set when input 0 is f32 that a convert made from 16-bit float codes (the convert's operand
  // type): the same work, with the same bits, reading those codes instead and widening them as it
  // reads. The compiler runs it in place of the pair when nothing else reads the converted values
  // (compiler/narrow_inputs.h).
  std::shared_ptr<const Kernel> narrow_input;

  Kernel() = default;
  template <typename F, typename = std::enable_if_t<std::is_constructible_v<KernelFn, F&&> &&
                                                    !std::is_same_v<std::decay_t<F>, Kernel>>>
  Kernel(F&& f) : fn(std::forward<F>(f)) {}  // NOLINT: implicit, lowering rules return lambdas

  // Output 0 (of one) is input `input` at `byte_offset`.
  static Kernel Alias(int input, size_t byte_offset = 0) {
    Kernel k;
    k.aliases.push_back({input, byte_offset});
    return k;
  }
  // Output 0 is `bytes` (which must hold the output's byte size).
  static Kernel Constant(std::shared_ptr<const void> bytes) {
    Kernel k;
    k.constant = std::move(bytes);
    return k;
  }
  // Output i is input i, for i < n (optimization_barrier, identity casts).
  static Kernel Forward(size_t n) {
    Kernel k;
    for (size_t i = 0; i < n; ++i) k.aliases.push_back({static_cast<int>(i), 0});
    return k;
  }
  int alias_of(size_t output) const { return output < aliases.size() ? aliases[output].input : -1; }
};

}  // namespace kiln::lower
