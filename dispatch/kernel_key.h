// The kernel key holds exactly what changes the emitted code; its name() is
// the kernel's name, in the style
// "da8w4_s4_g128_n4096_k4096_m4x32__avx512vnni".
#ifndef W4JIT_DISPATCH_KERNEL_KEY_H_
#define W4JIT_DISPATCH_KERNEL_KEY_H_

#include <cstdint>
#include <string>
#include <tuple>

#include "dispatch/cpu_profile.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

enum class KernelFamily : int {
  kQuantizer = 0,     // DA8W4 per-row activation quantizer
  kDa8w4Gemm = 1,     // DA8W4 MR x NR microkernel (MR = 1 is the GEMV)
  kW4a16Gemm = 2,     // W4A16 microkernel over a packed int4 panel
  kW4a16Dequant = 3,  // W4A16: int4 panel -> f32/bf16 panel (large M)
  kW4a16Panel = 4,    // W4A16: microkernel over a dequantized panel
  kDa8w4Decode = 5,   // DA8W4: packed int4 panel -> decoded bytes (large M)
};

// W4A16 compute flavours.
enum class Flavor : int { kNone = 0, kF32Fma = 1, kBf16Dot = 2 };

// The tier suffix of kernel names ("avx2", "avx512vnni", ...): the least
// tier the kernel's code needs.
const char* IsaSuffix(IsaTier t);

struct KernelKey {
  KernelFamily family = KernelFamily::kDa8w4Gemm;
  IsaTier isa = IsaTier::kRef;
  DType act_dtype = DType::kBF16;
  DType out_dtype = DType::kF32;
  WeightType weight_type = WeightType::kS4;
  Flavor flavor = Flavor::kNone;
  int64_t group_size = 0;  // resolved group length (K for per-channel)
  bool per_channel = false;
  int64_t n = 0;  // N, or the N blocking the code is specialised for
  int64_t k = 0;  // K, or the K blocking
  int mr = 0;     // register tile rows
  int nr = 0;     // register tile columns
  bool bias = false;
  uint32_t flags = 0;  // family-specific bits that change the code
  // The fused epilogue compiled into the stores (EpilogueCode; 0: none),
  // and the output columns when they are not n (silu_mul: the layer's
  // N / 2, where n counts the packed [gate | up] columns).
  uint32_t epilogue = 0;
  int64_t out_n = 0;
  // DA8W4 (quantizer and GEMM): one activation scale per row and group
  // (ActQuant::kPerGroup) instead of one per row. Named "_agroup".
  bool act_per_group = false;
  // Software prefetch of the weight stream, this many bytes ahead (0: none;
  // the code is then what it is without the field).
  int prefetch = 0;
  // W4A16 float zero points (ZeroPointDomain::kFloat): the weights decode
  // as s4 (u - 8) and the kernel adds zf * sum_{k in g} x per group (int4
  // kernel) or zf to the dequantized panel. Name: "s4fz".
  bool float_zero = false;
  // W4A16: the dtype the packed scales (and float zero points) are stored
  // in: f32, or bf16 / f16 when every value is exact in it (half the meta
  // bytes of the weight stream; jit/w4a16_layout.h). Named "_mbf16" /
  // "_mf16"; f32 adds nothing.
  DType meta_dtype = DType::kF32;
  // W4A16 bf16-dot, float_zero: the zero points are u4 ones folded at
  // packing (jit/w4a16_layout.h), held in the meta as 8 - z; the kernel
  // multiplies them by the scale at the group end. Named "_zfold".
  bool folded_zero = false;
  // A swigluoai gate's alpha and limit (Epilogue::gate_alpha, gate_limit)
  // as f32 bits, compiled into its constants; 0 for any other epilogue.
  // Set both with SetKeyEpilogue, read them with KeyEpilogue.
  uint32_t gate_alpha_bits = 0;
  uint32_t gate_limit_bits = 0;
  // W4A16 dequantizer, Numerics::kZentorch: each dequantized weight is
  // rounded to bf16 (nearest even) before it is stored in the panel, as
  // zentorch / AOCL compute it (docs/numerics-zentorch.md). Named "_wrbf16".
  bool round_weights_bf16 = false;

  auto Tie() const {
    return std::tie(family, isa, act_dtype, out_dtype, weight_type, flavor,
                    group_size, per_channel, n, k, mr, nr, bias, flags,
                    epilogue, out_n, act_per_group, prefetch, float_zero,
                    meta_dtype, folded_zero, gate_alpha_bits, gate_limit_bits,
                    round_weights_bf16);
  }
  bool operator==(const KernelKey& o) const { return Tie() == o.Tie(); }
  bool operator!=(const KernelKey& o) const { return !(*this == o); }

  template <typename H>
  friend H AbslHashValue(H h, const KernelKey& key) {
    return H::combine(
        std::move(h), static_cast<int>(key.family), static_cast<int>(key.isa),
        static_cast<int>(key.act_dtype), static_cast<int>(key.out_dtype),
        static_cast<int>(key.weight_type), static_cast<int>(key.flavor),
        key.group_size, key.per_channel, key.n, key.k, key.mr, key.nr, key.bias,
        key.flags, key.epilogue, key.out_n, key.act_per_group, key.prefetch,
        key.float_zero, static_cast<int>(key.meta_dtype), key.folded_zero,
        key.gate_alpha_bits, key.gate_limit_bits, key.round_weights_bf16);
  }

  // Readable, unique for distinct keys.
  std::string name() const;
};

// The compile-time part of an epilogue as key bits, and back: bits 0-2
// activation, 3-4 num_binary, 5 + i op i (1 = add), 7 + i dtype i
// (1 = bf16), 9 silu_mul. 0 is "no epilogue".
uint32_t EpilogueCode(const Epilogue& e);
Epilogue EpilogueFromCode(uint32_t code);
// The whole epilogue of a key: its code and, for a swigluoai gate, the
// gate's constants.
void SetKeyEpilogue(KernelKey* key, const Epilogue& e);
Epilogue KeyEpilogue(const KernelKey& key);
// "_silumul_mulbf16_addf32", "_gelutanh", or "" for none: the part of a
// kernel name that says which epilogue it applies.
std::string EpilogueSuffix(uint32_t code);

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_KERNEL_KEY_H_
