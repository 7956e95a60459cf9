// Umbrella header of the w4jit C++ API.
#ifndef W4JIT_W4JIT_HPP_
#define W4JIT_W4JIT_HPP_

#include "w4jit/kernel_cache.hpp"
#include "w4jit/layer.hpp"
#include "w4jit/log.hpp"
#include "w4jit/moe.hpp"
#include "w4jit/parallel.hpp"
#include "w4jit/tuning.hpp"
#include "w4jit/types.hpp"

namespace w4jit {
// Library version, "MAJOR.MINOR.PATCH".
const char* Version();
}  // namespace w4jit

#endif  // W4JIT_W4JIT_HPP_
