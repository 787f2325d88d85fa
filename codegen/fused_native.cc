// The code generator of fused elementwise runs (fused_native.h).
//
// What it handles: runs whose element-wise members all compute f32 (or all f64) values with
// instructions (EmitFloatOp: add, subtract, multiply, divide, maximum, minimum, negate, abs, sqrt)
// or vector functions (MapOp::kVectorCall, kernels/vector_math.h: Kiln's own f32 exp and tanh
// emitted inline, codegen/native_math.h; the others, SLEEF's, called with a register of lanes),
// and, on AVX2 CPUs, s32/u32 members that are integer instructions (EmitInt32Op: wrapping
// add/subtract/multiply, bitwise ops, shifts, maximum/minimum; JAX's threefry random bits are
// made of them) beside f32 ones, reading fused-step inputs (whole or scalar), index maps' tiles and
// each other. Any other member (compares, conversions, 8/16/64-bit integers, ...) leaves the run
// interpreted.
//
// The code: fn(ptrs, len) walks the tile two vectors of 32 bytes at a time (kWays); the rest, one
// vector at a time, is read and written with vmaskmov (lanes past len are neither read nor
// written; their values are never stored). On CPUs with AVX512F and AVX512DQ, runs whose members
// are all instructions or inline functions (no call: called functions take ymm0) use zmm
// registers, 64 bytes per vector, with the rest under the lane mask k2 (k1 is scratch for
// compares); KILN_FUSED_JIT_AVX512=0 keeps them to ymm. Same instructions per lane, same bits (but
// for which payload an add or multiply of two NaNs returns: docs/engine.md, Overview). Each
// member is an instruction on registers; values are assigned to ymm0-ymm12 as they are computed and
// freed after their last reader; when registers run out, the value read farthest ahead goes to its
// stack slot (or, for an input, is read again). An inline function takes its scratch registers the
// same way; a called one clobbers every vector register: values still needed are stored to their
// slots first. Member results that leave the run are stored to their output as they are computed.
// Per lane this is exactly what the member's range function computes (the same IEEE instructions,
// the same vector function on the same lanes; maximum/minimum as EmitFloatOp documents), so fusion
// still changes no result.
#include "codegen/fused_native.h"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/fused_tile_cache.h"
#include "codegen/native_half.h"
#include "codegen/native_math_emit.h"
#include "codegen/native_ops.h"
#include "lower/fused_plan.h"

namespace kiln::codegen {

using lower::FusedPlan;
using lower::MapCode;
using lower::MapOp;
namespace {

using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

constexpr int kPool = 13;  // values live in ymm0-ymm12
// Runs over fewer elements stay interpreted: one tile of member calls costs little there, and
// generating a run's code costs about 25 us of compile time (40 fused steps of a transformer's
// gradient: 1 ms), mostly for the small runs of loop bodies, which loops run their own way.
constexpr int64_t kMinElements = 256;
constexpr int kMaskReg = 13, kTempReg = 14, kSignReg = 15;
// Whole iterations handle two vectors, each member emitted for the first and then the second, so
// the two vectors' dependency chains (an inline tanh is ~50 cycles deep) sit side by side in the
// out-of-order window instead of one iteration apart. tanh/exp/sqrt chain (bench), alternating in
// one process: 262,144 elements 385 -> 371 us (530 -> 508 on one core), 4M 4.94 -> 4.76 ms. The
// rest runs one vector at a time under a lane mask.
constexpr int kWays = 2;

bool Allowed() {
  static const bool allowed = NativeCodeAllowed("KILN_FUSED_JIT");
  return allowed;
}

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

