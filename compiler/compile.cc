#include "compiler/compile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/donation.h"
#include "compiler/entry_layouts.h"
#include "compiler/flatten_calls.h"
#include "compiler/gather_indices.h"
#include "compiler/gspmd_manual.h"
#include "compiler/inline_calls.h"
#include "compiler/narrow_counters.h"
#include "compiler/narrow_float.h"
#include "compiler/padded_windows.h"
#include "compiler/program_builder.h"
#include "compiler/spmd_partitioner.h"
#include "compiler/transposed_dots.h"
#include "compiler/verifier.h"
#include "ingest/artifact_reader.h"
#include "ingest/hlo_reader.h"
#include "ingest/text_reader.h"
#include "kernels/families.h"
#include "runtime/trace.h"

namespace kiln::compiler {

using lower::OpRegistry;
namespace {

// JAX gives ops inside private functions (jnp.fft.fft, log_softmax, ...) bare name locations with
// no file; the user's source line is on the func.call that reached them. A location "has a source"
// when it names a file position (contains ':').
bool HasSourcePosition(std::string_view loc) { return loc.find(':') != std::string_view::npos; }

class UnsupportedOpCollector {
 public:
  UnsupportedOpCollector(const ir::Module& module, const OpRegistry& registry)
      : module_(module), registry_(registry) {}

  // Walks `fn`; `call_site` is the location of the call that reached it ("" for entry points).
  void VisitFunction(const ir::Function& fn, const std::string& call_site, int depth) {
    // Each function is described once per distinct call site; the depth bound stops call cycles,
    // which the program builder rejects with its own error.
    if (depth > 32 || !visited_.insert(fn.name + "\n" + call_site).second) return;
    reached_.insert(fn.name);
    for (const ir::Block& block : fn.body.blocks) {
      for (const ir::Op& op : block.ops) VisitOp(op, call_site, depth);
    }
  }

  bool reached(const std::string& name) const { return reached_.count(name) != 0; }
  std::vector<std::string>& unsupported() { return unsupported_; }

 private:
  void VisitOp(const ir::Op& op, const std::string& call_site, int depth) {
    if (!IsTerminator(op) && !registry_.Supports(op)) {
      std::string line = DescribeOp(module_, op);
      if (!HasSourcePosition(module_.location(op.loc)) && !call_site.empty()) {
        line += ", called from " + call_site;
      }
      if (seen_.insert(line).second) unsupported_.push_back(std::move(line));
    }
    if (op.name == "func.call") {
      const ir::Attr* callee = op.attr("callee");
      const ir::Function* fn = callee != nullptr ? module_.FindFunction(callee->str) : nullptr;
      if (fn != nullptr) {
        std::string site(module_.location(op.loc));
        if (!HasSourcePosition(site)) site = call_site;
        VisitFunction(*fn, site, depth + 1);
      }
    }
    for (const ir::Region& region : op.regions) {
      for (const ir::Block& block : region.blocks) {
        for (const ir::Op& inner : block.ops) VisitOp(inner, call_site, depth);
      }
    }
  }

