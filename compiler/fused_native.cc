// The code generator of fused elementwise runs (fused_native.h).
//
// What it handles: runs whose element-wise members all compute f32 (or all f64) values with
// instructions (EmitFloatOp: add, subtract, multiply, divide, maximum, minimum, negate, abs, sqrt)
// or vector functions (MapOp::kVectorCall, kernels/vector_math.h: Kiln's own f32 exp and tanh
// emitted inline, compiler/native_math.h; the others, SLEEF's, called with a register of lanes),
// reading fused-step inputs (whole or scalar), index maps' tiles and each other. Any other member
// (integers, compares, conversions, ...) leaves the run interpreted.
//
// The code: fn(ptrs, len) walks the tile in vectors of 32 bytes; the last, partial vector is read
// and written with vmaskmov (lanes past len are neither read nor written; their values are never
// stored). Each member is an instruction on registers; values are assigned to ymm0-ymm12 as they
// are computed and freed after their last reader; when registers run out, the value read farthest
// ahead goes to its stack slot (or, for an input, is read again). An inline function takes its
// scratch registers the same way; a called one clobbers every vector register: values still needed
// are stored to their slots first. Member results that leave the run are stored to their output as
// they are computed. Per lane this is exactly what the member's range function computes (the same
// IEEE instructions, the same vector function on the same lanes; maximum/minimum as EmitFloatOp
// documents), so fusion still changes no result.
#include "compiler/fused_native.h"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/fusion.h"
#include "compiler/native_emitter.h"
#include "compiler/native_math.h"

namespace kiln::compiler {
namespace {

using Ref = FusedPlan::Ref;
using Member = FusedPlan::Member;

constexpr int kPool = 13;  // values live in ymm0-ymm12
// Runs over fewer elements stay interpreted: one tile of member calls costs little there, and
// generating a run's code costs about 25 us of compile time (40 fused steps of a transformer's
// gradient: 1 ms), mostly for the small runs of loop bodies, which loops run their own way.
constexpr int64_t kMinElements = 256;
constexpr int kMaskReg = 13, kTempReg = 14, kSignReg = 15;

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
  TileEmitter(const FusedPlan& f, bool f64)
      : Xbyak::CodeGenerator(4096, Xbyak::AutoGrow), f_(f), f64_(f64) {}

  // False when a member is not one the generator handles.
  bool Plan();
  void Generate();

 private:
  int Members() const { return static_cast<int>(f_.members.size()); }
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
  void Body(bool masked);
  int Get(int value, int pin0, int pin1, bool masked, int at);
  int Allocate(int pin0, int pin1, int at);
  int NextUse(int value, int at) const;
  void Spill(int reg, int at);
  void EnsureMask();
  Xbyak::Address Slot(int value) { return ptr[rsp + 32 * (value + 1)]; }

  const FusedPlan& f_;
  const bool f64_;
  std::vector<std::vector<Source>> reads_;  // per member: its operands
  std::vector<std::vector<int>> uses_;      // per value: the members reading it, in order
  std::vector<int> pointer_value_;          // per pointer: its value id
  std::vector<bool> pointer_scalar_;
  int values_ = 0;
  // Register state while emitting one body.
  int reg_value_[kPool];
  std::vector<int> value_reg_;
  std::vector<bool> in_slot_;
  bool mask_loaded_ = false;
  uint32_t reserved_ = 0;  // registers Allocate must not hand out (an inline function's)
  MapOp sign_ = MapOp::kNone;
  Xbyak::Label table_;
};

bool TileEmitter::Plan() {
  const ir::DType t = f64_ ? ir::DType::kF64 : ir::DType::kF32;
  const int width = f64_ ? 8 : 4;
  const int pointers = static_cast<int>(f_.input_elements.size() + f_.temp_widths.size()) +
                       static_cast<int>(f_.members.size());
  values_ = Members() + pointers;
  pointer_value_.resize(static_cast<size_t>(pointers));
  pointer_scalar_.assign(static_cast<size_t>(pointers), false);
  for (int p = 0; p < pointers; ++p) pointer_value_[static_cast<size_t>(p)] = Members() + p;
  uses_.assign(static_cast<size_t>(values_), {});
  // Which member writes each temporary / output.
  std::vector<int> temp_member(f_.temp_widths.size(), -1), out_member(f_.members.size(), -1);
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
    any = true;
    const MapCode& c = mem.code;
    const bool known = IsFloatArithmetic(c.op) || (c.op == MapOp::kVectorCall && c.fn != nullptr);
    if (!known || c.in != t || c.out != t || mem.out.width != width ||
        static_cast<int>(mem.in.size()) != ArityOf(c.op)) {
      return false;
    }
    for (const Ref& r : mem.in) {
      if (r.width != width) return false;
      Source s;
      if (r.kind != Ref::kInput) {
        const int w =
            (r.kind == Ref::kTemp ? temp_member : out_member)[static_cast<size_t>(r.index)];
        if (w < 0) return false;
        if (!f_.members[static_cast<size_t>(w)].absolute) s.value = w;
      }
      if (s.value < 0) {
        s.pointer = PointerOf(r);
        s.scalar = r.kind == Ref::kInput && r.scalar;
        s.value = pointer_value_[static_cast<size_t>(s.pointer)];
        pointer_scalar_[static_cast<size_t>(s.pointer)] = s.scalar;
      }
      uses_[static_cast<size_t>(s.value)].push_back(m);
      reads_.back().push_back(s);
    }
  }
  return any;
}

