// A generator's config is its kernel-cache key (dispatch/config_key.h):
// every field of every config, flipped alone, gives a different key, so
// no two kernels that differ in a field can share a cache entry. A field
// left out of a config's Fields() list does not compile; one that its
// Canonical() wrongly resets fails here. The same flips give a different
// kernel name (the config's NameParts()), and configs of one key one name.
#include "dispatch/config_key.h"

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "jit/kernel_config.h"

namespace w4jit::internal {
namespace {

// A value other than `v`, of its type.
template <class T>
T Flipped(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return !v;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(v + 1);
  } else if constexpr (std::is_same_v<T, IsaTier>) {
    return v == IsaTier::kAvx2 ? IsaTier::kAvx512Vnni : IsaTier::kAvx2;
  } else if constexpr (std::is_same_v<T, Flavor>) {
    return v == Flavor::kF32Fma ? Flavor::kBf16Dot : Flavor::kF32Fma;
  } else if constexpr (std::is_same_v<T, DType>) {
    return v == DType::kF32 ? DType::kBF16 : DType::kF32;
  } else if constexpr (std::is_same_v<T, WeightType>) {
    return v == WeightType::kS4 ? WeightType::kU4 : WeightType::kS4;
  } else if constexpr (std::is_same_v<T, Epilogue>) {
    Epilogue e = v;
    e.activation = v.activation == Activation::kNone ? Activation::kGeluTanh
                                                     : Activation::kNone;
    return e;
  } else {
    static_assert(sizeof(T) == 0, "teach Flipped this field type");
  }
}

template <class T, class = void>
struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(T::Fields(std::declval<T&>()))>>
    : std::true_type {};

// Copies of `v`, each with one field changed: a leaf value once, a struct
// with a Fields() list (a config, Da8w4Layout) once per field, nested
// structs field by field.
template <class T>
std::vector<std::pair<std::string, T>> OneFieldFlips(const T& v,
                                                     const std::string& name);

template <class T, size_t... I>
void AddFieldFlips(const T& v, const std::string& name,
                   std::index_sequence<I...>,
                   std::vector<std::pair<std::string, T>>* out) {
  (
      [&] {
        const auto& field = std::get<I>(T::Fields(v));
        using F = std::decay_t<decltype(field)>;
        for (auto& [what, changed] :
             OneFieldFlips<F>(field, name + ".field" + std::to_string(I))) {
          T copy = v;
          std::get<I>(T::Fields(copy)) = changed;
          out->emplace_back(what, copy);
        }
      }(),
      ...);
}

template <class T>
std::vector<std::pair<std::string, T>> OneFieldFlips(const T& v,
                                                     const std::string& name) {
  std::vector<std::pair<std::string, T>> out;
  if constexpr (HasFields<T>::value) {
    constexpr size_t n =
        std::tuple_size_v<decltype(T::Fields(std::declval<T&>()))>;
    AddFieldFlips(v, name, std::make_index_sequence<n>(), &out);
  } else {
    out.emplace_back(name, Flipped(v));
  }
  return out;
}

// Every flip of `base` changes its key and its hash.
template <class Config>
void ExpectEveryFieldInTheKey(const Config& base, const std::string& family) {
  const auto flips = OneFieldFlips(base, family);
  EXPECT_GE(flips.size(), static_cast<size_t>(AggregateMemberCount<Config>()));
  const KernelConfig base_key = base;
  for (const auto& [field, flipped] : flips) {
    SCOPED_TRACE(field);
    const KernelConfig key = flipped;
    EXPECT_FALSE(key == base_key) << "the key ignores " << field;
    EXPECT_NE(KernelConfigHash()(key), KernelConfigHash()(base_key));
  }
}

// Every flip of `base` changes its kernel name: two kernels of different
// code never share a name (a dump, a perf map or a log line names one).
template <class Config>
void ExpectEveryFieldInTheName(const Config& base, const std::string& family) {
  const auto flips = OneFieldFlips(base, family);
  EXPECT_GE(flips.size(), static_cast<size_t>(AggregateMemberCount<Config>()));
  for (const auto& [field, flipped] : flips) {
    SCOPED_TRACE(field);
    EXPECT_NE(flipped.name(), base.name()) << "the name ignores " << field;
  }
}

// Each base config makes every field count: silu_mul (out_n), an
// x_k other than K, prefetch without a decoded panel, ...
Epilogue SiluMulAdd() {
  Epilogue e;
  e.silu_mul = true;
  e.activation = Activation::kSwigluOai;
  e.num_binary = 1;
  e.binary[0].op = BinaryOp::kAdd;
  return e;
}

W4a16GemvConfig BaseW4a16Gemv() {
  W4a16GemvConfig c;
  c.isa = IsaTier::kAvx512Bf16;
  c.flavor = Flavor::kBf16Dot;
  c.group_size = 128;
  c.n = 4096;
  c.k = 4096;
  c.mr = 4;
  c.nr = 64;
  c.tile_vectors = 2;
  c.epilogue = SiluMulAdd();
  c.out_n = 2048;
  c.prefetch = 4096;
  return c;
}

W4a16AmxConfig BaseW4a16Amx() {
  W4a16AmxConfig c;
  c.mr = 32;
  c.nr = 64;
  c.n = 64;
  c.epilogue = SiluMulAdd();
  c.out_n = 32;
  c.group_size = 128;
  return c;
}

W4a16AmxDecodeConfig BaseW4a16AmxDecode() {
  W4a16AmxDecodeConfig c;
  c.u4 = true;
  c.nr = 64;
  c.group_pairs = 64;
  c.scaled = true;  // where float_zero and meta_dtype count
  return c;
}

W4a16DequantConfig BaseW4a16Dequant() {
  W4a16DequantConfig c;
  c.group_size = 128;
  c.nr = 32;
  c.segment = 128;
  return c;
}

W4a16PanelConfig BaseW4a16Panel() {
  W4a16PanelConfig c;
  c.mr = 6;
  c.nr = 16;
  c.stride = 32;
  c.n = 16;
  c.epilogue = SiluMulAdd();
  c.out_n = 8;
  return c;
}

Da8w4GemmConfig BaseDa8w4Gemm() {
  Da8w4GemmConfig c;
  c.layout.n = 4096;
  c.layout.k = 4096;
  c.layout.group_size = 128;
  c.mr = 4;
  c.nblk = 2;
  c.epilogue = SiluMulAdd();
  c.out_n = 2048;
  c.prefetch = 4096;
  return c;
}

ActQuantConfig BaseActQuant() {
  ActQuantConfig c;
  c.k = 4096;
  c.group_size = 128;
  c.x_k = 4000;
  return c;
}

Da8w4DecodeConfig BaseDa8w4Decode() { return {IsaTier::kAvx2}; }

TEST(ConfigKeyTest, EveryW4a16GemvFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseW4a16Gemv(), "W4a16GemvConfig");
}

