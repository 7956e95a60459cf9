#include "dispatch/kernel_key.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

const char* FamilyName(KernelFamily f) {
  switch (f) {
    case KernelFamily::kQuantizer:
      return "quant";
    case KernelFamily::kDa8w4Gemm:
      return "da8w4";
    case KernelFamily::kW4a16Gemm:
      return "w4a16";
    case KernelFamily::kW4a16Dequant:
      return "w4a16dq";
    case KernelFamily::kW4a16Panel:
      return "w4a16panel";
    case KernelFamily::kDa8w4Decode:
      return "da8w4dec";
    case KernelFamily::kW4a16Amx:
      return "w4a16amx";
    case KernelFamily::kW4a16AmxDecode:
      return "w4a16amxdec";
  }
  return "unknown";
}

const char* ActivationShort(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "";
    case Activation::kRelu:
      return "_relu";
    case Activation::kSigmoid:
      return "_sigmoid";
    case Activation::kGeluTanh:
      return "_gelutanh";
    case Activation::kGeluErf:
      return "_geluerf";
    case Activation::kSilu:
      return "_silu";
    case Activation::kSwigluOai:
      return "_swigluoai";
  }
  return "_act";
}

}  // namespace

const char* IsaSuffix(IsaTier t) { return TraitsOf(t).suffix; }

uint32_t EpilogueCode(const Epilogue& e) {
  uint32_t code = static_cast<uint32_t>(e.activation) & 7u;
  code |= (static_cast<uint32_t>(e.num_binary) & 3u) << 3;
  for (int i = 0; i < e.num_binary && i < 2; ++i) {
    if (e.binary[i].op == BinaryOp::kAdd) code |= 1u << (5 + i);
    if (e.binary[i].dtype == DType::kBF16) code |= 1u << (7 + i);
  }
  if (e.silu_mul) code |= 1u << 9;
  return code;
}

Epilogue EpilogueFromCode(uint32_t code) {
  Epilogue e;
  e.activation = static_cast<Activation>(code & 7u);
  e.num_binary = static_cast<int>((code >> 3) & 3u);
  for (int i = 0; i < 2; ++i) {
    e.binary[i].op = (code >> (5 + i)) & 1u ? BinaryOp::kAdd : BinaryOp::kMul;
    e.binary[i].dtype = (code >> (7 + i)) & 1u ? DType::kBF16 : DType::kF32;
  }
  e.silu_mul = ((code >> 9) & 1u) != 0;
  return e;
}

std::tuple<uint32_t, uint32_t, uint32_t> KeyPart(const Epilogue& e) {
  uint32_t alpha = 0;
  uint32_t limit = 0;
  if (e.silu_mul && e.activation == Activation::kSwigluOai) {
    std::memcpy(&alpha, &e.gate_alpha, sizeof(float));
    std::memcpy(&limit, &e.gate_limit, sizeof(float));
  }
  return {EpilogueCode(e), alpha, limit};
}

void SetNameEpilogue(KernelName* name, const Epilogue& e) {
  std::tie(name->epilogue, name->gate_alpha_bits, name->gate_limit_bits) =
      KeyPart(e);
}

std::string EpilogueSuffix(uint32_t code) {
  if (code == 0) return "";
  const Epilogue e = EpilogueFromCode(code);
  std::string s = !e.silu_mul ? ActivationShort(e.activation)
                  : e.gate_activation() == Activation::kSilu ? "_silumul"
                  : e.activation == Activation::kSwigluOai
                      ? ActivationShort(e.activation)
                      : absl::StrCat(ActivationShort(e.activation), "mul");
  for (int i = 0; i < e.num_binary; ++i) {
    absl::StrAppend(&s, "_", e.binary[i].op == BinaryOp::kMul ? "mul" : "add",
                    ToString(e.binary[i].dtype));
  }
  return s;
}

uint32_t KernelName::VariantWord() const {
  switch (family) {
    case KernelFamily::kW4a16Gemm:
      return static_cast<uint32_t>(tile_vectors);
    case KernelFamily::kDa8w4Gemm:
      return (n_tail ? 1u : 0u) | (decoded ? 2u : 0u) |
             (chunk_quads != 8 ? static_cast<uint32_t>(chunk_quads) << 8 : 0u);
    case KernelFamily::kQuantizer:
      return permuted ? 1u : 0u;
    case KernelFamily::kDa8w4Decode:
      return minus8 ? 1u : 0u;
    case KernelFamily::kW4a16Dequant:
    case KernelFamily::kW4a16Panel:
    case KernelFamily::kW4a16Amx:
    case KernelFamily::kW4a16AmxDecode:
      return 0;
  }
  return 0;
}

std::string KernelName::str() const {
  const uint32_t variant = VariantWord();
  const std::string variant_word =
      variant != 0 ? absl::StrFormat("_f%x", variant) : std::string();
  // Shape-free kernels are named by family and ISA alone.
  if (family == KernelFamily::kDa8w4Decode) {
    return absl::StrCat(FamilyName(family), variant_word, "__", IsaSuffix(isa));
  }
  std::string s = absl::StrCat(FamilyName(family), "_",
                               weight_type == WeightType::kS4 ? "s4" : "u4");
  if (float_zero) absl::StrAppend(&s, "fz");
  if (per_channel) {
    absl::StrAppend(&s, "_pc");
  } else {
    absl::StrAppend(&s, "_g", group_size);
  }
  absl::StrAppend(&s, "_n", family == KernelFamily::kQuantizer ? x_k : n, "_k",
                  k, "_m", mr, "x", nr);
  if (row_blocks != 1) absl::StrAppend(&s, "_rb", row_blocks);
  absl::StrAppend(&s, "_", ToString(act_dtype), "to", ToString(out_dtype));
  if (flavor == Flavor::kF32Fma) absl::StrAppend(&s, "_fma");
  if (flavor == Flavor::kBf16Dot) absl::StrAppend(&s, "_bf16dot");
  if (bias) absl::StrAppend(&s, "_bias");
  if (act_per_group) absl::StrAppend(&s, "_agroup");
  absl::StrAppend(&s, variant_word);
  if (out_n != 0) absl::StrAppend(&s, "_o", out_n);
  absl::StrAppend(&s, EpilogueSuffix(epilogue));
  if (gate_alpha_bits != 0 || gate_limit_bits != 0) {
    const Epilogue defaults;
    float alpha = 0.0f;
    float limit = 0.0f;
    std::memcpy(&alpha, &gate_alpha_bits, sizeof(float));
    std::memcpy(&limit, &gate_limit_bits, sizeof(float));
    if (alpha != defaults.gate_alpha || limit != defaults.gate_limit) {
      absl::StrAppend(&s, absl::StrFormat("_a%a_l%a", alpha, limit));
    }
  }
  if (meta_dtype != DType::kF32) {
    absl::StrAppend(&s, "_m", ToString(meta_dtype));
  }
  if (folded_zero) absl::StrAppend(&s, "_zfold");
  if (round_weights_bf16) absl::StrAppend(&s, "_wrbf16");
  if (prefetch != 0) absl::StrAppend(&s, "_pf", prefetch);
  absl::StrAppend(&s, "__", IsaSuffix(isa));
  return s;
}

}  // namespace w4jit::internal
