// ReadHloModule on hand-encoded HloModuleProtos: a valid module reads and compiles; malformed or
// unsupported ones are errors naming the instruction, field or opcode, never crashes. (Real
// modules from JAX are covered by tests/python/test_hlo_input.py.)
#include "ingest/hlo_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/compile.h"

namespace kiln::ingest {
namespace {

struct Proto {
  std::vector<uint8_t> bytes;

  Proto& Varint(uint64_t v) {
    do {
      uint8_t byte = v & 0x7F;
      v >>= 7;
      bytes.push_back(v ? byte | 0x80 : byte);
    } while (v);
    return *this;
  }
  Proto& Key(uint32_t field, uint32_t wire_type) {
    return Varint((uint64_t{field} << 3) | wire_type);
  }
  Proto& Int(uint32_t field, int64_t v) { return Key(field, 0).Varint(static_cast<uint64_t>(v)); }
  Proto& Str(uint32_t field, const std::string& s) {
    Key(field, 2).Varint(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  Proto& Message(uint32_t field, const Proto& m) {
    Key(field, 2).Varint(m.bytes.size());
    bytes.insert(bytes.end(), m.bytes.begin(), m.bytes.end());
    return *this;
  }
};

constexpr int kF32 = 11;

Proto Shape(int type, std::vector<int64_t> dims, std::vector<int64_t> minor_to_major = {}) {
  Proto s;
  s.Int(2, type);
  for (int64_t d : dims) s.Int(3, d);
  if (!minor_to_major.empty()) {
    Proto layout;
    for (int64_t d : minor_to_major) layout.Int(1, d);
    s.Message(5, layout);
  }
  return s;
}

Proto Instr(const std::string& name, const std::string& opcode, int64_t id, const Proto& shape,
            std::vector<int64_t> operands = {}) {
  Proto p;
  p.Str(1, name).Str(2, opcode).Message(3, shape).Int(35, id);
  for (int64_t o : operands) p.Int(36, o);
  return p;
}

Proto Module(const std::vector<Proto>& computations, int64_t entry_id) {
  Proto m;
  m.Str(1, "test_module").Int(6, entry_id);
  for (const Proto& c : computations) m.Message(3, c);
  return m;
}

Proto Computation(const std::string& name, int64_t id, const std::vector<Proto>& instructions,
                  int64_t root) {
  Proto c;
  c.Str(1, name);
  for (const Proto& i : instructions) c.Message(2, i);
  c.Int(5, id).Int(6, root);
  return c;
}

// main(x: f32[2]) = x + x * 2
Proto ValidModule(const Proto& param_shape = Shape(kF32, {2})) {
  Proto literal;
  literal.Message(1, Shape(kF32, {}));
  literal.Key(8, 5).bytes.insert(literal.bytes.end(), {0, 0, 0, 0x40});  // 2.0f
  Proto constant = Instr("two", "constant", 2, Shape(kF32, {}));
  constant.Message(8, literal);
  Proto broadcast = Instr("two_b", "broadcast", 3, Shape(kF32, {2}), {2});
  return Module({Computation("main", 7,
                             {Instr("x", "parameter", 1, param_shape), constant, broadcast,
                              Instr("mul", "multiply", 4, Shape(kF32, {2}), {1, 3}),
                              Instr("add", "add", 5, Shape(kF32, {2}), {1, 4})},
                             5)},
                7);
}

Status Read(const Proto& p) { return ReadHloModule(p.bytes).status(); }

TEST(HloReader, ValidModuleReadsAndCompiles) {
  StatusOr<ir::Module> module = ReadHloModule(ValidModule().bytes);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const ir::Function* main = module->MainFunction();
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->arg_types.size(), 1u);
  EXPECT_EQ(main->result_types.size(), 1u);
  auto shared = std::make_shared<const ir::Module>(std::move(module).value());
  auto exe = compiler::CompileModule(shared, {});
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
}

TEST(HloReader, EveryTruncationIsAnErrorNotACrash) {
  const Proto valid = ValidModule();
  for (size_t cut = 0; cut < valid.bytes.size(); ++cut) {
    Proto truncated;
    truncated.bytes.assign(valid.bytes.begin(), valid.bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(Read(truncated).ok()) << "prefix of " << cut << " bytes";
  }
}

TEST(HloReader, EveryByteFlipIsHandled) {
  const Proto valid = ValidModule();
  for (size_t i = 0; i < valid.bytes.size(); ++i) {
    for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      Proto mutated = valid;
      mutated.bytes[i] ^= x;
      (void)Read(mutated);  // any outcome but a crash
    }
  }
}

TEST(HloReader, UnknownOpcodeNamesOpcodeAndInstruction) {
  Proto m = Module({Computation("main", 1,
                                {Instr("x", "parameter", 1, Shape(kF32, {2})),
                                 Instr("mystery.7", "frobnicate", 2, Shape(kF32, {2}), {1})},
                                2)},
                   1);
  Status s = Read(m);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mystery.7"), std::string::npos) << s.message();
}

TEST(HloReader, UndefinedOperandIsNamed) {
  Proto m = Module({Computation("main", 1,
                                {Instr("x", "parameter", 1, Shape(kF32, {2})),
                                 Instr("neg", "negate", 2, Shape(kF32, {2}), {99})},
                                2)},
                   1);
  Status s = Read(m);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("'neg'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("99"), std::string::npos) << s.message();
}

TEST(HloReader, EntryLayouts) {
  // A dimension order only changes the device layout a caller is told about: accepted.
  EXPECT_TRUE(ReadHloModule(ValidModule(Shape(kF32, {2}, {0})).bytes).ok());
  // Not a permutation of the dimensions: refused by name.
  Status s = Read(ValidModule(Shape(kF32, {2}, {0, 1})));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("layout {0,1}"), std::string::npos) << s.message();
  // Tiled: refused.
  Proto tiled = Shape(kF32, {2});
  Proto layout;
  layout.Int(1, 0).Int(7, 4);  // element_size_in_bits = 4
  tiled.Message(5, layout);
  s = Read(ValidModule(tiled));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("element size"), std::string::npos) << s.message();
}

TEST(HloReader, WrongLiteralSizeIsAnError) {
  Proto literal;
  literal.Message(1, Shape(kF32, {3}));
  literal.Key(8, 5).bytes.insert(literal.bytes.end(), {0, 0, 0, 0x40});  // one float for three
  Proto constant = Instr("c", "constant", 1, Shape(kF32, {3}));
  constant.Message(8, literal);
  Status s = Read(Module({Computation("main", 1, {constant}, 1)}, 1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s.message();
}

TEST(HloReader, RecursiveCallIsAnError) {
  Proto call = Instr("self", "call", 2, Shape(kF32, {2}), {1});
  call.Int(38, 1);
  Proto m =
      Module({Computation("main", 1, {Instr("x", "parameter", 1, Shape(kF32, {2})), call}, 2)}, 1);
  Status s = Read(m);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.message();
}

TEST(HloReader, TupleIndexOutOfRangeIsAnError) {
  Proto tuple_shape;
  tuple_shape.Int(2, 13).Message(4, Shape(kF32, {2}));
  Proto gte = Instr("gte", "get-tuple-element", 3, Shape(kF32, {2}), {2});
  gte.Int(13, 5);
  Proto m = Module({Computation("main", 1,
                                {Instr("x", "parameter", 1, Shape(kF32, {2})),
                                 Instr("t", "tuple", 2, tuple_shape, {1}), gte},
                                3)},
                   1);
  Status s = Read(m);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tuple index 5"), std::string::npos) << s.message();
}

TEST(HloReader, MissingEntryIsAnError) {
  Status s = Read(Module({}, 3));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no computations"), std::string::npos) << s.message();
}

// The hlo_reader fuzzer's seeds (real modules from JAX), each read and compiled, then cut and
// mutated: every outcome is a module or an error. A cheap, deterministic stand-in for the fuzzer.
TEST(HloReader, MutatedJaxModulesAreHandled) {
  const std::filesystem::path seeds = std::filesystem::path(KILN_TEST_FIXTURES_DIR).parent_path() /
                                      "fuzz" / "corpus" / "hlo_reader";
  ASSERT_TRUE(std::filesystem::is_directory(seeds)) << seeds;
  std::mt19937 rng(1234);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(seeds)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    ++files;
    StatusOr<ir::Module> module = ReadHloModule(bytes);
    ASSERT_TRUE(module.ok()) << entry.path() << ": " << module.status().ToString();
    auto compiled =
        compiler::CompileModule(std::make_shared<const ir::Module>(std::move(module).value()), {});
    EXPECT_TRUE(compiled.ok()) << entry.path() << ": " << compiled.status().ToString();
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> mutated = bytes;
      if (trial % 3 == 0) {
        mutated.resize(rng() % mutated.size());
      } else {
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
          mutated[rng() % mutated.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        }
      }
      StatusOr<ir::Module> m = ReadHloModule(mutated);
      if (!m.ok()) continue;
      (void)compiler::CompileModule(std::make_shared<const ir::Module>(std::move(m).value()), {});
    }
  }
  EXPECT_GE(files, 5);
}

}  // namespace
}  // namespace kiln::ingest

