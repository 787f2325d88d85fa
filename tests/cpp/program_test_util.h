// Scaffolding for the engine and code generator tests (engine_flat_program_test.cc,
// codegen_fused_test.cc, codegen_loop_test.cc with loop_test_util.h): builds functions of StableHLO
// ops by hand (AddFunction, OpList), compiles them with the compiler's ProgramBuilder (lowering,
// constant folding, fusion, buffer plan: the programs the engine really runs), runs programs with
// RunProgram or as flat programs, and makes and compares values full of NaNs, infinities, signed
// zeros and subnormals.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "compiler/program_builder.h"
#include "engine/flat_program.h"
#include "engine/run_program.h"
#include "ir/dtype_dispatch.h"
#include "ir/module.h"
#include "lower/program.h"
#include "runtime/aligned_buffer.h"
#include "runtime/view.h"

namespace kiln::testing {

using ir::DType;
using ir::ValueId;

// The element types these programs use.
inline constexpr ir::DTypeSet kTestTypes =
    ir::SetOf(DType::kF32, DType::kF64, DType::kS32, DType::kU32, DType::kPred);

inline ir::Type Ty(DType dtype, std::vector<int64_t> dims = {}) {
  return ir::Type::Tensor(dtype, std::move(dims));
}

// Appends ops to one block of a module.
class OpList {
 public:
  OpList(ir::Module& module, ir::Block& block) : m_(module), b_(block) {}

