// The MoE draws of `w4jit selftest`: random MoeLayer configurations
// (experts, top-k, H, I, group, checkpoint format, per-expert or stacked
// tensors, s4/u4, mode and activation scales, gate activation, dtypes,
// biases, T with uniform or skewed routing and repeated experts,
// accumulate / unweighted, padded ldx/ldy, threads and backend), each run
// on one ISA tier and checked against the float64 oracle of
// check/moe_check.h. A configuration is a MoeCase; its text form (it
// starts with "moe=1,") is a one-line reproducer.
#ifndef W4JIT_CHECK_MOE_SELFTEST_H_
#define W4JIT_CHECK_MOE_SELFTEST_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "check/selftest.h"
#include "dispatch/cpu_profile.h"
#include "w4jit/moe.hpp"

namespace w4jit::check {

struct MoeCase {
  internal::IsaTier isa = internal::IsaTier::kRef;
  MoeDesc desc;
  WeightFormat format = WeightFormat::kUnpackedInt8;
  bool stacked = false;
  int64_t t = 1;
  int64_t k = 1;
  bool skewed = false;   // expert 0 in every token
  bool repeats = false;  // ids drawn with repetition (else distinct)
  bool accumulate = false;
  bool unweighted = false;
  int64_t ldx = 0;  // 0: H
  int64_t ldy = 0;  // 0: H
  int threads = 1;
  std::string backend = "pool";
  uint32_t weight_seed = 0;
  uint32_t x_seed = 0;
};

// Whether `text` is a MoeCase's text (CaseToString's text is not).
bool IsMoeCaseText(const std::string& text);
std::string MoeCaseToString(const MoeCase& c);
absl::StatusOr<MoeCase> ParseMoeCase(const std::string& text);

// A random MoE case on `isa`, sized so that creation and the oracle stay
// cheap (T * k * H * I about 2^20 at most).
MoeCase RandomMoeCase(std::mt19937_64* rng, internal::IsaTier isa,
                      int max_threads,
                      const std::vector<std::string>& backends);

// Creates the layer under the case's ISA cap, backend and thread count,
// runs it and checks every y[t, c < H] against the oracle and that the
// padding of y is not written.
CaseResult RunMoeCase(const MoeCase& c);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_MOE_SELFTEST_H_
