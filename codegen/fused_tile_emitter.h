// The code generator of fused runs, shared by its two files (not part of the API):
// fused_native.cc plans a run and generates its loop (TileEmitter::Plan, Generate; the
// entry point BuildNativeTile), fused_tile_emitter.cc emits its members and keeps the
// registers (values, spills, loads and stores of every element type). What the code does:
// fused_native.cc's header comment.
#pragma once

#include <xbyak/xbyak.h>

#include <cstdint>
#include <vector>

#include "codegen/native_half.h"
#include "codegen/native_ops.h"
#include "lower/fused_plan.h"

namespace kiln::codegen::fused_detail {

using lower::FusedPlan;
using lower::MapCode;
using lower::MapOp;

using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

constexpr int kPool = 13;  // values live in ymm0-ymm12
// Runs over fewer elements stay interpreted: one tile of member calls costs little there, and
// generating a run's code costs about 25 us of compile time (40 fused steps of a transformer's
// gradient: 1 ms), mostly for the small runs of loop bodies, which loops run their own way.
constexpr int64_t kMinElements = 256;
// ... unless the run has at least this many members: then interpreting it costs a member call per
// member per call (a 32-member run of jax.random's threefry on 3 values: 0.25 us interpreted,
// 0.1 us native), paid on every call, against one generation per structure (TileCache).
constexpr size_t kMinMembersWhenSmall = 16;
constexpr int kMaskReg = 13, kTempReg = 14, kSignReg = 15;
// Whole iterations handle two vectors, each member emitted for the first and then the second, so
// the two vectors' dependency chains (an inline tanh is ~50 cycles deep) sit side by side in the
// out-of-order window instead of one iteration apart. tanh/exp/sqrt chain (bench), alternating in
// one process: 262,144 elements 385 -> 371 us (530 -> 508 on one core), 4M 4.94 -> 4.76 ms. The
// rest runs one vector at a time under a lane mask.
constexpr int kWays = 2;

// A value the members read: a member's result (id = member index) or the elements of one pointer
// (id = members + pointer index: a fused-step input or an index map's tile).
struct Source {
  int value = -1;
  int pointer = -1;  // for pointer values
  bool scalar = false;
};

class TileEmitter : public Xbyak::CodeGenerator {
 public:
  TileEmitter(const FusedPlan& f, size_t begin, size_t end, bool f64, bool avx512)
      : Xbyak::CodeGenerator(4096, Xbyak::AutoGrow),
        f_(f),
        begin_(static_cast<int>(begin)),
        end_(static_cast<int>(end)),
        f64_(f64),
        avx512_(avx512) {}

  // False when a member is not one the generator handles.
  bool Plan();
  void Generate();
  // After Plan(): lower::NativeTile::untiled.
  bool Untiled() const { return untiled_; }