  ir::Module& module() { return m_; }
  const ir::Type& TypeOf(ValueId v) const { return m_.type_of(v); }
  ValueId Arg(const ir::Type& t) {
    const ValueId v = m_.AddValue(t);
    b_.args.push_back(v);
    return v;
  }
  // An op with results of `types`; `loc` (if set) names it in error messages ("... at <loc>").
  ir::Op& Add(std::string name, std::vector<ValueId> operands, const std::vector<ir::Type>& types,
              std::vector<ir::NamedAttr> attrs = {}, const std::string& loc = "") {
    ir::Op op;
    op.name = std::move(name);
    op.operands = std::move(operands);
    for (const ir::Type& t : types) op.results.push_back(m_.AddValue(t));
    op.attrs = std::move(attrs);
    if (!loc.empty()) {
      op.loc = static_cast<int32_t>(m_.locations.size());
      m_.locations.push_back(loc);
    }
    b_.ops.push_back(std::move(op));
    return b_.ops.back();
  }
  ValueId Op(std::string name, std::vector<ValueId> operands, const ir::Type& type,
             std::vector<ir::NamedAttr> attrs = {}, const std::string& loc = "") {
    return Add(std::move(name), std::move(operands), {type}, std::move(attrs), loc).results[0];
  }
  // Elementwise ops with operand 0's type.
  ValueId Unary(const std::string& name, ValueId x) { return Op(name, {x}, TypeOf(x)); }
  ValueId Binary(const std::string& name, ValueId a, ValueId b, const std::string& loc = "") {
    return Op(name, {a, b}, TypeOf(a), {}, loc);
  }
  ValueId Compare(const std::string& dir, ValueId a, ValueId b) {
    return Op("stablehlo.compare", {a, b}, Ty(DType::kPred, TypeOf(a).dims),
              {{"comparison_direction", ir::Attr::Enum(dir)}});
  }
  ValueId Select(ValueId p, ValueId a, ValueId b) {
    return Op("stablehlo.select", {p, a, b}, TypeOf(a));
  }
  ValueId Convert(ValueId x, DType to) {
    return Op("stablehlo.convert", {x}, Ty(to, TypeOf(x).dims));
  }
  // A constant of `type` holding `values` (one per element, converted to the element type: f32
  // rounded, overflowing to infinity; s32 truncated and clamped, NaN to 0; pred nonzero).
  ValueId Constant(const ir::Type& type, const std::vector<double>& values) {
    ir::Attr a;
    a.kind = ir::Attr::Kind::kElements;
    a.type = type;
    for (double v : values) {
      ir::VisitDType<kTestTypes>(
          type.dtype,
          [&](auto tag) {
            using T = ir::TagType<decltype(tag)>;
            if constexpr (std::is_same_v<T, float>) {
              Append(a.data, std::isfinite(v) && std::abs(v) > std::numeric_limits<float>::max()
                                 ? (v > 0 ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity()
                                 : static_cast<float>(v));
            } else if constexpr (std::is_same_v<T, double>) {
              Append(a.data, v);
            } else if constexpr (std::is_same_v<T, int32_t>) {
              Append(a.data, std::isnan(v) ? 0
                                           : static_cast<int32_t>(
                                                 std::clamp(v, -2147483648.0, 2147483647.0)));
            } else if constexpr (std::is_same_v<T, uint32_t>) {
              Append(a.data,
                     std::isnan(v) ? 0u : static_cast<uint32_t>(std::clamp(v, 0.0, 4294967295.0)));
            } else {
              a.data.push_back(v != 0 ? 1 : 0);
            }
          },
          [&] { a.data.push_back(v != 0 ? 1 : 0); });
    }
    return Op("stablehlo.constant", {}, type, {{"value", std::move(a)}});
  }
  ValueId Broadcast(ValueId x, std::vector<int64_t> dims, const std::vector<int64_t>& bdims) {
    return Op("stablehlo.broadcast_in_dim", {x}, Ty(TypeOf(x).dtype, std::move(dims)),
              {{"broadcast_dimensions", ir::Attr::IntArray(bdims)}});
  }
  ValueId Reshape(ValueId x, std::vector<int64_t> dims) {
    return Op("stablehlo.reshape", {x}, Ty(TypeOf(x).dtype, std::move(dims)));
  }
  // Elements [start, limit) of a 1-D value.
  ValueId Slice(ValueId x, int64_t start, int64_t limit) {
    return Op("stablehlo.slice", {x}, Ty(TypeOf(x).dtype, {limit - start}),
              {{"start_indices", ir::Attr::IntArray({start})},
               {"limit_indices", ir::Attr::IntArray({limit})},
               {"strides", ir::Attr::IntArray({1})}});
  }
  ValueId Concat(const std::vector<ValueId>& xs, int64_t dim) {
    std::vector<int64_t> dims = TypeOf(xs[0]).dims;
    dims[static_cast<size_t>(dim)] = 0;
    for (ValueId x : xs) dims[static_cast<size_t>(dim)] += TypeOf(x).dims[static_cast<size_t>(dim)];
    return Op("stablehlo.concatenate", xs, Ty(TypeOf(xs[0]).dtype, std::move(dims)),
              {{"dimension", ir::Attr::Int(dim)}});
  }
  ValueId Transpose(ValueId x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(TypeOf(x).dims[static_cast<size_t>(p)]);
    return Op("stablehlo.transpose", {x}, Ty(TypeOf(x).dtype, std::move(dims)),
              {{"permutation", ir::Attr::IntArray(perm)}});
  }
  ValueId UpdateSlice(ValueId x, ValueId update, const std::vector<ValueId>& starts) {
    std::vector<ValueId> operands = {x, update};
    operands.insert(operands.end(), starts.begin(), starts.end());
    return Op("stablehlo.dynamic_update_slice", operands, TypeOf(x));
  }
  // dynamic_slice of `sizes` from x at `starts` (scalar integers, clamped into range).
  ValueId DynamicSlice(ValueId x, const std::vector<ValueId>& starts,
                       const std::vector<int64_t>& sizes) {
    std::vector<ValueId> operands = {x};
    operands.insert(operands.end(), starts.begin(), starts.end());
    return Op("stablehlo.dynamic_slice", operands, Ty(TypeOf(x).dtype, sizes),
              {{"slice_sizes", ir::Attr::IntArray(sizes)}});
  }
  // reduce(x, init) over `axes` with the binary op `body` ("stablehlo.add", ...).
  ValueId Reduce(ValueId x, ValueId init, const std::vector<int64_t>& axes,
                 const std::string& body) {
    const DType t = TypeOf(x).dtype;
    std::vector<int64_t> dims;
    for (size_t d = 0; d < TypeOf(x).dims.size(); ++d) {
      bool reduced = false;
      for (int64_t a : axes) reduced = reduced || a == static_cast<int64_t>(d);
      if (!reduced) dims.push_back(TypeOf(x).dims[d]);
    }
    ir::Op& op = Add("stablehlo.reduce", {x, init}, {Ty(t, dims)},
                     {{"dimensions", ir::Attr::IntArray(axes)}});
    const ValueId result = op.results[0];
    ir::Region region;
    region.blocks.emplace_back();
    OpList r(m_, region.blocks.back());
    const ValueId a = r.Arg(Ty(t)), b = r.Arg(Ty(t));
    r.Return({r.Binary(body, a, b)}, "stablehlo.return");
    b_.ops.back().regions.push_back(std::move(region));
    return result;
  }
  // func.call (or a composite's decomposition, `op` "stablehlo.composite") of @fn.
  std::vector<ValueId> Call(const std::string& fn, const std::vector<ValueId>& args,
                            const std::vector<ir::Type>& types, const std::string& op = "func.call",
                            const std::string& loc = "") {
    std::vector<ir::NamedAttr> attrs;
    if (op == "func.call") {
      attrs.push_back({"callee", ir::Attr::SymbolRef(fn)});
    } else {
      attrs.push_back({"name", ir::Attr::String("test." + fn)});
      attrs.push_back({"decomposition", ir::Attr::SymbolRef(fn)});
    }
    return Add(op, args, types, std::move(attrs), loc).results;
  }
  using RegionFn = std::function<std::vector<ValueId>(OpList&, const std::vector<ValueId>&)>;
  // stablehlo.while over `init`: cond and body get the carries as block arguments (they may use
  // values of this block, which become captures).
  std::vector<ValueId> While(const std::vector<ValueId>& init, const RegionFn& cond,
                             const RegionFn& body) {
    std::vector<ir::Type> types;
    for (ValueId v : init) types.push_back(TypeOf(v));
    ir::Op op;
    op.name = "stablehlo.while";
    op.operands = init;
    for (const RegionFn* fill : {&cond, &body}) {
      ir::Region region;
      region.blocks.emplace_back();
      OpList r(m_, region.blocks.back());
      std::vector<ValueId> args;
      for (const ir::Type& t : types) args.push_back(r.Arg(t));
      r.Return((*fill)(r, args), "stablehlo.return");
      op.regions.push_back(std::move(region));
    }
    for (const ir::Type& t : types) op.results.push_back(m_.AddValue(t));
    b_.ops.push_back(std::move(op));
    return b_.ops.back().results;
  }
  void Return(const std::vector<ValueId>& values, const std::string& name = "func.return") {
    ir::Op op;
    op.name = name;
    op.operands = values;
    b_.ops.push_back(std::move(op));
  }

 private:
  template <typename T>
  static void Append(std::vector<uint8_t>& data, T v) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    data.insert(data.end(), bytes, bytes + sizeof(T));
  }

