// A generator's config is its kernel-cache key (dispatch/config_key.h):
// every field of every config, flipped alone, gives a different key, so
// no two kernels that differ in a field can share a cache entry. A field
// left out of a config's Fields() list does not compile; one that its
// Canonical() wrongly resets fails here.
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

// Every flip of `base` changes its key, its hash and its kernel name.
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
    EXPECT_NE(KernelConfigName(key), KernelConfigName(base_key));
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

TEST(ConfigKeyTest, EveryW4a16GemvFieldIsInTheKey) {
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
  ExpectEveryFieldInTheKey(c, "W4a16GemvConfig");
}

TEST(ConfigKeyTest, EveryW4a16AmxFieldIsInTheKey) {
  W4a16AmxConfig c;
  c.mr = 32;
  c.nr = 64;
  c.n = 64;
  c.epilogue = SiluMulAdd();
  c.out_n = 32;
  c.group_size = 128;
  ExpectEveryFieldInTheKey(c, "W4a16AmxConfig");
}

TEST(ConfigKeyTest, EveryW4a16AmxDecodeFieldIsInTheKey) {
  W4a16AmxDecodeConfig c;
  c.u4 = true;
  c.nr = 64;
  c.group_pairs = 64;
  c.scaled = true;  // where float_zero and meta_dtype count
  ExpectEveryFieldInTheKey(c, "W4a16AmxDecodeConfig");
}

TEST(ConfigKeyTest, EveryW4a16DequantFieldIsInTheKey) {
  W4a16DequantConfig c;
  c.group_size = 128;
  c.nr = 32;
  c.segment = 128;
  ExpectEveryFieldInTheKey(c, "W4a16DequantConfig");
}

TEST(ConfigKeyTest, EveryW4a16PanelFieldIsInTheKey) {
  W4a16PanelConfig c;
  c.mr = 6;
  c.nr = 16;
  c.stride = 32;
  c.n = 16;
  c.epilogue = SiluMulAdd();
  c.out_n = 8;
  ExpectEveryFieldInTheKey(c, "W4a16PanelConfig");
}

TEST(ConfigKeyTest, EveryDa8w4GemmFieldIsInTheKey) {
  Da8w4GemmConfig c;
  c.layout.n = 4096;
  c.layout.k = 4096;
  c.layout.group_size = 128;
  c.mr = 4;
  c.nblk = 2;
  c.epilogue = SiluMulAdd();
  c.out_n = 2048;
  c.prefetch = 4096;
  ExpectEveryFieldInTheKey(c, "Da8w4GemmConfig");
}

TEST(ConfigKeyTest, EveryActQuantFieldIsInTheKey) {
  ActQuantConfig c;
  c.k = 4096;
  c.group_size = 128;
  c.x_k = 4000;
  ExpectEveryFieldInTheKey(c, "ActQuantConfig");
}

TEST(ConfigKeyTest, EveryDa8w4DecodeFieldIsInTheKey) {
  ExpectEveryFieldInTheKey(Da8w4DecodeConfig{IsaTier::kAvx2},
                           "Da8w4DecodeConfig");
}

// Fields that do not change the code are one key: the tiers above the
// one whose code runs, out_n without silu_mul, a decoded tile's prefetch.
TEST(ConfigKeyTest, FieldsThatDoNotChangeTheCodeShareTheKey) {
  Da8w4GemmConfig a;
  a.isa = IsaTier::kAvx512Vnni;
  a.decoded = true;
  a.prefetch = 0;
  Da8w4GemmConfig b = a;
  b.isa = IsaTier::kAvx512Bf16;
  b.prefetch = 4096;
  b.out_n = 7;
  EXPECT_TRUE(KernelConfig(a) == KernelConfig(b));
  EXPECT_EQ(KernelConfigHash()(a), KernelConfigHash()(b));

  Epilogue relu;
  relu.activation = Activation::kRelu;
  Epilogue relu_other_gate = relu;
  relu_other_gate.gate_alpha = 2.0f;  // read by swigluoai only
  W4a16PanelConfig p;
  p.epilogue = relu;
  W4a16PanelConfig q = p;
  q.epilogue = relu_other_gate;
  EXPECT_TRUE(KernelConfig(p) == KernelConfig(q));
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