 private:
  int Members() const { return static_cast<int>(f_.members.size()); }
  // A member on 32-bit integer or predicate lanes this code computes with integer instructions
  // (EmitInt32Op, EmitInt32Lanes): they share the f32 runs' lanes, so one run may mix them (random
  // bits made into floats, integer arithmetic with compares and selects). Predicates are lane
  // masks in registers, bytes in memory.
  bool IsInt32Member(const MapCode& c) const {
    static const bool allowed = Avx2Available("KILN_FUSED_JIT") && Bmi2Available();
    return allowed && !f64_ && Int32LaneMember(c);
  }
  // A member computing 16-bit float values in f32 lanes (native_half.h): arithmetic or a vector
  // function on bf16/f16, or a conversion between one of them and f32. 0 when it is not one.
  ir::DType HalfOf(const MapCode& c) const {
    if (f64_) return ir::DType::kInvalid;
    const bool known_float =
        IsFloatArithmetic(c.op) || (c.op == MapOp::kVectorCall && c.fn != nullptr);
    if (known_float && IsHalfFloat(c.in) && c.out == c.in && HalfCodeAvailable(c.in)) return c.in;
    if (c.op != MapOp::kConvert) return ir::DType::kInvalid;
    if (IsHalfFloat(c.in) && c.out == ir::DType::kF32 && HalfCodeAvailable(c.in)) return c.in;
    if (c.in == ir::DType::kF32 && IsHalfFloat(c.out) && HalfCodeAvailable(c.out)) return c.out;
    return ir::DType::kInvalid;
  }
  // A complex64 member (fused_complex.cc: add, subtract, multiply, negate, abs, select, compare
  // eq/ne) or an f32 compare, in the f32 runs' lanes (complex128 add, subtract, multiply, negate
  // and abs in the f64 runs'): a complex value is two registers, its real
  // and its imaginary parts of the same 8 (16) elements, split when loaded and joined when stored.
  bool IsComplexMember(const MapCode& c) const;
  // The element type of member m's range input i.
  static ir::DType OperandType(const MapCode& c, size_t i) {
    return c.op == MapOp::kSelect && i == 0 ? ir::DType::kPred : c.in;
  }
  // Bytes per element of type `t` in memory (a run is all 4-byte lanes, or all f64).
  int WidthOf(ir::DType t) const {
    return t == ir::DType::kPred   ? 1
           : t == ir::DType::kC128 ? 16
           : t == ir::DType::kC64  ? 8
           : f64_                  ? 8
                                   : 4;
  }
  static bool IsComplex(ir::DType t) { return t == ir::DType::kC64 || t == ir::DType::kC128; }
  // Value ids: members, then pointers (values_ of them); with complex values, the imaginary part
  // of value v is value Im(v) = values_ + v.
  int Ids() const { return complex_ ? 2 * values_ : values_; }
  int Im(int v) const { return v + values_; }
  int Base(int v) const { return v >= values_ ? v - values_ : v; }
  // Member m as a complex member (fused_complex.cc), and complex pointer p's parts of way `way`
  // loaded into registers / stored from them.
  void EmitComplexMember(int m, int way, bool masked);
  // (d0, d1) = (ar, ai) / (br, bi) as complex_arith.h's ComplexDivide<true>, with six scratch
  // registers (fused_complex_divide.cc); kSignReg must hold the sign mask.
  void EmitComplexDivide(int ar, int ai, int br, int bi, int d0, int d1, const int scratch[6]);
  void LoadComplex(int p, int way, int re, int im, bool masked);
  void StoreComplex(int p, int way, int re, int im, bool masked, int at);
  // Members this code computes: [begin_, end_) and not index maps.
  bool Computes(int m) const {
    return m >= begin_ && m < end_ && !f_.members[static_cast<size_t>(m)].absolute;
  }
  int PointerOf(const Ref& r) const {
    const int inputs = static_cast<int>(f_.input_elements.size());
    const int temps = static_cast<int>(f_.temp_widths.size());
    switch (r.kind) {
      case Ref::kInput:
        return r.index;
      case Ref::kTemp:
        return inputs + r.index;
      case Ref::kOutput:
        break;
    }
    return inputs + temps + r.index;
  }
  void Body(bool masked, int ways);
  void EmitMember(int m, int way, bool masked);
  // Values are held per way (the vector at byte offset VB() * way of the iteration): key = value *
  // kWays + way. A scalar input is the same in every way and has one key (way 0).
  int Key(int value, int way) const {
    const int p = Base(value) - Members();
    const bool shared = p >= 0 && pointer_scalar_[static_cast<size_t>(p)];
    return value * kWays + (shared ? 0 : way);
  }
  int Get(int value, int way, int pin0, int pin1, bool masked, int at);
  int Allocate(int pin0, int pin1, int at, int pin2 = -1);
  // Loads / stores the lanes of predicate pointer p (bytes in memory, lane masks in registers).
  void LoadPred(int reg, int p, int way, bool masked);
  void StorePred(int reg, int p, int way, bool masked);
  // The stack bytes a masked predicate load or store goes through, and the lane count there.
  Xbyak::Address PredBuffer() { return ptr[rsp + VB() * (Ids() * kWays + 2)]; }
  Xbyak::Address TailCount() { return ptr[rsp + VB() * (Ids() * kWays + 2) + 16]; }
  int NextUse(int key, int at) const;
  void Spill(int reg, int at);
  void EnsureMask();
  // The 16-bit pointer p's address at this iteration's element offset (rax = the pointer, rdx the
  // offset), or, under the tail's mask, the bounce buffer (`load`: filled from the pointer first).
  Xbyak::Address HalfAddress(int p, int way, bool masked, bool load);
  void HalfBounceOut(int p);
  int Bounce() const { return VB() * (Ids() * kWays + 1); }
  // Bytes per vector, and vector register r: zmm when the code is wide, else ymm.
  int VB() const { return wide_ ? 64 : 32; }
  Xbyak::Xmm V(int r) const {
    return wide_ ? Xbyak::Xmm(Xbyak::Zmm(r)) : Xbyak::Xmm(Xbyak::Ymm(r));
  }
  Xbyak::Address Slot(int key) { return ptr[rsp + VB() * (key + 1)]; }