 private:
  int Members() const { return static_cast<int>(f_.members.size()); }
  // A member on 32-bit integer lanes this code computes with integer instructions (EmitInt32Op):
  // they share the f32 runs' lanes, so one run may mix them (random bits made into floats).
  bool IsInt32Member(const MapCode& c) const {
    static const bool avx2 = Avx2Available("KILN_FUSED_JIT");
    return avx2 && !f64_ && (c.in == ir::DType::kS32 || c.in == ir::DType::kU32) && c.out == c.in &&
           IsInt32Arithmetic(c.op);
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
    const int p = value - Members();
    const bool shared = p >= 0 && pointer_scalar_[static_cast<size_t>(p)];
    return value * kWays + (shared ? 0 : way);
  }
  int Get(int value, int way, int pin0, int pin1, bool masked, int at);
  int Allocate(int pin0, int pin1, int at);
  int NextUse(int key, int at) const;
  void Spill(int reg, int at);
  void EnsureMask();
  // The 16-bit pointer p's address at this iteration's element offset (rax = the pointer, rdx the
  // offset), or, under the tail's mask, the bounce buffer (`load`: filled from the pointer first).
  Xbyak::Address HalfAddress(int p, int way, bool masked, bool load);
  void HalfBounceOut(int p);
  int Bounce() const { return VB() * (values_ * kWays + 1); }
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
  Xbyak::Label table_;
  Xbyak::Label half_constants_;
};

bool TileEmitter::Plan() {
  const ir::DType t = f64_ ? ir::DType::kF64 : ir::DType::kF32;
  const int width = f64_ ? 8 : 4;
  // Outputs: one per member at most, and the two row reductions' (ahead of and inside the run).
  const int pointers = static_cast<int>(f_.input_elements.size() + f_.temp_widths.size()) +
                       static_cast<int>(f_.members.size()) + 2;
  values_ = Members() + pointers;
  pointer_value_.resize(static_cast<size_t>(pointers));
  pointer_scalar_.assign(static_cast<size_t>(pointers), false);
  pointer_type_.assign(static_cast<size_t>(pointers), ir::DType::kInvalid);
  for (int p = 0; p < pointers; ++p) pointer_value_[static_cast<size_t>(p)] = Members() + p;
  uses_.assign(static_cast<size_t>(values_), {});
  // Which member writes each temporary / output.
  std::vector<int> temp_member(f_.temp_widths.size(), -1), out_member(f_.members.size() + 2, -1);
  store_.assign(f_.members.size(), false);
  bool any = false;
  for (int m = 0; m < Members(); ++m) {
    const Member& mem = f_.members[static_cast<size_t>(m)];
    std::vector<int>& writer = mem.out.kind == Ref::kTemp ? temp_member : out_member;
    writer[static_cast<size_t>(mem.out.index)] = m;
    reads_.emplace_back();
    if (mem.absolute) {
      // Run before the code, over the whole tile: it must not write what an input may share.
      if (mem.out.kind != Ref::kTemp) return false;
      continue;
    }
    if (!Computes(m)) continue;  // the other part's: its results are in memory
    any = true;
    store_[static_cast<size_t>(m)] = mem.out.kind == Ref::kOutput;
    const MapCode& c = mem.code;
    const bool known_float =
        IsFloatArithmetic(c.op) || (c.op == MapOp::kVectorCall && c.fn != nullptr);
    const bool half = HalfOf(c) != ir::DType::kInvalid;
    halves_ |= half;
    if (!(known_float && c.in == t && c.out == t) && !IsInt32Member(c) && !half) return false;
    const int in_width = half ? static_cast<int>(ir::DTypeByteSize(c.in)) : width;
    const int out_width = half ? static_cast<int>(ir::DTypeByteSize(c.out)) : width;
    const int arity = c.op == MapOp::kConvert ? 1 : ArityOf(c.op);
    if (mem.out.width != out_width || static_cast<int>(mem.in.size()) != arity) return false;
    if (IsHalfFloat(c.out)) pointer_type_[static_cast<size_t>(PointerOf(mem.out))] = c.out;
    for (const Ref& r : mem.in) {
      if (r.width != in_width) return false;
      Source s;
      if (r.kind != Ref::kInput) {
        const int w =
            (r.kind == Ref::kTemp ? temp_member : out_member)[static_cast<size_t>(r.index)];
        if (w < 0) return false;
        if (Computes(w)) s.value = w;
        // A row broadcast in tiles of one row: RunFused points at the row's value.
        s.scalar = f_.members[static_cast<size_t>(w)].row_value;
      }
      if (s.value < 0) {
        s.pointer = PointerOf(r);
        s.scalar = s.scalar || (r.kind == Ref::kInput && r.scalar);
        s.value = pointer_value_[static_cast<size_t>(s.pointer)];
        pointer_scalar_[static_cast<size_t>(s.pointer)] = s.scalar;
        if (IsHalfFloat(c.in)) pointer_type_[static_cast<size_t>(s.pointer)] = c.in;
      }
      uses_[static_cast<size_t>(s.value)].push_back(m);
      reads_.back().push_back(s);
    }
  }
  // Temporaries read after this code (by the members after it, or the row reduction between)
  // are stored too.
  auto read_later = [&](const Ref& r) {
    if (r.kind != Ref::kTemp) return;
    const int w = temp_member[static_cast<size_t>(r.index)];
    if (w >= 0 && Computes(w)) store_[static_cast<size_t>(w)] = true;
  };
  for (int m = end_; m < Members(); ++m) {
    for (const Ref& r : f_.members[static_cast<size_t>(m)].in) read_later(r);
  }
  if (f_.rows.fn != nullptr) read_later(f_.rows.x);
  // Called vector functions take and return 8 lanes in ymm0: such runs stay 32 bytes wide.
  wide_ = avx512_;
  for (int m = 0; m < Members(); ++m) {
    const Member& mem = f_.members[static_cast<size_t>(m)];
    if (Computes(m) && mem.code.op == MapOp::kVectorCall &&
        (f64_ || NativeMathOf(mem.code.fn) == NativeMath::kNone)) {
      wide_ = false;
    }
  }
  return any;
}

void TileEmitter::Generate() {
  const int lanes = VB() / (f64_ ? 8 : 4);
  // [rsp]: the lane mask; then a slot per key; then the tail's bounce buffer for 16-bit elements.
  const int frame = VB() * (values_ * kWays + 2);
  push(rbp);
  mov(rbp, rsp);
  push(rbx);
  push(r12);
  push(r13);
  push(r14);
  push(r15);
  and_(rsp, -VB());
  sub(rsp, frame);
  mov(rbx, rdi);
  mov(r13, rsi);
  mov(r14, r13);
  shr(r14, std::countr_zero(static_cast<unsigned>(lanes * kWays)));
  shl(r14, std::countr_zero(static_cast<unsigned>(VB() * kWays)));  // bytes in whole iterations
  xor_(r12d, r12d);
  bool signs = false, calls = false;
  for (int i = 0; i < Members(); ++i) {
    if (!Computes(i)) continue;
    const Member& m = f_.members[static_cast<size_t>(i)];
    signs |= (m.code.op == MapOp::kNegate || m.code.op == MapOp::kAbs) && !IsInt32Member(m.code);
    calls |=
        m.code.op == MapOp::kVectorCall && (f64_ || NativeMathOf(m.code.fn) == NativeMath::kNone);
  }
  sign_hoisted_ = signs && !calls;
  if (sign_hoisted_) EmitSignMask(*this, f64_, true, V(kSignReg));
  Xbyak::Label loop, tail, done;
  L(loop);
  cmp(r12, r14);
  jae(tail, T_NEAR);
  Body(false, kWays);
  add(r12, VB() * kWays);
  jmp(loop, T_NEAR);
  // The rest (fewer than two vectors): one vector at a time under a mask of its first
  // min(lanes, rest) lanes, the table read from lane lanes - that.
  L(tail);
  mov(rax, r13);
  shl(rax, f64_ ? 3 : 2);
  sub(rax, r12);
  jle(done, T_NEAR);
  shr(rax, f64_ ? 3 : 2);  // elements left
  mov(r15, lanes);
  cmp(r15, rax);
  cmovg(r15,
        rax);  // elements in this vector (16-bit elements are copied through the bounce buffer)
  if (wide_) {
    // k2 = the first min(lanes, rest) lanes; no member changes it (calls make code narrow).
    mov(rcx, lanes);
    cmp(rax, rcx);
    cmovg(rax, rcx);
    mov(ecx, eax);
    mov(eax, 1);
    shl(eax, cl);
    sub(eax, 1);
    kmovw(k2, eax);
  } else {
    mov(rcx, lanes);
    sub(rcx, rax);
    mov(rax, 0);
    cmovl(rcx, rax);  // more than a vector left: every lane
    lea(rdx, ptr[rip + table_]);
    vmovdqu(Xbyak::Ymm(kMaskReg), ptr[rdx + rcx * (f64_ ? 8 : 4)]);
    vmovdqa(ptr[rsp], Xbyak::Ymm(kMaskReg));
  }
  Body(true, 1);
  add(r12, VB());
  jmp(tail, T_NEAR);
  L(done);
  vzeroupper();
  lea(rsp, ptr[rbp - 40]);
  pop(r15);
  pop(r14);
  pop(r13);
  pop(r12);
  pop(rbx);
  pop(rbp);
  ret();
  align(32);
  L(table_);
  for (int i = 0; i < 8; ++i) dd(0xffffffffu);
  for (int i = 0; i < 8; ++i) dd(0);
  if (halves_) EmitHalfConstants(*this, half_constants_);
}

Xbyak::Address TileEmitter::HalfAddress(int p, int way, bool masked, bool load) {
  mov(rax, ptr[rbx + 8 * p]);
  mov(rdx, r12);
  shr(rdx, 1);  // 2 bytes an element where r12 counts 4
  if (!masked) return ptr[rax + rdx + VB() / 2 * way];
  if (load) {
    lea(rsi, ptr[rax + rdx]);
    lea(rdi, ptr[rsp + Bounce()]);
    lea(rcx, ptr[r15 + r15]);
    rep();
    movsb();
  }
  return ptr[rsp + Bounce()];
}

// The bounce buffer's first r15 elements to pointer p at this iteration's offset.
void TileEmitter::HalfBounceOut(int p) {
  mov(rax, ptr[rbx + 8 * p]);
  mov(rdx, r12);
  shr(rdx, 1);
  lea(rdi, ptr[rax + rdx]);
  lea(rsi, ptr[rsp + Bounce()]);
  lea(rcx, ptr[r15 + r15]);
  rep();
  movsb();
}

// Positions order the body's emission: member m in way w is position m * ways_ + w. The first
// position after `at` that reads `key`.
int TileEmitter::NextUse(int key, int at) const {
  const int value = key / kWays;
  const bool shared = Key(value, 1) == Key(value, 0);
  for (int m : uses_[static_cast<size_t>(value)]) {
    const int first = m * ways_ + (shared ? 0 : key % kWays);
    const int last = shared ? first + ways_ - 1 : first;
    if (last > at) return std::max(first, at + 1);
  }
  return INT32_MAX;
}

void TileEmitter::Spill(int reg, int at) {
  const int k = reg_value_[reg];
  if (k < 0) return;
  if (k / kWays < Members() && !in_slot_[static_cast<size_t>(k)] && NextUse(k, at) != INT32_MAX) {
    vmovaps(Slot(k), V(reg));
    in_slot_[static_cast<size_t>(k)] = true;
  }
  value_reg_[static_cast<size_t>(k)] = -1;
  reg_value_[reg] = -1;
}

// A register other than pin0/pin1: a free one, else the one whose value is read farthest ahead.
int TileEmitter::Allocate(int pin0, int pin1, int at) {
  int best = -1, best_use = -1;
  for (int r = 0; r < kPool; ++r) {
    if (r == pin0 || r == pin1 || (reserved_ >> r & 1u) != 0) continue;
    if (reg_value_[r] < 0) return r;
    const int use = NextUse(reg_value_[r], at - 1);
    if (use > best_use) {
      best = r;
      best_use = use;
    }
  }
  Spill(best, at - 1);
  return best;
}

void TileEmitter::EnsureMask() {
  if (!mask_loaded_ && !wide_) vmovdqa(Xbyak::Ymm(kMaskReg), ptr[rsp]);
  mask_loaded_ = true;
}

// Value `value` of way `way` in a register, for position `at`.
int TileEmitter::Get(int value, int way, int pin0, int pin1, bool masked, int at) {
  const int key = Key(value, way);
  if (value_reg_[static_cast<size_t>(key)] >= 0) return value_reg_[static_cast<size_t>(key)];
  const int reg = Allocate(pin0, pin1, at);
  const Xbyak::Xmm y = V(reg);
  if (value < Members()) {
    vmovaps(y, Slot(key));
  } else {
    const int p = value - Members();
    const ir::DType half = pointer_type_[static_cast<size_t>(p)];
    if (half != ir::DType::kInvalid) {
      if (pointer_scalar_[static_cast<size_t>(p)]) {
        mov(rax, ptr[rbx + 8 * p]);
        movzx(eax, word[rax]);
        if (half == ir::DType::kBF16) shl(eax, 16);
        vmovd(Xbyak::Xmm(reg), eax);
        if (half == ir::DType::kF16) vcvtph2ps(Xbyak::Xmm(reg), Xbyak::Xmm(reg));
        vbroadcastss(y, Xbyak::Xmm(reg));
      } else {
        EmitHalfLoad(*this, half, y, HalfAddress(p, way, masked, true));
      }
      value_reg_[static_cast<size_t>(key)] = reg;
      reg_value_[reg] = key;
      return reg;
    }
    mov(rax, ptr[rbx + 8 * p]);
    if (pointer_scalar_[static_cast<size_t>(p)]) {
      if (!f64_) {
        vbroadcastss(y, dword[rax]);
      } else if (wide_) {
        vbroadcastsd(Xbyak::Zmm(reg), qword[rax]);
      } else {
        vbroadcastsd(Xbyak::Ymm(reg), qword[rax]);
      }
    } else if (masked && wide_) {
      // Masked-off lanes are not read (no fault); the mask is per element, so per type.
      f64_ ? vmovupd(y | k2 | T_z, ptr[rax + r12]) : vmovups(y | k2 | T_z, ptr[rax + r12]);
    } else if (masked) {
      EnsureMask();
      f64_ ? vmaskmovpd(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12])
           : vmaskmovps(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12]);
    } else {
      vmovups(y, ptr[rax + r12 + VB() * way]);
    }
  }
  value_reg_[static_cast<size_t>(key)] = reg;
  reg_value_[reg] = key;
  return reg;
}