namespace kiln::ingest {
namespace {

// OpSharding: type OTHER with tile dims, then either an iota (reshape dims) or explicit devices.
Proto TiledSharding(std::vector<int64_t> dims, std::vector<int64_t> devices,
                    std::vector<int64_t> iota_reshape = {}, bool replicate_last = false) {
  Proto s;
  s.Int(1, 3);
  for (int64_t d : dims) s.Int(3, d);
  for (int64_t d : devices) s.Int(4, d);
  if (replicate_last) s.Int(6, 1);
  for (int64_t d : iota_reshape) s.Int(9, d);
  return s;
}

// The entry's parameter and root shardings reach @main as `mhlo.sharding` text, and the program
// partitions over two devices; interior shardings do not change values.
TEST(HloReader, EntryShardingsBecomeMhloSharding) {
  Proto x = Instr("x", "parameter", 1, Shape(kF32, {4, 2}));
  x.Message(40, TiledSharding({2, 1}, {}, {2}));
  Proto y = Instr("y", "parameter", 2, Shape(kF32, {4, 2}));
  y.Int(9, 1);  // parameter_number
  y.Message(40, TiledSharding({1, 1, 2}, {}, {2}, true));
  Proto mul = Instr("mul", "multiply", 3, Shape(kF32, {4, 2}), {1, 2});
  mul.Message(40, TiledSharding({2, 1}, {1, 0}));
  Proto add = Instr("add", "add", 4, Shape(kF32, {4, 2}), {3, 1});
  add.Message(40, TiledSharding({1, 2}, {1, 0}));
  Proto m = Module({Computation("main", 9, {x, y, mul, add}, 4)}, 9);
  StatusOr<ir::Module> module = ReadHloModule(m.bytes);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const ir::Function* main = module->MainFunction();
  ASSERT_NE(main, nullptr);
  auto text = [](const ir::Attr& attrs) {
    const ir::Attr* s = attrs.kind == ir::Attr::Kind::kDict ? attrs.Find("mhlo.sharding") : nullptr;
    return s != nullptr ? s->str : std::string("(none)");
  };
  ASSERT_EQ(main->arg_attrs.size(), 2u);
  EXPECT_EQ(text(main->arg_attrs[0]), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(text(main->arg_attrs[1]), "{devices=[1,1,2]<=[2] last_tile_dim_replicate}");
  ASSERT_EQ(main->result_attrs.size(), 1u);
  EXPECT_EQ(text(main->result_attrs[0]), "{devices=[1,2]1,0}");
  CompileOptions options;
  options.num_partitions = 2;
  auto shared = std::make_shared<const ir::Module>(std::move(module).value());
  auto exe = compiler::CompileModule(shared, options);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
}

}  // namespace
}  // namespace kiln::ingest
