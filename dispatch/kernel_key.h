// Kernel names, in the style "da8w4_s4_g128_n4096_k4096_m4x32__avx512vnni"
// (KernelName), and the epilogue's part of a kernel's code and name. The
// kernel cache is keyed by the generators' configs themselves
// (dispatch/config_key.h, jit/kernel_config.h); a name only names.
#ifndef W4JIT_DISPATCH_KERNEL_KEY_H_
#define W4JIT_DISPATCH_KERNEL_KEY_H_

#include <cstdint>
#include <string>
#include <tuple>

#include "dispatch/cpu_profile.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

enum class KernelFamily : int {
  kQuantizer = 0,       // DA8W4 per-row activation quantizer
  kDa8w4Gemm = 1,       // DA8W4 MR x NR microkernel (MR = 1 is the GEMV)
  kW4a16Gemm = 2,       // W4A16 microkernel over a packed int4 panel
  kW4a16Dequant = 3,    // W4A16: int4 panel -> f32/bf16 panel (large M)
  kW4a16Panel = 4,      // W4A16: microkernel over a dequantized panel
  kDa8w4Decode = 5,     // DA8W4: packed int4 panel -> decoded bytes (large M)
  kW4a16Amx = 6,        // W4A16: AMX tiles over a decoded bf16 panel
  kW4a16AmxDecode = 7,  // W4A16: packed int4 panel -> bf16 integers (AMX)
};

// W4A16 compute flavours.
enum class Flavor : int { kNone = 0, kF32Fma = 1, kBf16Dot = 2 };

// The tier suffix of kernel names ("avx2", "avx512vnni", ...): the least
// tier the kernel's code needs.
const char* IsaSuffix(IsaTier t);

// The parts of a kernel name, one meaning per field. Each config fills the
// ones it has (its NameParts(), beside its Fields(): W4a16GemvConfig, ...)
// and leaves the others at their defaults; str() writes them in one
// grammar, so a config's name() is NameParts().str().
struct KernelName {
  KernelFamily family = KernelFamily::kDa8w4Gemm;
  IsaTier isa = IsaTier::kRef;
  DType act_dtype = DType::kBF16;
  DType out_dtype = DType::kF32;
  WeightType weight_type = WeightType::kS4;
  Flavor flavor = Flavor::kNone;
  int64_t group_size = 0;  // resolved group length (K for per-channel)
  bool per_channel = false;
  int64_t n = 0;       // N, or the N blocking the code is specialised for
  int64_t k = 0;       // K, or the K blocking
  int mr = 0;          // register tile rows
  int nr = 0;          // register tile columns
  int row_blocks = 1;  // W4A16 AMX: blocks of mr rows per call ("_rb2")
  bool bias = false;
  // The code variants that have no word of their own: str() writes the
  // family's as one "_f<hex>" word (VariantWord).
  int tile_vectors = 0;   // W4A16 int4: vectors per register tile (0: all)
  bool n_tail = false;    // DA8W4: the last block's stores stop at N
  bool decoded = false;   // DA8W4: reads a decoded panel
  int chunk_quads = 8;    // DA8W4: quads per chunk (8, the default: no bits)
  bool permuted = false;  // quantizer: act-order (x through k_perm)
  bool minus8 = false;    // DA8W4 decoder: s4 panels as q = u - 8
  // Quantizer: the x columns of pass 1 when they are not K (0). The
  // quantizer has no N: its names write x_k in the "_n" word.
  int64_t x_k = 0;
  // The fused epilogue (EpilogueCode; 0: none) and the output columns
  // when they are not n ("_o").
  uint32_t epilogue = 0;
  int64_t out_n = 0;
  bool act_per_group = false;      // "_agroup"
  int prefetch = 0;                // "_pf<bytes>"
  bool float_zero = false;         // "s4fz"
  DType meta_dtype = DType::kF32;  // "_mbf16" / "_mf16"
  bool folded_zero = false;        // "_zfold"
  // A swigluoai gate's alpha and limit as f32 bits (SetNameEpilogue).
  uint32_t gate_alpha_bits = 0;
  uint32_t gate_limit_bits = 0;
  bool round_weights_bf16 = false;  // "_wrbf16"

  std::string str() const;
  // The "_f<hex>" word of the family's variant fields (0: none): W4A16
  // int4 tile_vectors; DA8W4 n_tail | decoded << 1 | chunk_quads << 8
  // (when not 8); the quantizer's permuted; the decoder's minus8.
  uint32_t VariantWord() const;
};

// The compile-time part of an epilogue as key bits, and back: bits 0-2
// activation, 3-4 num_binary, 5 + i op i (1 = add), 7 + i dtype i
// (1 = bf16), 9 silu_mul. 0 is "no epilogue".
uint32_t EpilogueCode(const Epilogue& e);
Epilogue EpilogueFromCode(uint32_t code);
// The epilogue's part of a kernel: its code and, for a swigluoai gate, the
// gate's constants as f32 bits (0 otherwise). What a config's key holds of
// its epilogue (KeyPart in dispatch/config_key.h) and its name shows.
std::tuple<uint32_t, uint32_t, uint32_t> KeyPart(const Epilogue& e);
void SetNameEpilogue(KernelName* name, const Epilogue& e);
// "_silumul_mulbf16_addf32", "_gelutanh", or "" for none: the part of a
// kernel name that says which epilogue it applies.
std::string EpilogueSuffix(uint32_t code);

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_KERNEL_KEY_H_