  const FusedPlan& f_;
  const int begin_, end_;  // the members this code covers (the rest ran before or run after)
  const bool f64_;
  const bool avx512_;  // the CPU has it: Plan() makes the code wide if every member allows
  bool wide_ = false;
  int ways_ = 1;                            // of the body being emitted
  std::vector<std::vector<Source>> reads_;  // per member: its operands
  std::vector<std::vector<int>> uses_;      // per value: the members reading it, in order
  std::vector<int> pointer_value_;          // per pointer: its value id
  std::vector<bool> pointer_scalar_;
  std::vector<ir::DType> pointer_type_;  // per pointer: its elements' type when 16-bit floats
  bool halves_ = false;                  // some member computes 16-bit floats
  std::vector<bool> pointer_pred_;
  std::vector<bool> pointer_complex_;  // per pointer: complex64 elements
  bool complex_ = false;               // some value is complex
  // Per pointer: the stack slot of the f64 reciprocal of the divisor it holds (a scalar read by an
  // s32/u32 divide or remainder), computed before the loop; -1: none. And whether it is signed.
  std::vector<int> rcp_slot_;
  std::vector<bool> rcp_signed_;
  // Per pointer: the divisor it holds when that is a known constant (KnownSplat).
  std::vector<FusedPlan::Splat> divisor_bits_;
  // What a member's operand r is known to hold in every lane: a splat constant input, or the
  // broadcast of a one-element one (temp_member: the member writing each temporary).
  FusedPlan::Splat KnownSplat(const Ref& r, const std::vector<int>& temp_member) const;
  int rcp_count_ = 0;
  Xbyak::Address Rcp(int slot) { return qword[rsp + VB() * (Ids() * kWays + 3) + 8 * slot]; }
  bool untiled_ = false;
  std::vector<bool> store_;  // per member: its result goes to memory (an output, or read later)
  int values_ = 0;
  // Register state while emitting one body.
  int reg_value_[kPool];        // keys
  std::vector<int> value_reg_;  // per key
  std::vector<bool> in_slot_;
  bool mask_loaded_ = false;
  uint32_t reserved_ = 0;  // registers Allocate must not hand out (an inline function's)
  // kSignReg holds the sign mask (negate, abs): loaded once before the loop when no member is a
  // call (which clobbers it), else when needed after each call.
  bool sign_hoisted_ = false;
  bool sign_ready_ = false;
  // Per pointer: the register (zmm16-zmm31) holding its scalar's lanes for the whole call, loaded
  // before the loop (HoistScalars); -1: loaded where read, as any value.
  std::vector<int> pointer_hoisted_;
  void HoistScalars();
  Xbyak::Label table_;
  Xbyak::Label half_constants_;
};

}  // namespace kiln::codegen::fused_detail