  ir::Module& m_;
  ir::Block& b_;
};

// Adds function @name taking `args`; `body` returns its results.
inline void AddFunction(ir::Module& m, const std::string& name, const std::vector<ir::Type>& args,
                        const OpList::RegionFn& body) {
  ir::Function fn;
  fn.name = name;
  fn.visibility = name == "main" ? "public" : "private";
  fn.arg_types = args;
  fn.body.blocks.emplace_back();
  m.functions.push_back(std::move(fn));
  ir::Function& f = m.functions.back();
  OpList ops(m, f.body.blocks.back());
  std::vector<ValueId> params;
  for (const ir::Type& t : args) params.push_back(ops.Arg(t));
  const std::vector<ValueId> results = body(ops, params);
  for (ValueId v : results) f.result_types.push_back(m.type_of(v));
  ops.Return(results);
}

// Compiled functions of one module (which the programs' descriptions came from).
struct Compiled {
  std::shared_ptr<const ir::Module> module;
  std::vector<std::shared_ptr<const lower::Program>> programs;  // per requested function
};

// Compiles functions `names` of `module` as the compiler does (one ProgramBuilder, so a function
// called from several places is one program).
inline Compiled CompileFunctions(ir::Module module, const std::vector<std::string>& names) {
  Compiled c;
  c.module = std::make_shared<const ir::Module>(std::move(module));
  compiler::ProgramBuilder builder(c.module);
  for (const std::string& name : names) {
    StatusOr<std::shared_ptr<const lower::Program>> p = builder.BuildFunction(name);
    EXPECT_TRUE(p.ok()) << "@" << name << ": " << p.status().ToString() << "\n"
                        << ir::PrintModule(*c.module);
    c.programs.push_back(p.ok() ? *p : nullptr);
  }
  return c;
}

// Compiles a module whose @main takes `args` and returns what `body` makes.
inline std::shared_ptr<const lower::Program> BuildMain(const std::vector<ir::Type>& args,
                                                       const OpList::RegionFn& body) {
  ir::Module m;
  AddFunction(m, "main", args, body);
  Compiled c = CompileFunctions(std::move(m), {"main"});
  return c.programs[0];
}

// Arrays of given types in 64-byte aligned memory, with their views.
class Values {
 public:
  explicit Values(std::vector<ir::Type> types) : types_(std::move(types)) {
    buffers_.resize(types_.size());
    for (size_t i = 0; i < types_.size(); ++i) {
      EXPECT_TRUE(buffers_[i].Reserve(std::max<size_t>(Bytes(i), 1)).ok());
      std::memset(buffers_[i].data(), 0, std::max<size_t>(Bytes(i), 1));
      views_.push_back(runtime::View::Of(types_[i], buffers_[i].data()));
    }
  }
  // A copy of the types and the bytes, in memory of its own.
  Values(const Values& other) : Values(other.types_) {
    for (size_t i = 0; i < types_.size(); ++i) std::memcpy(Data(i), other.Data(i), Bytes(i));
  }
  Values& operator=(const Values&) = delete;

