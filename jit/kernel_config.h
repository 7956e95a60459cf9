// Every generator's config, as the one type the kernel cache is keyed by:
// the variant's index is the family, the config the rest of the key
// (dispatch/config_key.h). A new generator adds its config here.
#ifndef W4JIT_JIT_KERNEL_CONFIG_H_
#define W4JIT_JIT_KERNEL_CONFIG_H_

#include <cstddef>
#include <string>
#include <variant>

#include "absl/hash/hash.h"
#include "jit/act_quantizer_generator.h"
#include "jit/da8w4_decode_generator.h"
#include "jit/da8w4_gemm_generator.h"
#include "jit/w4a16_amx_decode_generator.h"
#include "jit/w4a16_amx_generator.h"
#include "jit/w4a16_dequant_generator.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_panel_generator.h"

namespace w4jit::internal {

using KernelConfig =
    std::variant<ActQuantConfig, Da8w4GemmConfig, Da8w4DecodeConfig,
                 W4a16GemvConfig, W4a16DequantConfig, W4a16PanelConfig,
                 W4a16AmxConfig, W4a16AmxDecodeConfig>;

// The hash of a key (the family and the config's canonical fields; this
// absl hashes absl::variant, not std::variant).
struct KernelConfigHash {
  size_t operator()(const KernelConfig& config) const {
    return std::visit(
        [&](const auto& c) { return absl::HashOf(config.index(), c); }, config);
  }
};

// The kernel's name (the config's name()).
std::string KernelConfigName(const KernelConfig& config);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_KERNEL_CONFIG_H_
