// The code generator of fused elementwise runs (fused_native.h).
//
// What it handles: runs whose element-wise members all compute f32 (or all f64) values with
// instructions (EmitFloatOp: add, subtract, multiply, divide, maximum, minimum, negate, abs, sqrt)
// or vector functions (MapOp::kVectorCall, kernels/vector_math.h: Kiln's own f32 exp and tanh
// emitted inline, codegen/native_math.h; the others, SLEEF's, called with a register of lanes),
// and, on AVX2 CPUs, s32/u32 members that are integer instructions (EmitInt32Op: wrapping
// add/subtract/multiply, bitwise ops, shifts, maximum/minimum; JAX's threefry random bits are
// made of them) beside f32 ones, reading fused-step inputs (whole or scalar), index maps' tiles and
// each other; f32 compares into predicate lanes, complex64 members beside f32 ones and complex128
// members beside f64 ones, each complex value a pair of registers (fused_complex.cc). Any other
// member (f64 compares, most conversions, 8/16/64-bit integers, ...) leaves the run interpreted.
//
// The code: fn(ptrs, len) walks the tile two vectors of 32 bytes at a time (kWays); the rest, one
// vector at a time, is read and written with vmaskmov (lanes past len are neither read nor
// written; their values are never stored). On CPUs with AVX512F and AVX512DQ, runs whose members
// are all instructions or inline functions (no call: called functions take ymm0) use zmm
// registers, 64 bytes per vector, with the rest under the lane mask k2 (k1 is scratch for
// compares), and so do runs whose called functions all have a zmm form (WideCallOf: SLEEF's
// 16-lane f32 / 8-lane f64 function, the one the interpreted path calls on AVX-512);
// KILN_FUSED_JIT_AVX512=0 keeps them to ymm. Same instructions per lane, same bits (but
// for which payload an add or multiply of two NaNs returns: docs/engine.md, Overview). Each
// member is an instruction on registers; values are assigned to ymm0-ymm12 as they are computed and
// freed after their last reader; when registers run out, the value read farthest ahead goes to its
// stack slot (or, for an input, is read again); wide code without calls keeps the scalars it reads
// in zmm16-zmm31 for the whole call (HoistScalars). An inline function takes its scratch registers
// the same way; a called one clobbers every vector register: values still needed are stored to
// their slots first. Member results that leave the run are stored to their output as they are
// computed. Per lane this is exactly what the member's range function computes (the same IEEE
// instructions, the same vector function on the same lanes; maximum/minimum as EmitFloatOp
// documents), so fusion still changes no result.
#include "codegen/fused_native.h"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/fused_tile_cache.h"
#include "codegen/fused_tile_emitter.h"
#include "codegen/native_half.h"
#include "codegen/native_math_emit.h"
#include "codegen/native_ops.h"
#include "lower/fused_plan.h"

