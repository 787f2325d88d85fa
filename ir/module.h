// The program IR: a module of functions whose bodies are regions of blocks of ops over SSA values.
// It mirrors StableHLO's structure (ops carry StableHLO names and attribute names) so that the
// verifier, the compiler and error messages speak the language users see in `jax.jit(f).lower()`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/type.h"

namespace kiln::ir {

// Values are numbered module-wide; Module::value_types holds their types.
using ValueId = int32_t;

struct Region;

struct Op {
  std::string name;  // "stablehlo.add", "func.call", "func.return", "sdy.mesh", ...
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<Region> regions;
  std::vector<NamedAttr> attrs;        // inherent attributes, by StableHLO name
  std::vector<NamedAttr> discardable;  // the op's discardable attribute dictionary
  int32_t loc = -1;                    // index into Module::locations, -1 if unknown
  // True for ops of dialects Kiln does not model (sdy, ...): kept so passes can name them.
  bool foreign = false;

  // The inherent attribute `attr_name`, else the discardable one; nullptr if neither exists.
  const Attr* attr(std::string_view attr_name) const;
};

struct Block {
  std::vector<ValueId> args;
  std::vector<Op> ops;
};

// How deeply regions may nest (for the compiler: regions and function calls together). Real
// programs stay far below it: 63 nested lax.cond are 64 levels. The bound keeps the reader's,
// compiler's and runner's recursion inside the stacks of the threads that run them (kiln::Thread,
// kLargeStackBytes); programs past it are refused with RESOURCE_EXHAUSTED naming the op and line.
inline constexpr int kMaxNestingDepth = 2048;

struct Region {
  std::vector<Block> blocks;
};

struct Function {
  std::string name;
  std::string visibility;  // "public" or "private"
  std::vector<Type> arg_types;
  std::vector<Type> result_types;
  std::vector<Attr> arg_attrs;     // one dictionary (or None) per argument
  std::vector<Attr> result_attrs;  // one dictionary (or None) per result
  Region body;                     // one block whose args are the function arguments
  int32_t loc = -1;
};

struct Module {
  std::string name;
  std::string producer;  // e.g. "StableHLO_v1.16.3"
  int version_major = 0, version_minor = 0, version_patch = 0;
  std::vector<NamedAttr> attrs;  // module attributes (mhlo.num_partitions, ...)
  std::vector<Function> functions;
  std::vector<Op> other_ops;  // top-level ops that are not functions (e.g. sdy.mesh)
  std::vector<Type> value_types;
  // Human-readable source locations, e.g. "train.py:42:7 (jit(step)/dot_general)".
  std::vector<std::string> locations;

  ValueId AddValue(Type type) {
    value_types.push_back(std::move(type));
    return static_cast<ValueId>(value_types.size() - 1);
  }
  const Type& type_of(ValueId v) const { return value_types[static_cast<size_t>(v)]; }
  bool valid_value(ValueId v) const {
    return v >= 0 && static_cast<size_t>(v) < value_types.size();
  }
  const Function* FindFunction(std::string_view fn_name) const;
  const Function* MainFunction() const;  // "main", else the only public function
  const Attr* attr(std::string_view attr_name) const;
  std::string_view location(int32_t loc) const;
};

// Textual dump in a StableHLO-like syntax, for debugging and golden tests.
std::string PrintModule(const Module& module);

}  // namespace kiln::ir