  const ir::Module& module_;
  const OpRegistry& registry_;
  std::vector<std::string> unsupported_;
  std::set<std::string> seen_;
  std::set<std::string> visited_;
  std::set<std::string> reached_;
};

// @main's arguments may hold this many bytes in a program run on the caller's thread (IsCheap).
constexpr uint64_t kInlineArgumentBytes = 16 << 20;

// Regions and calls nested at most 32 deep (inline runs use the caller's stack, which may be small)
// and all values but @main's arguments together hold at most `budget` bytes, the arguments at most
// `argument_budget`. Loops qualify: on small values a loop's iterations cost less than the two
// thread wake-ups a handoff to the device thread takes (docs/engine.md, "Dispatch"), and XLA:CPU
// runs such loops on the caller's thread as well.
bool IsCheap(const ir::Module& module, uint64_t budget, uint64_t argument_budget) {
  // @main's arguments count against argument_budget: a program that reads large arguments into
  // small values (a reduction, a slice) does one pass over them.
  std::vector<bool> argument(module.value_types.size(), false);
  const ir::Function* main = module.MainFunction();
  if (main != nullptr && !main->body.blocks.empty()) {
    for (ir::ValueId v : main->body.blocks[0].args) {  // the entry block's: the function's
      if (v >= 0 && static_cast<size_t>(v) < argument.size()) {
        argument[static_cast<size_t>(v)] = true;
      }
    }
    // An argument's bf16/f16 -> f32 convert counts as the argument: reductions read the codes in
    // its place (compiler/narrow_inputs.h), so it is mostly never made.
    for (const ir::Op& op : main->body.blocks[0].ops) {
      if (op.name != "stablehlo.convert" || op.operands.size() != 1 || op.results.size() != 1) {
        continue;
      }
      const auto in = static_cast<size_t>(op.operands[0]), out = static_cast<size_t>(op.results[0]);
      if (in >= argument.size() || out >= argument.size() || !argument[in]) continue;
      const ir::DType from = module.value_types[in].dtype, to = module.value_types[out].dtype;
      if ((from == ir::DType::kBF16 || from == ir::DType::kF16) && to == ir::DType::kF32) {
        argument[out] = true;
      }
    }
  }
  uint64_t bytes = 0, argument_bytes = 0;
  for (size_t i = 0; i < module.value_types.size(); ++i) {
    const ir::Type& t = module.value_types[i];
    if (!t.is_tensor()) continue;
    const int64_t n = t.num_elements();
    if (n < 0) return false;
    const uint64_t size =
        static_cast<uint64_t>(n) * static_cast<uint64_t>(ir::DTypeByteSize(t.dtype));
    if (argument[i]) {
      argument_bytes += size;
      if (argument_bytes > argument_budget) return false;
      continue;
    }
    bytes += size;
    if (bytes > budget) return false;
  }
  // The nesting of regions and calls (func.call's callee, a composite's decomposition) the run
  // goes through: each function's depth counted once (memoized), a cycle (invalid; the compiler
  // refuses it) or a chain past the limit makes the module not cheap. Counting functions instead
  // would refuse programs of many small helpers (diffrax: 70 functions, nested 10 deep).
  constexpr int kMaxInlineDepth = 32;
  std::map<std::string_view, const ir::Function*> by_name;
  for (const ir::Function& fn : module.functions) by_name[fn.name] = &fn;
  std::map<const ir::Function*, int> depth_of;  // -1: being visited
  auto function_depth = [&](auto&& self_fn, const ir::Function& fn) -> int {
    auto [it, fresh] = depth_of.emplace(&fn, -1);
    if (!fresh) return it->second < 0 ? kMaxInlineDepth + 1 : it->second;
    int deepest = 0;
    auto visit = [&](auto&& self, const ir::Op& op, int depth) -> void {
      if (depth > kMaxInlineDepth) deepest = depth;
      if (deepest > kMaxInlineDepth) return;
      for (const char* attr : {"callee", "decomposition"}) {
        const ir::Attr* target = op.attr(attr);
        if (target == nullptr) continue;
        auto callee = by_name.find(target->str);
        if (callee == by_name.end()) continue;
        deepest = std::max(deepest, depth + 1 + self_fn(self_fn, *callee->second));
      }
      deepest = std::max(deepest, depth);
      for (const ir::Region& r : op.regions) {
        for (const ir::Block& b : r.blocks) {
          for (const ir::Op& inner : b.ops) self(self, inner, depth + 1);
        }
      }
    };
    for (const ir::Block& b : fn.body.blocks) {
      for (const ir::Op& op : b.ops) visit(visit, op, 0);
    }
    depth_of[&fn] = deepest;
    return deepest;
  };
  for (const ir::Function& fn : module.functions) {
    if (function_depth(function_depth, fn) > kMaxInlineDepth) return false;
  }
  return true;
}

// Lists every op the registry cannot compile, so users see the whole gap at once instead of
// fixing one op per compile.
Status CheckAllOpsSupported(const ir::Module& module) {
  UnsupportedOpCollector collector(module, kernels::Registry());
  if (const ir::Function* main = module.MainFunction()) collector.VisitFunction(*main, "", 0);
  // Functions main never calls still get checked, without call-site context.
  for (const ir::Function& fn : module.functions) {
    if (!collector.reached(fn.name)) collector.VisitFunction(fn, "", 0);
  }
  std::vector<std::string>& unsupported = collector.unsupported();
  if (unsupported.empty()) return Status::Ok();
  std::string message = "Kiln cannot compile " +
                        (module.name.empty() ? std::string("this program") : module.name) + ": " +
                        std::to_string(unsupported.size()) + " unsupported operation" +
                        (unsupported.size() == 1 ? "" : "s") + ":";
  for (const std::string& line : unsupported) message += "\n  " + line;
  return Unimplemented(std::move(message));
}

std::string Fingerprint(std::span<const uint8_t> code, const ingest::CompileOptions& options) {
  // FNV-1a over the program bytes and the options that change the executable.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t byte) {
    h ^= byte;
    h *= 1099511628211ull;
  };
  for (uint8_t b : code) mix(b);
  mix(static_cast<uint64_t>(options.num_replicas));
  mix(static_cast<uint64_t>(options.num_partitions));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "kiln-%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

StatusOr<std::shared_ptr<const Executable>> CompileModule(std::shared_ptr<const ir::Module> module,
                                                          ingest::CompileOptions options,
                                                          std::string fingerprint) {
  if (HasGspmdManual(*module)) {  // shard_map / pmap lowered for GSPMD (compiler/gspmd_manual.h)
    auto rewritten = std::make_shared<ir::Module>(*module);
    KILN_RETURN_IF_ERROR(RewriteGspmdManual(*rewritten, options.num_partitions));
    module = std::move(rewritten);
  }
  {
    runtime::TraceSpan span("compile: verify", "compile");
    KILN_RETURN_IF_ERROR(VerifyModule(*module));
    KILN_RETURN_IF_ERROR(CheckAllOpsSupported(*module));
  }
  // Entry layouts other than row-major: transposes at @main's edges (compiler/entry_layouts.h).
  if (module->MainFunction() == nullptr) return InvalidArgument("the module has no @main");
  KILN_ASSIGN_OR_RETURN(EntryLayouts layouts, ReadEntryLayouts(*module->MainFunction()));
  if (!layouts.all_row_major) {
    if (options.num_replicas > 1) {
      return Unimplemented(
          "layouts other than row-major (mhlo.layout_mode) on a replicated "
          "program (" +
          std::to_string(options.num_replicas) + " replicas) are not supported");
    }
    auto relaid = std::make_shared<ir::Module>(*module);
    ir::Function& main =
        relaid->functions[static_cast<size_t>(relaid->MainFunction() - relaid->functions.data())];
    KILN_RETURN_IF_ERROR(ApplyEntryLayouts(*relaid, main, layouts));
    module = std::move(relaid);
  }
  if (NeedsF32Compute(*module)) {
    auto widened = std::make_shared<ir::Module>(*module);
    ComputeInF32(*widened);
    module = std::move(widened);
  }
  if (options.num_partitions <= 1 && options.num_replicas <= 1 &&
      HasFlattenableCalls(*module)) {  // jax.random's chain of calls: one block
    auto flat = std::make_shared<ir::Module>(*module);
    FlattenCalls(*flat);
    module = std::move(flat);
  }
  if (HasInlinableCalls(*module)) {  // jnp's elementwise helpers: fused with their callers
    auto inlined = std::make_shared<ir::Module>(*module);
    InlineElementwiseCalls(*inlined);
    module = std::move(inlined);
  }
  if (HasNarrowableCounters(*module)) {  // jax.random's uint64 counters, in uint32
    auto narrowed = std::make_shared<ir::Module>(*module);
    NarrowCounters(*narrowed);
    module = std::move(narrowed);
  }
  if (options.num_partitions <= 1 && HasPaddedWindows(*module)) {  // avg_pool gradients
    auto folded = std::make_shared<ir::Module>(*module);
    FoldPaddedWindows(*folded);
    module = std::move(folded);
  }
  if (HasGatherIndexWrap(*module)) {  // take_along_axis's negative-index wrap, in the gather
    auto folded = std::make_shared<ir::Module>(*module);
    FoldGatherIndexWrap(*folded);
    module = std::move(folded);
  }
  if (options.num_partitions <= 1 && HasTransposedDots(*module)) {  // gradients' dot + transpose
    auto folded = std::make_shared<ir::Module>(*module);
    FoldTransposedDots(*folded);
    module = std::move(folded);
  }
  // A sharded program whose every op has a rule runs per device (compiler/spmd_partitioner.h).
  if (layouts.all_row_major) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<ir::Module> partitioned, PartitionSpmd(*module, options));
    if (partitioned != nullptr) module = std::move(partitioned);
  }
  const ir::Function* main = module->MainFunction();
  auto exe = std::make_shared<Executable>();
  exe->name = module->name.empty() ? main->name : module->name;
  const ir::Type runtime_token = ir::Type::Tensor(ir::DType::kPred, {0});
  std::vector<int32_t> donated_to_per_arg;  // compiler/donation.h
  for (const ir::Type& t : main->arg_types) {
    const bool token = t.kind == ir::Type::Kind::kToken;
    if (!token && (!t.is_tensor() || !t.has_static_shape())) {
      return Unimplemented("argument type " + t.ToString() + " of @" + main->name +
                           " is not supported");
    }
    exe->arg_types.push_back(token ? runtime_token : t);
    exe->token_args.push_back(token);
    int32_t donated_to = -1;
    if (exe->arg_types.size() <= main->arg_attrs.size()) {
      const ir::Attr& attrs = main->arg_attrs[exe->arg_types.size() - 1];
      if (attrs.kind == ir::Attr::Kind::kDict) {
        const ir::Attr* alias = attrs.Find("tf.aliasing_output");
        const ir::Attr* donor = attrs.Find("jax.buffer_donor");
        if (alias != nullptr && alias->AsInt().has_value()) {
          const int64_t r = *alias->AsInt();
          donated_to = r >= 0 && r < static_cast<int64_t>(main->result_types.size())
                           ? static_cast<int32_t>(r)
                           : kAnyResult;
        } else if (donor != nullptr && donor->kind == ir::Attr::Kind::kBool && donor->b) {
          donated_to = kAnyResult;
        }
      }
    }
    if (token) donated_to = -1;
    donated_to_per_arg.push_back(donated_to);
    exe->donated_args.push_back(donated_to != -1);
  }
  for (const ir::Type& t : main->result_types) {
    const bool token = t.kind == ir::Type::Kind::kToken;
    if (!token && (!t.is_tensor() || !t.has_static_shape())) {
      return Unimplemented("result type " + t.ToString() + " of @" + main->name +
                           " is not supported");
    }
    exe->result_types.push_back(token ? runtime_token : t);
    exe->token_results.push_back(token);
  }
  if (options.num_replicas * options.num_partitions != 1) {
    KILN_ASSIGN_OR_RETURN(
        exe->spmd, PlanPartitions(*module, *main, exe->arg_types, exe->result_types, options));
    for (size_t i = 0; i < exe->arg_types.size(); ++i) exe->arg_types[i] = exe->spmd->args[i].local;
    for (size_t i = 0; i < exe->result_types.size(); ++i) {
      exe->result_types[i] = exe->spmd->results[i].local;
    }
  }
  ProgramBuilder builder(module);
  if (exe->spmd.has_value()) {
    std::set<ir::ValueId> linked;
    for (const auto* values : {&exe->spmd->args, &exe->spmd->results}) {
      for (const lower::ValueLayout& v : *values)
        linked.insert(v.device_links.begin(), v.device_links.end());
    }
    builder.SetPerDeviceValues(std::move(linked));
    builder.SetPartialSums(exe->spmd->partial_sums);
  }
  // Results that may hold intermediates (PlanBuffers' fresh_results): not a partitioned program's
  // (assembled from per-device pieces), nor one a donated argument may become, since donation
  // needs the result written by one step only.
  std::vector<bool> fresh_results(main->result_types.size(), !exe->spmd.has_value());
  for (size_t a = 0; a < donated_to_per_arg.size() && a < main->arg_types.size(); ++a) {
    const int32_t want = donated_to_per_arg[a];
    for (size_t k = 0; k < fresh_results.size() && want != -1; ++k) {
      if ((want == kAnyResult || want == static_cast<int32_t>(k)) &&
          main->arg_types[a] == main->result_types[k]) {
        fresh_results[k] = false;
      }
    }
  }
  {
    runtime::TraceSpan span("compile: build program", "compile");
    KILN_ASSIGN_OR_RETURN(exe->main, builder.BuildFunction(main->name, fresh_results));
  }
  // A partitioned program's results are assembled from global values: no buffer to reuse.
  exe->result_donor = exe->spmd.has_value() ? std::vector<int32_t>(exe->result_types.size(), -1)
                                            : PlanDonations(*exe->main, donated_to_per_arg);
  exe->run_inline = IsCheap(*module, Executable::kInlineBytes, kInlineArgumentBytes);
  exe->arg_layouts = std::move(layouts.args);
  exe->result_layouts = std::move(layouts.results);
  exe->module = std::move(module);
  exe->options = std::move(options);
  exe->fingerprint = std::move(fingerprint);
  return std::shared_ptr<const Executable>(std::move(exe));
}

