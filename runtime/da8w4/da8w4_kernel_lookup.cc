#include "runtime/da8w4/da8w4_kernel_lookup.h"

#include <memory>

#include "jit/da8w4_amx_generator.h"
#include "runtime/kernel_cache.h"

namespace w4jit::internal {

absl::StatusOr<std::shared_ptr<const Generator>> GetActQuantizer(
    const ActQuantConfig& c) {
  if (absl::Status s = CheckActQuantConfig(c); !s.ok()) return s;
  return GetOrCreateKernel(
      c, [c] { return std::make_unique<ActQuantizerGenerator>(c); });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetDa8w4GemmKernel(
    const Da8w4GemmConfig& config) {
  if (absl::Status s = CheckDa8w4GemmConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config]() -> std::unique_ptr<Generator> {
    if (config.amx) return std::make_unique<Da8w4AmxGenerator>(config);
    return std::make_unique<Da8w4GemmGenerator>(config);
  });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetDa8w4DecodeKernel(
    IsaTier isa, bool minus8) {
  const Da8w4DecodeConfig config{isa, minus8};
  if (absl::Status s = CheckDa8w4DecodeConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config] {
    return std::make_unique<Da8w4DecodeGenerator>(config);
  });
}

}  // namespace w4jit::internal