  size_t size() const { return types_.size(); }
  const ir::Type& type(size_t i) const { return types_[i]; }
  size_t Bytes(size_t i) const {
    return static_cast<size_t>(types_[i].num_elements()) *
           static_cast<size_t>(ir::DTypeByteSize(types_[i].dtype));
  }
  std::byte* Data(size_t i) const { return static_cast<std::byte*>(buffers_[i].data()); }
  std::span<const runtime::View> views() const { return views_; }

 private:
  std::vector<ir::Type> types_;
  std::vector<runtime::AlignedBuffer> buffers_;
  std::vector<runtime::View> views_;
};

inline std::vector<ir::Type> ParamTypes(const lower::Program& p) {
  std::vector<ir::Type> t;
  for (int32_t s : p.param_slots) t.push_back(p.slot_types[static_cast<size_t>(s)]);
  return t;
}
inline std::vector<ir::Type> ResultTypes(const lower::Program& p) {
  std::vector<ir::Type> t;
  for (int32_t s : p.result_slots) t.push_back(p.slot_types[static_cast<size_t>(s)]);
  return t;
}

// One element: with probability `special_percent`% an interesting one (NaNs of several payloads
// and signs, infinities, signed zeros, subnormals, extremes), else an ordinary value or a small
// integer.
template <typename F>
F SpecialFloat(std::mt19937& rng, int special_percent = 50) {
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  using L = std::numeric_limits<F>;
  constexpr U kQuiet = U{1} << (L::digits - 2);
  const U nan_bits = std::bit_cast<U>(L::infinity()) | kQuiet;
  if (std::uniform_int_distribution<int>(0, 99)(rng) >= special_percent) {
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
      return F(std::uniform_int_distribution<int>(-4, 4)(rng));
    }
    return F(std::normal_distribution<double>(0.0, 3.0)(rng));
  }
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0:
      return L::quiet_NaN();
    case 1:  // a negative NaN with a payload
      return std::bit_cast<F>(nan_bits | (U{1} << (sizeof(F) * 8 - 1)) | U{0x5a});
    case 2:
      return std::bit_cast<F>(nan_bits | (U{0x1234} & (kQuiet - 1)));
    case 3:
      return L::infinity();
    case 4:
      return -L::infinity();
    case 5:
      return F(0);
    case 6:
      return -F(0);
    case 7:
      return L::denorm_min() * F(std::uniform_int_distribution<int>(1, 1000)(rng));
    case 8:
      return -L::min() / F(3);
    default:
      return std::uniform_int_distribution<int>(0, 1)(rng) ? L::max() : L::lowest() / F(7);
  }
}