void TileEmitter::Generate() {
  const int lanes = f64_ ? 4 : 8;
  const int frame = 32 * (values_ + 1);  // [rsp]: the lane mask; then a slot per value
  push(rbp);
  mov(rbp, rsp);
  push(rbx);
  push(r12);
  push(r13);
  push(r14);
  and_(rsp, -32);
  sub(rsp, frame);
  mov(rbx, rdi);
  mov(r13, rsi);
  mov(r14, r13);
  shr(r14, f64_ ? 2 : 3);
  shl(r14, 5);  // bytes in whole vectors
  xor_(r12d, r12d);
  Xbyak::Label loop, tail, done;
  L(loop);
  cmp(r12, r14);
  jae(tail, T_NEAR);
  Body(false);
  add(r12, 32);
  jmp(loop, T_NEAR);
  L(tail);
  mov(rax, r13);
  and_(rax, lanes - 1);
  jz(done, T_NEAR);
  // The mask of the first `rest` lanes: the table read from lane (lanes - rest).
  mov(rcx, lanes);
  sub(rcx, rax);
  lea(rdx, ptr[rip + table_]);
  vmovdqu(Xbyak::Ymm(kMaskReg), ptr[rdx + rcx * (f64_ ? 8 : 4)]);
  vmovdqa(ptr[rsp], Xbyak::Ymm(kMaskReg));
  Body(true);
  L(done);
  vzeroupper();
  lea(rsp, ptr[rbp - 32]);
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
}

int TileEmitter::NextUse(int value, int at) const {
  for (int m : uses_[static_cast<size_t>(value)]) {
    if (m > at) return m;
  }
  return INT32_MAX;
}

void TileEmitter::Spill(int reg, int at) {
  const int v = reg_value_[reg];
  if (v < 0) return;
  if (v < Members() && !in_slot_[static_cast<size_t>(v)] && NextUse(v, at) != INT32_MAX) {
    vmovaps(Slot(v), Xbyak::Ymm(reg));
    in_slot_[static_cast<size_t>(v)] = true;
  }
  value_reg_[static_cast<size_t>(v)] = -1;
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
  if (!mask_loaded_) vmovdqa(Xbyak::Ymm(kMaskReg), ptr[rsp]);
  mask_loaded_ = true;
}

// Value `value` in a register, for member `at`.
int TileEmitter::Get(int value, int pin0, int pin1, bool masked, int at) {
  if (value_reg_[static_cast<size_t>(value)] >= 0) return value_reg_[static_cast<size_t>(value)];
  const int reg = Allocate(pin0, pin1, at);
  const Xbyak::Ymm y(reg);
  if (value < Members()) {
    vmovaps(y, Slot(value));
  } else {
    const int p = value - Members();
    mov(rax, ptr[rbx + 8 * p]);
    if (pointer_scalar_[static_cast<size_t>(p)]) {
      f64_ ? vbroadcastsd(y, qword[rax]) : vbroadcastss(y, dword[rax]);
    } else if (masked) {
      EnsureMask();
      f64_ ? vmaskmovpd(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12])
           : vmaskmovps(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12]);
    } else {
      vmovups(y, ptr[rax + r12]);
    }
  }
  value_reg_[static_cast<size_t>(value)] = reg;
  reg_value_[reg] = value;
  return reg;
}