void TileEmitter::Body(bool masked, int ways) {
  ways_ = ways;
  std::fill(std::begin(reg_value_), std::end(reg_value_), -1);
  value_reg_.assign(static_cast<size_t>(values_ * kWays), -1);
  in_slot_.assign(static_cast<size_t>(values_ * kWays), false);
  mask_loaded_ = false;
  sign_ready_ = sign_hoisted_;
  for (int m = 0; m < Members(); ++m) {
    if (!Computes(m)) continue;
    for (int way = 0; way < ways; ++way) EmitMember(m, way, masked);
  }
}

// Member m of way `way`: its result in a register (and stored, when it leaves the run).
void TileEmitter::EmitMember(int m, int way, bool masked) {
  const Member& mem = f_.members[static_cast<size_t>(m)];
  const int at = m * ways_ + way;
  const std::vector<Source>& reads = reads_[static_cast<size_t>(m)];
  const MapOp op = mem.code.op;
  int a = Get(reads[0].value, way, -1, -1, masked, at);
  int b = reads.size() > 1 ? Get(reads[1].value, way, a, -1, masked, at) : a;
  int d = 0;
  const NativeMath own =
      f64_ || op != MapOp::kVectorCall ? NativeMath::kNone : NativeMathOf(mem.code.fn);
  if (own != NativeMath::kNone) {
    // Inline: the operand copied to the result's register, computed there with scratch registers
    // taken from the pool (their values spilled as for any allocation).
    d = Allocate(a, -1, at + 1);
    reserved_ = (1u << a) | (1u << d);
    Xbyak::Xmm temps[8];
    for (int i = 0; i < NativeMathTemps(own); ++i) {
      const int t = Allocate(-1, -1, at + 1);
      reserved_ |= 1u << t;
      temps[i] = V(t);
    }
    reserved_ = 0;
    vmovaps(V(d), V(a));
    EmitNativeMath(*this, own, V(d), temps, rax);
  } else if (op == MapOp::kVectorCall) {
    // Everything still needed after this member goes to its slot; the call clobbers all.
    for (int r = 0; r < kPool; ++r) {
      if (r != a) Spill(r, at);
    }
    if (a != 0) vmovaps(Xbyak::Ymm(0), Xbyak::Ymm(a));
    Spill(a, at);
    mov(rax, reinterpret_cast<uint64_t>(mem.code.fn));
    call(rax);
    mask_loaded_ = false;
    sign_ready_ = false;
    d = 0;
  } else if (op == MapOp::kConvert) {  // between f32 and a 16-bit float (HalfOf)
    d = Allocate(a, -1, at + 1);
    vmovaps(V(d), V(a));
  } else if (IsInt32Member(mem.code)) {
    d = Allocate(a, b, at + 1);
    EmitInt32Op(*this, op, mem.code.in == ir::DType::kS32, V(d), V(a), V(b), V(kTempReg));
  } else {
    if ((op == MapOp::kNegate || op == MapOp::kAbs) && !sign_ready_) {
      EmitSignMask(*this, f64_, true, V(kSignReg));
      sign_ready_ = true;
    }
    d = Allocate(a, b, at + 1);
    EmitFloatOp(*this, op, f64_, true, V(d), V(a), V(b), V(kTempReg), V(kSignReg));
  }
  if (IsHalfFloat(mem.code.out)) {
    // Rounded to the 16-bit type; kMaskReg serves as a temporary (reloaded when needed).
    static const bool bf16_insn = Bf16InstructionAvailable();
    EmitHalfRound(*this, mem.code.out, V(d), V(kTempReg), V(kMaskReg), half_constants_, bf16_insn);
    mask_loaded_ = false;
  }
  const int key = Key(m, way);
  reg_value_[d] = key;
  value_reg_[static_cast<size_t>(key)] = d;
  if (store_[static_cast<size_t>(m)] && IsHalfFloat(mem.code.out)) {
    const int p = PointerOf(mem.out);
    EmitHalfStore(*this, mem.code.out, HalfAddress(p, way, masked, false), V(d), V(kTempReg));
    if (masked) HalfBounceOut(p);
  } else if (store_[static_cast<size_t>(m)]) {
    mov(rax, ptr[rbx + 8 * PointerOf(mem.out)]);
    if (masked && wide_) {
      f64_ ? vmovupd(ptr[rax + r12] | k2, V(d)) : vmovups(ptr[rax + r12] | k2, V(d));
    } else if (masked) {
      EnsureMask();
      f64_ ? vmaskmovpd(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d))
           : vmaskmovps(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d));
    } else {
      vmovups(ptr[rax + r12 + VB() * way], V(d));
    }
  }
  // Free the registers of values no later position reads.
  for (int r = 0; r < kPool; ++r) {
    if (reg_value_[r] >= 0 && NextUse(reg_value_[r], at) == INT32_MAX) {
      value_reg_[static_cast<size_t>(reg_value_[r])] = -1;
      reg_value_[r] = -1;
    }
  }
}

}  // namespace

