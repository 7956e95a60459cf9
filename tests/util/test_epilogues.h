// The epilogues the kernel tests run every path under: each activation
// alone, zentorch's binary forms (with both operand dtypes) after an
// activation, silu_mul with and without binaries, GeGLU gates and gpt-oss's
// gate.
#ifndef W4JIT_TESTS_UTIL_TEST_EPILOGUES_H_
#define W4JIT_TESTS_UTIL_TEST_EPILOGUES_H_

#include <vector>

#include "w4jit/types.hpp"

namespace w4jit::testing {

std::vector<Epilogue> TestEpilogues();

}  // namespace w4jit::testing

#endif  // W4JIT_TESTS_UTIL_TEST_EPILOGUES_H_