TEST(ConfigKeyTest, EveryW4a16AmxFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseW4a16Amx(), "W4a16AmxConfig");
}

TEST(ConfigKeyTest, EveryW4a16AmxDecodeFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseW4a16AmxDecode(), "W4a16AmxDecodeConfig");
}

TEST(ConfigKeyTest, EveryW4a16DequantFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseW4a16Dequant(), "W4a16DequantConfig");
}

TEST(ConfigKeyTest, EveryW4a16PanelFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseW4a16Panel(), "W4a16PanelConfig");
}

TEST(ConfigKeyTest, EveryDa8w4GemmFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseDa8w4Gemm(), "Da8w4GemmConfig");
}

TEST(ConfigKeyTest, EveryActQuantFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseActQuant(), "ActQuantConfig");
}

TEST(ConfigKeyTest, EveryDa8w4DecodeFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(BaseDa8w4Decode(), "Da8w4DecodeConfig");
}

TEST(KernelNameTest, EveryFieldOfEveryConfigIsInTheName) {
  ExpectEveryFieldInTheName(BaseW4a16Gemv(), "W4a16GemvConfig");
  ExpectEveryFieldInTheName(BaseW4a16Amx(), "W4a16AmxConfig");
  ExpectEveryFieldInTheName(BaseW4a16AmxDecode(), "W4a16AmxDecodeConfig");
  ExpectEveryFieldInTheName(BaseW4a16Dequant(), "W4a16DequantConfig");
  ExpectEveryFieldInTheName(BaseW4a16Panel(), "W4a16PanelConfig");
  ExpectEveryFieldInTheName(BaseDa8w4Gemm(), "Da8w4GemmConfig");
  ExpectEveryFieldInTheName(BaseActQuant(), "ActQuantConfig");
  ExpectEveryFieldInTheName(BaseDa8w4Decode(), "Da8w4DecodeConfig");
}

