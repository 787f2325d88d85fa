// Helpers shared by the artifact-reader tests on real inputs (ingest_jax_test.cc,
// ingest_artifacts_test.cc): fixture directories, file reading and op lookup.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "ingest/artifact_reader.h"
#include "ir/module.h"

#ifndef KILN_SHARED_FIXTURES_DIR
#define KILN_SHARED_FIXTURES_DIR ""
#endif
#ifndef KILN_TEST_FIXTURES_DIR
#define KILN_TEST_FIXTURES_DIR ""
#endif

namespace kiln::ingest {

namespace fs = std::filesystem;

inline std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Files in `dir` whose names end with `suffix`, sorted; empty if the directory does not exist.
inline std::vector<fs::path> FilesEndingWith(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return out;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= suffix.size() && name.ends_with(suffix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline fs::path JaxArtifactsDir() {
  return fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts";
}
inline fs::path StablehloDir() { return fs::path(KILN_SHARED_FIXTURES_DIR) / "stablehlo-vhlo"; }

#define SKIP_IF_MISSING(dir)                                               \
  do {                                                                     \
    std::error_code skip_error_;                                           \
    if (std::string(dir).empty() || !fs::is_directory(dir, skip_error_)) { \
      GTEST_SKIP() << "fixture directory not available: " << (dir);        \
    }                                                                      \
  } while (0)

inline StatusOr<ir::Module> ReadArtifactFile(const fs::path& path) {
  std::vector<uint8_t> bytes = ReadFile(path);
  return ReadPortableArtifact(bytes);
}

// Every op of every region of `module`, depth first.
inline void ForEachOp(const ir::Module& module, const std::function<void(const ir::Op&)>& fn) {
  std::function<void(const ir::Region&)> walk_region = [&](const ir::Region& region) {
    for (const ir::Block& block : region.blocks) {
      for (const ir::Op& op : block.ops) {
        fn(op);
        for (const ir::Region& nested : op.regions) walk_region(nested);
      }
    }
  };
  for (const ir::Op& op : module.other_ops) {
    fn(op);
    for (const ir::Region& nested : op.regions) walk_region(nested);
  }
  for (const ir::Function& f : module.functions) walk_region(f.body);
}

inline std::vector<const ir::Op*> OpsNamed(const ir::Module& module, std::string_view name) {
  std::vector<const ir::Op*> out;
  ForEachOp(module, [&](const ir::Op& op) {
    if (op.name == name) out.push_back(&op);
  });
  return out;
}

inline ir::Module ReadJaxArtifact(const std::string& stem) {
  StatusOr<ir::Module> module = ReadArtifactFile(JaxArtifactsDir() / (stem + ".mlir.bc"));
  EXPECT_TRUE(module.ok()) << stem << ": " << module.status().ToString();
  return module.ok() ? std::move(module).value() : ir::Module();
}

}  // namespace kiln::ingest