std::shared_ptr<const lower::NativeTile> BuildNativeTile(const FusedPlan& plan, size_t begin,
                                                         size_t end) {
  end = std::min(end, plan.members.size());
  if (!Allowed() || begin >= end || plan.elements < kMinElements) return nullptr;
  // The element type of the first element-wise member decides; Plan() checks the rest.
  bool f64 = false;
  for (size_t i = begin; i < end; ++i) {
    if (!plan.members[i].absolute) {
      f64 = plan.members[i].code.in == ir::DType::kF64;
      break;
    }
  }
  static const bool avx512 = Avx512Available("KILN_FUSED_JIT_AVX512");
  const std::string key = TileKey(plan, begin, end, f64, avx512);
  if (auto cached = FindTile(key)) return cached;
  try {
    auto gen = std::make_shared<TileEmitter>(plan, begin, end, f64, avx512);
    if (!gen->Plan()) return nullptr;
    gen->Generate();
    gen->readyRE();
    DumpNativeCode("KILN_FUSED_JIT_DUMP", gen->getCode(), gen->getSize());
    auto native = std::make_shared<lower::NativeTile>();
    native->fn = gen->getCode<void (*)(void* const*, int64_t)>();
    native->code = std::move(gen);
    AddTile(key, native);
    return native;
  } catch (const std::exception&) {
    return nullptr;  // no executable memory: interpret
  }
}

}  // namespace kiln::codegen