// Each config field lands in the name part of its own meaning: the
// quantizer's x_k is no N, DA8W4's variants are not one word of bits.
// The names themselves are what they were (the "_n" word of a quantizer
// shows x_k; "_f<hex>" packs a family's variants).
TEST(KernelNameTest, NamePartsHaveOneMeaningEach) {
  const ActQuantConfig q = BaseActQuant();
  const KernelName qp = q.NameParts();
  EXPECT_EQ(qp.x_k, 4000);
  EXPECT_EQ(qp.n, 0);
  EXPECT_EQ(q.name(), "quant_s4_g128_n4000_k4096_m0x0_bf16tobf16__avx2");

  Da8w4GemmConfig d = BaseDa8w4Gemm();
  d.epilogue = Epilogue();
  d.prefetch = 0;
  d.n_tail = true;
  d.decoded = true;
  d.chunk_quads = 4;
  const KernelName dp = d.NameParts();
  EXPECT_TRUE(dp.n_tail);
  EXPECT_TRUE(dp.decoded);
  EXPECT_EQ(dp.chunk_quads, 4);
  EXPECT_EQ(dp.tile_vectors, 0);
  EXPECT_EQ(d.name(), "da8w4_s4_g128_n4096_k4096_m4x32_bf16tof32_f403__avx2");
}

// Fields that do not change the code are one key: the tiers above the
// one whose code runs, out_n without silu_mul, a decoded tile's prefetch.
TEST(ConfigKeyTest, FieldsThatDoNotChangeTheCodeShareTheKey) {
  Da8w4GemmConfig a;
  a.layout = BaseDa8w4Gemm().layout;  // a name needs a shape
  a.isa = IsaTier::kAvx512Vnni;
  a.decoded = true;
  a.prefetch = 0;
  Da8w4GemmConfig b = a;
  b.isa = IsaTier::kAvx512Bf16;
  b.prefetch = 4096;
  b.out_n = 7;
  EXPECT_TRUE(KernelConfig(a) == KernelConfig(b));
  EXPECT_EQ(KernelConfigHash()(a), KernelConfigHash()(b));
  EXPECT_EQ(a.name(), b.name()) << "one key, one name";

  Epilogue relu;
  relu.activation = Activation::kRelu;
  Epilogue relu_other_gate = relu;
  relu_other_gate.gate_alpha = 2.0f;  // read by swigluoai only
  W4a16PanelConfig p;
  p.epilogue = relu;
  W4a16PanelConfig q = p;
  q.epilogue = relu_other_gate;
  EXPECT_TRUE(KernelConfig(p) == KernelConfig(q));
  EXPECT_EQ(p.name(), q.name());
}

// Configs of different families never share a key, even with the same
// field values.
TEST(ConfigKeyTest, FamiliesAreApart) {
  const KernelConfig a = Da8w4DecodeConfig{IsaTier::kAvx2};
  ActQuantConfig q;
  q.isa = IsaTier::kAvx2;
  EXPECT_FALSE(a == KernelConfig(q));
}

}  // namespace
}  // namespace w4jit::internal