// One element of a palette of few values (signed zeros, ones, NaNs, infinities), so that ties
// (maximum of +0 and -0, equal operands of compares, a NaN on both sides) are frequent.
inline constexpr int kPaletteSize = 9;
template <typename F>
F PaletteValue(int i) {
  using L = std::numeric_limits<F>;
  static const F kPalette[kPaletteSize] = {
      F(0),           -F(0),           F(1),          -F(1),         F(2),
      L::quiet_NaN(), -L::quiet_NaN(), L::infinity(), -L::infinity()};
  return kPalette[i % kPaletteSize];
}
template <typename F>
F PaletteFloat(std::mt19937& rng) {
  return PaletteValue<F>(std::uniform_int_distribution<int>(0, kPaletteSize - 1)(rng));
}

// Fills every value of `v` with elements of its type: floats SpecialFloat's (or, with `palette`,
// PaletteFloat's), integers small or extreme (or -1, 0, 1, 2), predicates 0 or 1.
inline void FillRandom(const Values& v, std::mt19937& rng, int special_percent = 50,
                       bool palette = false) {
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t n = v.type(i).num_elements();
    for (int64_t k = 0; k < n; ++k) {
      std::byte* at = v.Data(i) + k * ir::DTypeByteSize(v.type(i).dtype);
      ir::VisitDType<kTestTypes>(
          v.type(i).dtype,
          [&](auto tag) {
            using T = ir::TagType<decltype(tag)>;
            if constexpr (std::is_floating_point_v<T>) {
              const T f = palette ? PaletteFloat<T>(rng) : SpecialFloat<T>(rng, special_percent);
              std::memcpy(at, &f, sizeof f);
            } else if constexpr (std::is_same_v<T, int32_t>) {
              const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
              const int32_t x = palette     ? std::uniform_int_distribution<int32_t>(-1, 2)(rng)
                                : kind == 0 ? std::numeric_limits<int32_t>::min()
                                : kind == 1 ? std::numeric_limits<int32_t>::max()
                                            : std::uniform_int_distribution<int32_t>(-50, 50)(rng);
              std::memcpy(at, &x, 4);
            } else if constexpr (std::is_same_v<T, uint32_t>) {  // shift counts too: 0-40, huge
              const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
              const uint32_t x = palette     ? std::uniform_int_distribution<uint32_t>(0, 3)(rng)
                                 : kind == 0 ? std::numeric_limits<uint32_t>::max()
                                 : kind == 1 ? uint32_t{1} << 31
                                 : kind < 5  ? std::uniform_int_distribution<uint32_t>(0, 40)(rng)
                                             : static_cast<uint32_t>(rng());
              std::memcpy(at, &x, 4);
            } else {  // pred
              *reinterpret_cast<uint8_t*>(at) = std::uniform_int_distribution<int>(0, 1)(rng) != 0;
            }
          },
          [&] { ADD_FAILURE() << "FillRandom: unhandled type " << v.type(i).ToString(); });
    }
  }
}