StatusOr<std::shared_ptr<const Executable>> Compile(CompileRequest request) {
  const bool hlo = request.format == "hlo" || request.format == "hlo_with_config";
  if (request.format != "mlir" && !hlo) {
    return InvalidArgument("Unknown program format '" + std::string(request.format) +
                           "'. Kiln compiles StableHLO programs (format \"mlir\": portable "
                           "artifacts in MLIR bytecode, or MLIR text) and serialized "
                           "HloModuleProtos (formats \"hlo\", \"hlo_with_config\").");
  }
  ingest::CompileOptions& options = request.options;
  // XLA's debug options (xla_*) tune XLA's own passes and are accepted and ignored, but for the
  // dump options the C API serves (pjrt/dump.h); any other name is an error, as on XLA.
  for (const ingest::OptionOverride& option : options.option_overrides) {
    if (option.name.rfind("xla_", 0) != 0) {
      return InvalidArgument("No such compile option: '" + option.name + "'");
    }
  }
  StatusOr<ir::Module> read = [&]() -> StatusOr<ir::Module> {
    runtime::TraceSpan span("compile: read program", "compile");
    return hlo ? ingest::ReadHloModule(request.code, request.format != "hlo")
               : ingest::ReadMlirProgram(request.code);
  }();
  if (!read.ok()) return read.status();
  ir::Module module = std::move(read).value();
  std::string fingerprint = Fingerprint(request.code, options);
  auto shared = std::make_shared<const ir::Module>(std::move(module));
  return CompileModule(std::move(shared), std::move(options), std::move(fingerprint));
}

}  // namespace kiln::compiler
