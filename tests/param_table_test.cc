// The parameter tables (dispatch/param_table.h): every name sets its own
// field, ranges are refused with the name, the test override applies in
// both families, and docs/tuning.md lists each parameter with its range.
#include "dispatch/param_table.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/w4a16/w4a16_params.h"

namespace w4jit::internal {
namespace {

// Each field, set alone to its minimum and to its maximum, reads back as
// set, and no other name moves it: a row wired to the wrong member fails.
template <class P>
void ExpectEachNameSetsItsField(absl::Span<const ParamField<P>> table) {
  static const P base{};  // static: every byte initialized
  for (const ParamField<P>& f : table) {
    SCOPED_TRACE(f.name);
    for (int64_t v : {f.min, f.max}) {
      absl::StatusOr<P> p = ApplyParamTable(table, "test", {{f.name, v}}, base);
      ASSERT_TRUE(p.ok()) << p.status();
      EXPECT_EQ(ParamValue(f, *p), v);
      for (const ParamField<P>& other : table) {
        if (&other != &f && other.field != f.field) {
          EXPECT_EQ(ParamValue(other, *p), ParamValue(other, base))
              << other.name;
        }
      }
    }
    if (!f.saturate) {
      absl::StatusOr<P> above =
          ApplyParamTable(table, "test", {{f.name, f.max + 1}}, base);
      ASSERT_FALSE(above.ok());
      EXPECT_NE(above.status().message().find(f.name), std::string::npos);
    }
    EXPECT_FALSE(
        ApplyParamTable(table, "test", {{f.name, f.min - 1}}, base).ok());
  }
  EXPECT_FALSE(ApplyParamTable(table, "test", {{"bogus", 1}}, base).ok());
}

TEST(ParamTableTest, W4a16NamesSetTheirFields) {
  ExpectEachNameSetsItsField(W4a16ParamTable());
}

TEST(ParamTableTest, Da8w4NamesSetTheirFields) {
  ExpectEachNameSetsItsField(Da8w4ParamTable());
}

TEST(ParamTableTest, NeverThresholdSaturates) {
  absl::StatusOr<Da8w4Params> p =
      ApplyParamTable(Da8w4ParamTable(), "DA8W4",
                      {{"panel_min_m", int64_t{1} << 35}}, Da8w4Params{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->panels());
}

TEST(ParamTableTest, OverrideEditsResolvedParametersOfBothFamilies) {
  LayerDesc desc;
  desc.n = 64;
  desc.k = 256;
  desc.group_size = 128;
  const IsaTier isa = ActiveIsa();
  {
    ScopedW4a16ParamsOverride o([](W4a16Params* p) { p->gemv_mr = 3; });
    desc.mode = Mode::kW4A16;
    EXPECT_EQ(ResolveW4a16Params(HostCpu(), isa, desc).gemv_mr, 3);
  }
  {
    ScopedDa8w4ParamsOverride o([](Da8w4Params* p) { p->handover_m = 5; });
    desc.mode = Mode::kDA8W4;
    EXPECT_EQ(ResolveDa8w4Params(HostCpu(), isa, desc).handover_m, 5);
  }
  EXPECT_EQ(ResolveDa8w4Params(HostCpu(), isa, desc).handover_m,
            DefaultDa8w4Params(HostCpu(), isa).handover_m);
}

// A silu_mul layer's resolved parameters have even tile widths (a gate
// vector and its up vector share each tile), whatever the override asks;
// other layers keep what it asks.
TEST(ParamTableTest, SiluMulResolvesToEvenTileWidths) {
  LayerDesc desc;
  desc.mode = Mode::kW4A16;
  desc.n = 64;
  desc.k = 256;
  desc.group_size = 128;
  const IsaTier isa = ActiveIsa();
  ScopedW4a16ParamsOverride o([](W4a16Params* p) {
    p->block_vectors = 3;
    p->gemm_nr_vectors = 3;
    p->tall_vectors = 1;
  });
  const W4a16Params plain = ResolveW4a16Params(HostCpu(), isa, desc);
  EXPECT_EQ(plain.block_vectors, 3);
  EXPECT_EQ(plain.tall_vectors, 1);
  desc.epilogue.silu_mul = true;
  const W4a16Params p = ResolveW4a16Params(HostCpu(), isa, desc);
  EXPECT_EQ(p.block_vectors, 2);
  EXPECT_EQ(p.gemm_nr_vectors, 2);
  EXPECT_EQ(p.tall_vectors, 2);
  EXPECT_LE(p.tall_mr, plain.tall_mr);
}

// docs/tuning.md has a row "| `name` | [min, max] |" per table row.
template <class P>
void ExpectDocumented(absl::Span<const ParamField<P>> table,
                      const std::string& doc) {
  for (const ParamField<P>& f : table) {
    const std::string row =
        absl::StrCat("| `", f.name, "` | [", f.min, ", ", f.max, "] |");
    EXPECT_NE(doc.find(row), std::string::npos)
        << "docs/tuning.md lacks the row " << row;
  }
}

TEST(ParamTableTest, TuningDocListsEveryParameterWithItsRange) {
  std::ifstream in(std::string(W4JIT_SOURCE_DIR) + "/docs/tuning.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t w4a16 = doc.find("### W4A16 parameters");
  const size_t da8w4 = doc.find("### DA8W4 parameters");
  ASSERT_NE(w4a16, std::string::npos);
  ASSERT_NE(da8w4, std::string::npos);
  ASSERT_LT(w4a16, da8w4);
  ExpectDocumented(W4a16ParamTable(), doc.substr(w4a16, da8w4 - w4a16));
  ExpectDocumented(Da8w4ParamTable(), doc.substr(da8w4));
}

}  // namespace
}  // namespace w4jit::internal
