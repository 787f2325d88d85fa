#include "kernels/scalar_eval.h"

#include <cstring>
#include <string>
#include <unordered_map>

#include "ir/dtype_dispatch.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"

namespace kiln::kernels {
namespace {

bool SupportedType(ir::DType t) {
  return ir::InSet(t, ir::kStored & ~ir::kComplexes) || ir::IsInteger(t);
}

uint64_t WidthMask(ir::DType t) {
  int bytes = ir::DTypeByteSize(t);
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// (The low bytes of `bits` hold the value: x86-64 is little-endian.)
double FloatValue(uint64_t bits, ir::DType t) {
  return ir::VisitDType<ir::kNativeFloats | ir::kHalfFloats>(
      t,
      [&](auto tag) -> double {
        ir::TagType<decltype(tag)> x;
        std::memcpy(&x, &bits, sizeof x);
        return WidenFloat(x);
      },
      [&]() -> double { return HalfBitsToFloat(static_cast<uint16_t>(bits)); });
}

// Signed integer key whose order is StableHLO's TOTALORDER on the float `bits` of type t.
int64_t TotalKey(uint64_t bits, ir::DType t) {
  if (t == ir::DType::kF64) {
    auto i = static_cast<int64_t>(bits);
    return i < 0 ? i ^ std::numeric_limits<int64_t>::max() : i;
  }
  // 16-bit floats widen to f32 exactly (payloads too), which keeps their total order.
  float f = static_cast<float>(FloatValue(bits, t));
  uint32_t u = 0;
  if (t == ir::DType::kF32) {
    u = static_cast<uint32_t>(bits);
  } else {
    std::memcpy(&u, &f, 4);
  }
  auto i = static_cast<int32_t>(u);
  return i < 0 ? i ^ std::numeric_limits<int32_t>::max() : i;
}

int64_t SignedValue(uint64_t bits, ir::DType t) {
  int shift = 64 - 8 * ir::DTypeByteSize(t);
  return static_cast<int64_t>(bits << shift) >> shift;
}

bool IsScalar(const ir::Module& m, ir::ValueId v) {
  return m.valid_value(v) && m.type_of(v).is_tensor() && m.type_of(v).rank() == 0 &&
         SupportedType(m.type_of(v).dtype);
}

std::optional<uint64_t> ConstantBits(const ir::Op& op, const ir::Module& m) {
  if (op.name != "stablehlo.constant" || op.results.size() != 1 || !IsScalar(m, op.results[0]))
    return std::nullopt;
  const ir::Attr* value = op.attr("value");
  ir::DType t = m.type_of(op.results[0]).dtype;
  size_t width = static_cast<size_t>(ir::DTypeByteSize(t));
  if (value == nullptr || value->kind != ir::Attr::Kind::kElements || value->type.dtype != t ||
      value->data.size() != width) {
    return std::nullopt;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, value->data.data(), width);
  if (t == ir::DType::kPred) bits = bits != 0;
  return bits;
}

std::optional<CompareDirection> Direction(const ir::Op& op) {
  const ir::Attr* a = op.attr("comparison_direction");
  if (a == nullptr) return std::nullopt;
  if (a->str == "EQ") return CompareDirection::kEq;
  if (a->str == "NE") return CompareDirection::kNe;
  if (a->str == "GE") return CompareDirection::kGe;
  if (a->str == "GT") return CompareDirection::kGt;
  if (a->str == "LE") return CompareDirection::kLe;
  if (a->str == "LT") return CompareDirection::kLt;
  return std::nullopt;
}

}  // namespace

std::optional<ScalarEvaluator> ScalarEvaluator::Build(const ir::Module& module,
                                                      const ir::Region& region) {
  if (region.blocks.size() != 1 || region.blocks[0].ops.empty()) return std::nullopt;
  const ir::Block& block = region.blocks[0];
  ScalarEvaluator ev;
  std::unordered_map<ir::ValueId, int32_t> slot_of;
  auto dtype_of = [&](ir::ValueId v) { return module.type_of(v).dtype; };
  for (ir::ValueId a : block.args) {
    if (!IsScalar(module, a) || slot_of.count(a)) return std::nullopt;
    slot_of[a] = ev.num_slots_++;
    ev.arg_dtypes_.push_back(dtype_of(a));
  }
  // A value defined earlier in the block, or a constant defined outside the region.
  auto use = [&](ir::ValueId v) -> std::optional<int32_t> {
    if (auto it = slot_of.find(v); it != slot_of.end()) return it->second;
    if (!IsScalar(module, v)) return std::nullopt;
    const ir::Op* def = FindDefiningOp(module, v);
    if (def == nullptr) return std::nullopt;
    std::optional<uint64_t> bits = ConstantBits(*def, module);
    if (!bits) return std::nullopt;
    int32_t slot = ev.num_slots_++;
    ev.constants_.push_back({slot, *bits});
    slot_of[v] = slot;
    return slot;
  };

  for (size_t i = 0; i + 1 < block.ops.size(); ++i) {
    const ir::Op& op = block.ops[i];
    if (op.foreign || !op.regions.empty() || op.results.size() != 1 ||
        !IsScalar(module, op.results[0]) || slot_of.count(op.results[0])) {
      return std::nullopt;
    }
    ir::DType rt = dtype_of(op.results[0]);
    if (op.name == "stablehlo.constant") {
      std::optional<uint64_t> bits = ConstantBits(op, module);
      if (!bits) return std::nullopt;
      int32_t slot = ev.num_slots_++;
      ev.constants_.push_back({slot, *bits});
      slot_of[op.results[0]] = slot;
      continue;
    }
    std::vector<int32_t> in;
    for (ir::ValueId v : op.operands) {
      std::optional<int32_t> s = use(v);
      if (!s) return std::nullopt;
      in.push_back(*s);
    }
    Instr ins{Code::kAnd, CompareDirection::kEq, rt, 0, 0, 0, 0};
    if (op.name == "stablehlo.compare") {
      if (in.size() != 2 || rt != ir::DType::kPred) return std::nullopt;
      ir::DType t = dtype_of(op.operands[0]);
      if (dtype_of(op.operands[1]) != t) return std::nullopt;
      std::optional<CompareDirection> dir = Direction(op);
      if (!dir) return std::nullopt;
      const ir::Attr* type_attr = op.attr("compare_type");
      std::string type = type_attr == nullptr || type_attr->is_none() ? "NOTYPE" : type_attr->str;
      if (ir::IsFloat(t)) {
        if (type == "FLOAT" || type == "NOTYPE")
          ins.code = Code::kCompareFloat;
        else if (type == "TOTALORDER")
          ins.code = Code::kCompareTotal;
        else
          return std::nullopt;
      } else if (ir::IsSignedInt(t)) {
        if (type != "SIGNED" && type != "NOTYPE") return std::nullopt;
        ins.code = Code::kCompareSigned;
      } else {
        if (type != "UNSIGNED" && type != "NOTYPE") return std::nullopt;
        ins.code = Code::kCompareUnsigned;
      }
      ins.dir = *dir;
      ins.dtype = t;
      ins.a = in[0];
      ins.b = in[1];
    } else if (op.name == "stablehlo.select") {
      if (in.size() != 3 || dtype_of(op.operands[0]) != ir::DType::kPred ||
          dtype_of(op.operands[1]) != rt || dtype_of(op.operands[2]) != rt) {
        return std::nullopt;
      }
      ins.code = Code::kSelect;
      ins.a = in[0];
      ins.b = in[1];
      ins.c = in[2];
    } else if (op.name == "stablehlo.and" || op.name == "stablehlo.or" ||
               op.name == "stablehlo.xor") {
      if (in.size() != 2 || ir::IsFloat(rt) || dtype_of(op.operands[0]) != rt ||
          dtype_of(op.operands[1]) != rt) {
        return std::nullopt;
      }
      ins.code = op.name == "stablehlo.and"  ? Code::kAnd
                 : op.name == "stablehlo.or" ? Code::kOr
                                             : Code::kXor;
      ins.a = in[0];
      ins.b = in[1];
    } else if (op.name == "stablehlo.not") {
      if (in.size() != 1 || ir::IsFloat(rt) || dtype_of(op.operands[0]) != rt) return std::nullopt;
      ins.code = Code::kNot;
      ins.a = in[0];
    } else {
      return std::nullopt;
    }
    ins.dst = ev.num_slots_++;
    slot_of[op.results[0]] = ins.dst;
    ev.code_.push_back(ins);
  }
  const ir::Op& ret = block.ops.back();
  if (ret.name != "stablehlo.return" && ret.name != "func.return") return std::nullopt;
  for (ir::ValueId v : ret.operands) {
    std::optional<int32_t> s = use(v);
    if (!s) return std::nullopt;
    ev.result_slots_.push_back(*s);
    ev.result_dtypes_.push_back(dtype_of(v));
  }
  return ev;
}

void ScalarEvaluator::Run(std::span<const void* const> args, std::span<void* const> results,
                          std::vector<uint64_t>& scratch) const {
  scratch.assign(static_cast<size_t>(num_slots_), 0);
  uint64_t* s = scratch.data();
  for (size_t i = 0; i < arg_dtypes_.size(); ++i) {
    std::memcpy(&s[i], args[i], static_cast<size_t>(ir::DTypeByteSize(arg_dtypes_[i])));
  }
  for (const auto& [slot, bits] : constants_) s[slot] = bits;
  for (const Instr& in : code_) {
    uint64_t& out = s[in.dst];
    switch (in.code) {
      case Code::kCompareFloat:
        out = CompareValues(in.dir, FloatValue(s[in.a], in.dtype), FloatValue(s[in.b], in.dtype));
        break;
      case Code::kCompareTotal:
        out = CompareValues(in.dir, TotalKey(s[in.a], in.dtype), TotalKey(s[in.b], in.dtype));
        break;
      case Code::kCompareSigned:
        out = CompareValues(in.dir, SignedValue(s[in.a], in.dtype), SignedValue(s[in.b], in.dtype));
        break;
      case Code::kCompareUnsigned:
        out = CompareValues(in.dir, s[in.a], s[in.b]);
        break;
      case Code::kSelect:
        out = s[in.a] != 0 ? s[in.b] : s[in.c];
        break;
      case Code::kAnd:
        out = s[in.a] & s[in.b];
        break;
      case Code::kOr:
        out = s[in.a] | s[in.b];
        break;
      case Code::kXor:
        out = s[in.a] ^ s[in.b];
        break;
      case Code::kNot:
        out = in.dtype == ir::DType::kPred ? s[in.a] ^ 1 : ~s[in.a] & WidthMask(in.dtype);
        break;
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::memcpy(results[i], &s[result_slots_[i]],
                static_cast<size_t>(ir::DTypeByteSize(result_dtypes_[i])));
  }
}

}  // namespace kiln::kernels
