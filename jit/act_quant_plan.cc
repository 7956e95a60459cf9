#include "jit/act_quant_plan.h"

#include "dispatch/isa_traits.h"
#include "jit/act_quantizer_generator.h"

namespace w4jit::internal {

static_assert(ActQuantPlan::kUsed <= 16,
              "the quantizer's plan must fit AVX2's 16 vector registers");

ActQuantPlan MakeActQuantPlan(const ActQuantConfig& config) {
  ActQuantPlan p;
  p.lanes = TraitsOf(config.isa).lanes32();
  p.row_tail = static_cast<int>(config.RowMaxColumns() % p.lanes);
  p.group_tail = static_cast<int>(config.group_size % p.lanes);
  return p;
}

}  // namespace w4jit::internal
