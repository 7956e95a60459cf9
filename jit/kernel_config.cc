#include "jit/kernel_config.h"

namespace w4jit::internal {

std::string KernelConfigName(const KernelConfig& config) {
  return std::visit([](const auto& c) { return c.name(); }, config);
}

}  // namespace w4jit::internal