void TileEmitter::Body(bool masked) {
  std::fill(std::begin(reg_value_), std::end(reg_value_), -1);
  value_reg_.assign(static_cast<size_t>(values_), -1);
  in_slot_.assign(static_cast<size_t>(values_), false);
  mask_loaded_ = false;
  sign_ = MapOp::kNone;
  for (int m = 0; m < Members(); ++m) {
    const Member& mem = f_.members[static_cast<size_t>(m)];
    if (mem.absolute) continue;
    const std::vector<Source>& reads = reads_[static_cast<size_t>(m)];
    const MapOp op = mem.code.op;
    int a = Get(reads[0].value, -1, -1, masked, m);
    int b = reads.size() > 1 ? Get(reads[1].value, a, -1, masked, m) : a;
    int d = 0;
    const NativeMath own =
        f64_ || op != MapOp::kVectorCall ? NativeMath::kNone : NativeMathOf(mem.code.fn);
    if (own != NativeMath::kNone) {
      // Inline: the operand copied to the result's register, computed there with scratch
      // registers taken from the pool (their values spilled as for any allocation).
      d = Allocate(a, -1, m + 1);
      reserved_ = (1u << a) | (1u << d);
      Xbyak::Ymm temps[8];
      for (int i = 0; i < NativeMathTemps(own); ++i) {
        const int t = Allocate(-1, -1, m + 1);
        reserved_ |= 1u << t;
        temps[i] = Xbyak::Ymm(t);
      }
      reserved_ = 0;
      vmovaps(Xbyak::Ymm(d), Xbyak::Ymm(a));
      EmitNativeMath(*this, own, Xbyak::Ymm(d), temps, rax);
    } else if (op == MapOp::kVectorCall) {
      // Everything still needed after this member goes to its slot; the call clobbers all.
      for (int r = 0; r < kPool; ++r) {
        if (r != a) Spill(r, m);
      }
      if (a != 0) vmovaps(Xbyak::Ymm(0), Xbyak::Ymm(a));
      Spill(a, m);
      mov(rax, reinterpret_cast<uint64_t>(mem.code.fn));
      call(rax);
      mask_loaded_ = false;
      sign_ = MapOp::kNone;
      d = 0;
    } else {
      if ((op == MapOp::kNegate || op == MapOp::kAbs) && sign_ != op) {
        EmitSignMask(*this, op, f64_, true, Xbyak::Ymm(kSignReg));
        sign_ = op;
      }
      d = Allocate(a, b, m + 1);
      EmitFloatOp(*this, op, f64_, true, Xbyak::Ymm(d), Xbyak::Ymm(a), Xbyak::Ymm(b),
                  Xbyak::Ymm(kTempReg), Xbyak::Ymm(kSignReg));
    }
    reg_value_[d] = m;
    value_reg_[static_cast<size_t>(m)] = d;
    if (mem.out.kind == Ref::kOutput) {
      mov(rax, ptr[rbx + 8 * PointerOf(mem.out)]);
      if (masked) {
        EnsureMask();
        f64_ ? vmaskmovpd(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d))
             : vmaskmovps(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d));
      } else {
        vmovups(ptr[rax + r12], Xbyak::Ymm(d));
      }
    }
    // Free the registers of values no later member reads.
    for (int r = 0; r < kPool; ++r) {
      if (reg_value_[r] >= 0 && NextUse(reg_value_[r], m) == INT32_MAX) {
        value_reg_[static_cast<size_t>(reg_value_[r])] = -1;
        reg_value_[r] = -1;
      }
    }
  }
}

}  // namespace

struct FusedNative::Code {
  TileEmitter gen;
  Code(const FusedPlan& f, bool f64) : gen(f, f64) {}
};

FusedNative::~FusedNative() = default;

std::shared_ptr<const FusedNative> FusedNative::Build(const FusedPlan& plan) {
  if (!Allowed() || plan.members.empty() || plan.elements < kMinElements) return nullptr;
  // The element type of the first element-wise member decides; Plan() checks the rest.
  bool f64 = false;
  for (const Member& m : plan.members) {
    if (!m.absolute) {
      f64 = m.code.in == ir::DType::kF64;
      break;
    }
  }
  try {
    auto code = std::make_unique<Code>(plan, f64);
    if (!code->gen.Plan()) return nullptr;
    code->gen.Generate();
    code->gen.readyRE();
    DumpNativeCode("KILN_FUSED_JIT_DUMP", code->gen.getCode(), code->gen.getSize());
    auto native = std::make_shared<FusedNative>();
    native->fn_ = code->gen.getCode<void (*)(void* const*, int64_t)>();
    native->code_ = std::move(code);
    return native;
  } catch (const std::exception&) {
    return nullptr;  // no executable memory: interpret
  }
}

}  // namespace kiln::compiler
