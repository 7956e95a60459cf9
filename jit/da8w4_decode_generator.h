// The DA8W4 panel decoder, JIT-emitted per ISA: turns packed weight quads
// (jit/da8w4_layout.h: one vector per quad, column c's nibble pair in byte
// c) into the decoded bytes the large-M kernels read
// (Da8w4GemmConfig::decoded): per quad the low nibbles as one vector of
// bytes, then the high nibbles as another. One load, three logic/shift ops
// and two stores per quad, in the ISA's full vector width.
//
// Why JIT rather than C++: the library's C++ is built for the baseline
// x86-64 target (SSE2), where the same loop takes twice the instructions
// and spills; the decode runs once per (thread, column panel) on the large-M
// path and showed as ~8% of a 4096 x 4096, M = 64 layer on Zen 3. The C++
// version (runtime/da8w4/da8w4_decode.h) is the reference the tests compare
// with.
#ifndef W4JIT_JIT_DA8W4_DECODE_GENERATOR_H_
#define W4JIT_JIT_DA8W4_DECODE_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/generator.h"

namespace w4jit::internal {

struct Da8w4DecodeArgs {
  const uint8_t* src;  // packed quads, quad_bytes each
  uint8_t* dst;        // 2 * quad_bytes per quad
  int64_t quads;       // >= 0
};
using Da8w4DecodeFn = void (*)(const Da8w4DecodeArgs*);

// The quad width follows the ISA: 32 bytes (AVX2) or 64 (AVX-512), as the
// layout's lanes do.
// The decoder depends on the vector width alone.
struct Da8w4DecodeConfig {
  IsaTier isa = IsaTier::kAvx2;
  // Bytes u - 8 (s4's signed q, -8..7) instead of u: the AMX tiles' s4
  // panels (tdpbssd needs no zero-point term then).
  bool minus8 = false;

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.minus8);
  }
  // The tier whose code runs.
  Da8w4DecodeConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const Da8w4DecodeConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const Da8w4DecodeConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const Da8w4DecodeConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<Da8w4DecodeConfig>());

absl::Status CheckDa8w4DecodeConfig(const Da8w4DecodeConfig& config);

class Da8w4DecodeGenerator final : public Generator {
 public:
  explicit Da8w4DecodeGenerator(const Da8w4DecodeConfig& config);

 protected:
  void Generate() override;

 private:
  void EmitQuads(int quads, ConstPool* pool);
  const bool minus8_;
  VecEmitter vec_;  // ymm (AVX2) or zmm: the quad is one vector
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_DECODE_GENERATOR_H_
