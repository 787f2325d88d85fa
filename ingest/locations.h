// Source locations: turns MLIR location attributes into short strings that name the user's Python
// line, e.g. "/home/me/train.py:42:7 (jit(step)/dot_general)", for error messages.
//
// JAX attaches NameLoc("jit(f)/mul", CallSiteLoc(FileLineColRange(file, line, col), caller...))
// chains whose innermost frames are the user's code. Locations are best effort by design: a
// malformed or unfamiliar location yields "unknown" (index -1) and never fails the read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/bytecode_container.h"

namespace kiln::ingest {

class LocationTable {
 public:
  // Interned strings are appended to `locations` (Module::locations).
  LocationTable(const Container& container, std::vector<std::string>& locations)
      : container_(container), locations_(locations) {}

  // The index in `locations` describing location attribute `attr_index`, or -1 if it says nothing
  // useful (UnknownLoc, malformed, not a location).
  int32_t Intern(uint64_t attr_index);

 private:
  struct Frame {
    std::string_view file;
    uint64_t line = 0;
    uint64_t column = 0;
  };
  struct Collected {
    std::vector<Frame> frames;            // innermost call first
    std::vector<std::string_view> names;  // NameLoc names, outermost first
    int budget = 256;                     // nodes left to visit (shared DAGs can be exponential)
  };

  void Collect(uint64_t attr_index, Collected& out, int depth) const;
  bool StringAttrText(uint64_t attr_index, std::string_view& text) const;

  const Container& container_;
  std::vector<std::string>& locations_;
  std::unordered_map<uint64_t, int32_t> by_attr_;
  std::unordered_map<std::string, int32_t> by_text_;
};

}  // namespace kiln::ingest