// "" when value i of `a` and `b` hold the same bits, else where they first differ. With
// `nan_equal`, two NaNs of the same type count as equal whatever their payloads.
inline std::string Difference(const Values& a, const Values& b, size_t i, bool nan_equal) {
  const ir::DType t = a.type(i).dtype;
  const int w = ir::DTypeByteSize(t);
  for (int64_t k = 0; k < a.type(i).num_elements(); ++k) {
    const std::byte* x = a.Data(i) + k * w;
    const std::byte* y = b.Data(i) + k * w;
    if (std::memcmp(x, y, static_cast<size_t>(w)) == 0) continue;
    double dx = 0, dy = 0;
    if (t == DType::kF32) {
      float fx, fy;
      std::memcpy(&fx, x, 4);
      std::memcpy(&fy, y, 4);
      dx = fx, dy = fy;
    } else if (t == DType::kF64) {
      std::memcpy(&dx, x, 8);
      std::memcpy(&dy, y, 8);
    }
    const bool is_float = t == DType::kF32 || t == DType::kF64;
    if (nan_equal && is_float && std::isnan(dx) && std::isnan(dy)) continue;
    std::ostringstream s;
    s << "value #" << i << " (" << a.type(i).ToString() << ") element " << k << ": ";
    uint64_t bx = 0, by = 0;
    std::memcpy(&bx, x, static_cast<size_t>(w));
    std::memcpy(&by, y, static_cast<size_t>(w));
    s << std::hex << "0x" << bx << " vs 0x" << by << std::dec;
    if (is_float) s << " (" << dx << " vs " << dy << ")";
    return s.str();
  }
  return "";
}

// Runs `p` with RunProgram on `params` into `results`.
inline Status RunWithRunner(const lower::Program& p, const Values& params, const Values& results) {
  runtime::AlignedBuffer memory;
  KILN_RETURN_IF_ERROR(memory.Reserve(p.total_bytes));
  lower::ExecContext ctx;
  return engine::RunProgram(p, ctx, params.views(), results.views(),
                            static_cast<std::byte*>(memory.data()));
}

// Runs `f` resolved for `params` and `results`, `runs` times (a loop reruns the same table).
inline Status RunFlat(const engine::FlatProgram& f, std::span<const runtime::View> params,
                      std::span<const runtime::View> results, int runs = 1) {
  runtime::AlignedBuffer memory, table;
  KILN_RETURN_IF_ERROR(memory.Reserve(f.program().total_bytes));
  KILN_RETURN_IF_ERROR(table.Reserve(f.table_bytes()));
  KILN_RETURN_IF_ERROR(f.Resolve(params, results, static_cast<std::byte*>(memory.data()),
                                 static_cast<std::byte*>(table.data())));
  lower::ExecContext ctx;
  for (int r = 0; r < runs; ++r) {
    KILN_RETURN_IF_ERROR(f.Run(ctx, static_cast<const std::byte*>(table.data())));
  }
  return Status::Ok();
}

// Runs @main of `m`, each argument filled with the bytes fill * (b + 7) >> 3, and returns the
// result bytes (none when @main does not compile).
inline std::vector<std::vector<uint8_t>> RunMainBytes(const ir::Module& m, uint32_t fill) {
  Compiled c = CompileFunctions(m, {"main"});
  std::vector<std::vector<uint8_t>> out;
  EXPECT_NE(c.programs[0], nullptr);
  if (c.programs[0] == nullptr) return out;
  Values params(ParamTypes(*c.programs[0]));
  for (size_t i = 0; i < params.size(); ++i) {
    auto* p = reinterpret_cast<uint8_t*>(params.Data(i));
    for (size_t b = 0; b < params.Bytes(i); ++b) p[b] = static_cast<uint8_t>(fill * (b + 7) >> 3);
  }
  Values results(ResultTypes(*c.programs[0]));
  Status s = RunWithRunner(*c.programs[0], params, results);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < results.size(); ++i) {
    const auto* r = reinterpret_cast<const uint8_t*>(results.Data(i));
    out.emplace_back(r, r + results.Bytes(i));
  }
  return out;
}

}  // namespace kiln::testing
