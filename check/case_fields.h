// The text form of selftest cases: "name=value,..." split into fields, and
// the fields that linear and MoE cases share (ISA, mode, weights, format,
// dtypes, ld, threads, backend, seeds) parsed in one place.
#ifndef W4JIT_CHECK_CASE_FIELDS_H_
#define W4JIT_CHECK_CASE_FIELDS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"
#include "w4jit/types.hpp"

namespace w4jit::check {

// name -> value of "name=value,..." (empty items skipped); an item
// without '=' is an error naming it.
absl::StatusOr<std::map<std::string, std::string>> CaseFields(
    const std::string& text);

// "case field <name>=<value> is not valid".
absl::Status BadCaseField(const std::string& name, const std::string& value);

// Where the shared fields of a case go.
struct CommonFields {
  internal::IsaTier* isa;
  Mode* mode;
  ActQuant* act_quant;
  WeightType* weight_type;
  WeightFormat* format;  // one of kAllFormats
  DType* scale_dtype;
  DType* act_dtype;
  DType* out_dtype;
  bool* bf16_compute;
  int64_t* ldx;
  int64_t* ldy;
  int* threads;
  std::string* backend;
  uint32_t* weight_seed;
  uint32_t* x_seed;
};

enum class FieldParse { kNotCommon, kOk, kBad };
// Stores field `name` = `value` through `f` if it is a shared field.
FieldParse ParseCommonField(const std::string& name, const std::string& value,
                            const CommonFields& f);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_CASE_FIELDS_H_