namespace kiln::codegen {

using lower::FusedPlan;
namespace {

using namespace fused_detail;  // NOLINT

bool Allowed() {
  static const bool allowed = NativeCodeAllowed("KILN_FUSED_JIT");
  return allowed;
}

}  // namespace

namespace fused_detail {

bool TileEmitter::Plan() {
  const ir::DType t = f64_ ? ir::DType::kF64 : ir::DType::kF32;
  // Outputs: one per member at most, and the two row reductions' (ahead of and inside the run).
  const int pointers = static_cast<int>(f_.input_elements.size() + f_.temp_widths.size()) +
                       static_cast<int>(f_.members.size()) + 2;
  values_ = Members() + pointers;
  pointer_value_.resize(static_cast<size_t>(pointers));
  pointer_scalar_.assign(static_cast<size_t>(pointers), false);
  pointer_type_.assign(static_cast<size_t>(pointers), ir::DType::kInvalid);
  pointer_pred_.assign(static_cast<size_t>(pointers), false);
  pointer_complex_.assign(static_cast<size_t>(pointers), false);
  rcp_slot_.assign(static_cast<size_t>(pointers), -1);
  rcp_signed_.assign(static_cast<size_t>(pointers), false);
  divisor_bits_.assign(static_cast<size_t>(pointers), {});
  pointer_hoisted_.assign(static_cast<size_t>(pointers), -1);
  for (int p = 0; p < pointers; ++p) pointer_value_[static_cast<size_t>(p)] = Members() + p;
  uses_.assign(static_cast<size_t>(2 * values_), {});  // room for imaginary parts
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
    if (mem.out.kind == Ref::kOutput) {
      pointer_pred_[static_cast<size_t>(PointerOf(mem.out))] = mem.code.out == ir::DType::kPred;
    }
    const MapCode& c = mem.code;
    if (IsComplex(c.out)) {
      pointer_complex_[static_cast<size_t>(PointerOf(mem.out))] = true;
      complex_ = true;
    }
    const bool known_float =
        IsFloatArithmetic(c.op) || (c.op == MapOp::kVectorCall && c.fn != nullptr);
    const bool half = HalfOf(c) != ir::DType::kInvalid;
    halves_ |= half;
    if (!(known_float && c.in == t && c.out == t) && !IsInt32Member(c) && !half &&
        !IsComplexMember(c)) {
      return false;
    }
    const int arity = c.op == MapOp::kConvert ? 1 : ArityOf(c.op);
    const int out_width = half ? static_cast<int>(ir::DTypeByteSize(c.out)) : WidthOf(c.out);
    if (mem.out.width != out_width || static_cast<int>(mem.in.size()) != arity) return false;
    if (IsHalfFloat(c.out)) pointer_type_[static_cast<size_t>(PointerOf(mem.out))] = c.out;
    for (size_t i = 0; i < mem.in.size(); ++i) {
      const Ref& r = mem.in[i];
      const bool pred = OperandType(c, i) == ir::DType::kPred;
      const int in_width =
          half ? static_cast<int>(ir::DTypeByteSize(c.in)) : WidthOf(OperandType(c, i));
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
        // A splat constant is read as a scalar: every element holds its value.
        const bool splat = r.kind == Ref::kInput &&
                           static_cast<size_t>(r.index) < f_.input_splat.size() &&
                           f_.input_splat[static_cast<size_t>(r.index)].known;
        s.scalar = s.scalar || (r.kind == Ref::kInput && r.scalar) || splat;
        s.value = pointer_value_[static_cast<size_t>(s.pointer)];
        pointer_scalar_[static_cast<size_t>(s.pointer)] = s.scalar;
        if (IsHalfFloat(c.in)) pointer_type_[static_cast<size_t>(s.pointer)] = c.in;
        pointer_pred_[static_cast<size_t>(s.pointer)] = pred;
        pointer_complex_[static_cast<size_t>(s.pointer)] = IsComplex(OperandType(c, i));
      }
      uses_[static_cast<size_t>(s.value)].push_back(m);
      if (IsComplex(OperandType(c, i))) {
        uses_[static_cast<size_t>(Im(s.value))].push_back(m);
        complex_ = true;
      }
      reads_.back().push_back(s);
      if (i == 1 && s.pointer >= 0 && s.scalar && IsInt32Member(c) &&
          (c.op == MapOp::kDivide || c.op == MapOp::kRemainder)) {
        // A known divisor (a splat constant, or a broadcast of one): divided by as that number.
        const FusedPlan::Splat known = KnownSplat(r, temp_member);
        if (known.known) divisor_bits_[static_cast<size_t>(s.pointer)] = known;
      }
      if (i == 1 && s.pointer >= 0 && s.scalar && IsInt32Member(c) &&
          (c.op == MapOp::kDivide || c.op == MapOp::kRemainder) &&
          rcp_slot_[static_cast<size_t>(s.pointer)] < 0) {
        rcp_slot_[static_cast<size_t>(s.pointer)] = rcp_count_++;
        rcp_signed_[static_cast<size_t>(s.pointer)] = c.in == ir::DType::kS32;
      }
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
  // Called vector functions take and return 32 bytes of lanes in ymm0, or, when they have a wide
  // form (WideCallOf, codegen/native_math.h), 64 bytes in zmm0: runs calling one without stay 32
  // bytes wide.
  wide_ = avx512_ && !complex_;  // complex parts are split and joined in ymm only
  for (int m = 0; m < Members(); ++m) {
    const Member& mem = f_.members[static_cast<size_t>(m)];
    if (Computes(m) && mem.code.op == MapOp::kVectorCall &&
        (f64_ || NativeMathOf(mem.code.fn) == NativeMath::kNone) &&
        WideCallOf(mem.code.fn) == nullptr) {
      wide_ = false;
    }
  }
  // Untiled: the code's pointers are all inputs and outputs, at any element offset.
  untiled_ = true;
  for (int m = 0; m < Members(); ++m) {
    const Member& mem = f_.members[static_cast<size_t>(m)];
    if (mem.absolute) {
      const bool one = mem.row_value && mem.in.size() == 1 && mem.in[0].kind == Ref::kInput &&
                       f_.input_elements[static_cast<size_t>(mem.in[0].index)] == 1;
      untiled_ = untiled_ && one;
    } else if (Computes(m) && store_[static_cast<size_t>(m)] && mem.out.kind == Ref::kTemp) {
      untiled_ = false;
    }
  }
  return any;
}

// Wide code has 32 vector registers and its values live in the first 13: the scalars it reads
// (splat constants, broadcast one-element inputs and predicates) are loaded once, before the loop,
// into zmm16 on, instead of once per iteration where first read. Not when a member is a call, which
// clobbers them. 16-bit float and complex scalars are loaded as before.
void TileEmitter::HoistScalars() {
  int next = 16;
  for (size_t p = 0; p < pointer_scalar_.size() && next < 32; ++p) {
    const auto value = static_cast<size_t>(pointer_value_[p]);
    if (!pointer_scalar_[p] || pointer_type_[p] != ir::DType::kInvalid || pointer_complex_[p] ||
        uses_[value].empty()) {
      continue;
    }
    mov(rax, ptr[rbx + 8 * p]);
    if (pointer_pred_[p]) {
      LoadPred(next, static_cast<int>(p), 0, false);
    } else if (f64_) {
      vbroadcastsd(Xbyak::Zmm(next), qword[rax]);
    } else {
      vbroadcastss(Xbyak::Zmm(next), dword[rax]);
    }
    pointer_hoisted_[p] = next++;
  }
}

FusedPlan::Splat TileEmitter::KnownSplat(const Ref& r, const std::vector<int>& temp_member) const {
  auto splat = [&](const Ref& in) -> FusedPlan::Splat {
    if (in.kind != Ref::kInput || static_cast<size_t>(in.index) >= f_.input_splat.size()) return {};
    return f_.input_splat[static_cast<size_t>(in.index)];
  };
  if (r.kind == Ref::kInput) return splat(r);
  if (r.kind != Ref::kTemp) return {};
  const int w = temp_member[static_cast<size_t>(r.index)];
  if (w < 0) return {};
  const Member& b = f_.members[static_cast<size_t>(w)];
  if (!b.absolute || !b.row_value || b.code.op != MapOp::kBroadcast || b.in.size() != 1 ||
      f_.input_elements[static_cast<size_t>(b.in[0].index)] != 1) {
    return {};
  }
  return splat(b.in[0]);
}

void TileEmitter::Generate() {
  const int lanes = VB() / (f64_ ? 8 : 4);
  // [rsp]: the lane mask; then a slot per key; then the tail's bounce buffer for 16-bit elements;
  // then the predicate buffer and the tail's count; then the divisors' reciprocals.
  const int frame = VB() * (Ids() * kWays + 3) + (8 * rcp_count_ + VB() - 1) / VB() * VB();
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
  for (size_t p = 0; p < rcp_slot_.size(); ++p) {  // 1 / b of each scalar divisor
    if (rcp_slot_[p] < 0) continue;
    mov(rax, ptr[rbx + 8 * p]);
    if (rcp_signed_[p]) {
      vcvtsi2sd(xmm0, xmm0, dword[rax]);
    } else {
      mov(eax, dword[rax]);  // zero-extended
      vcvtsi2sd(xmm0, xmm0, rax);
    }
    mov(rcx, uint64_t{0x3FF0000000000000});  // 1.0
    vmovq(xmm1, rcx);
    vdivsd(xmm0, xmm1, xmm0);
    vmovsd(Rcp(rcp_slot_[p]), xmm0);
  }
  sign_hoisted_ = signs && !calls;
  if (sign_hoisted_) EmitSignMask(*this, f64_, true, V(kSignReg));
  if (wide_ && !calls) HoistScalars();
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
    // k2 = the first min(lanes, rest) lanes; no member changes it (after a call, which may,
    // EmitMember sets it again from TailCount()).
    mov(rcx, lanes);
    cmp(rax, rcx);
    cmovg(rax, rcx);
    mov(TailCount(), rax);
    mov(ecx, eax);
    mov(eax, 1);
    shl(eax, cl);
    sub(eax, 1);
    kmovw(k2, eax);
  } else {
    mov(rcx, lanes);
    cmp(rax, rcx);
    cmovg(rax, rcx);
    mov(TailCount(), rax);
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

}  // namespace fused_detail

std::shared_ptr<const lower::NativeTile> BuildNativeTile(const FusedPlan& plan, size_t begin,
                                                         size_t end, bool small) {
  end = std::min(end, plan.members.size());
  if (!Allowed() || begin >= end ||
      (plan.elements < kMinElements && (!small || end - begin < kMinMembersWhenSmall))) {
    return nullptr;
  }
  // The element type of the first element-wise member decides; Plan() checks the rest.
  bool f64 = false;
  for (size_t i = begin; i < end; ++i) {
    if (!plan.members[i].absolute) {
      f64 =
          plan.members[i].code.in == ir::DType::kF64 || plan.members[i].code.in == ir::DType::kC128;
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
    native->untiled = gen->Untiled();
    native->code = std::move(gen);
    AddTile(key, native);
    return native;
  } catch (const std::exception&) {
    return nullptr;  // no executable memory: interpret
  }
}

}  // namespace kiln::codegen
