#include "check/case_fields.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "check/draw_util.h"
#include "check/layer_check.h"
#include "check/selftest.h"

namespace w4jit::check {

absl::StatusOr<std::map<std::string, std::string>> CaseFields(
    const std::string& text) {
  std::map<std::string, std::string> fields;
  const std::vector<std::string> items =
      absl::StrSplit(text, ',', absl::SkipEmpty());
  for (const std::string& item : items) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("case field '", item, "' is not name=value"));
    }
    fields[kv[0]] = kv[1];
  }
  return fields;
}

absl::Status BadCaseField(const std::string& name, const std::string& value) {
  return absl::InvalidArgumentError(
      absl::StrCat("case field ", name, "=", value, " is not valid"));
}

FieldParse ParseCommonField(const std::string& name, const std::string& value,
                            const CommonFields& f) {
  const std::initializer_list<DType> dtypes = {DType::kF32, DType::kBF16,
                                               DType::kF16};
  int64_t num = 0;
  const bool is_num = absl::SimpleAtoi(value, &num);
  bool ok = true;
  if (name == "isa") {
    ok = internal::ParseIsaTier(value, f.isa);
  } else if (name == "mode") {
    ok = ParseEnum(value, {Mode::kW4A16, Mode::kDA8W4}, f.mode);
  } else if (name == "act_quant") {
    ok = ParseEnum(value, {ActQuant::kPerToken, ActQuant::kPerGroup},
                   f.act_quant);
  } else if (name == "weights") {
    ok = ParseEnum(value, {WeightType::kS4, WeightType::kU4}, f.weight_type);
  } else if (name == "format") {
    ok = false;
    for (WeightFormat w : kAllFormats) {
      if (value == ToString(w)) {
        *f.format = w;
        ok = true;
      }
    }
  } else if (name == "scales") {
    ok = ParseEnum(value, dtypes, f.scale_dtype);
  } else if (name == "act") {
    ok = ParseEnum(value, dtypes, f.act_dtype);
  } else if (name == "out") {
    ok = ParseEnum(value, dtypes, f.out_dtype);
  } else if (name == "backend") {
    *f.backend = value;
    ok = KnownSelftestBackend(value);
  } else if (name == "bf16_compute") {
    ok = is_num;
    *f.bf16_compute = num != 0;
  } else if (name == "ldx") {
    ok = is_num;
    *f.ldx = num;
  } else if (name == "ldy") {
    ok = is_num;
    *f.ldy = num;
  } else if (name == "threads") {
    ok = is_num && num >= 1 && num <= 4096;
    *f.threads = static_cast<int>(num);
  } else if (name == "wseed") {
    ok = is_num;
    *f.weight_seed = static_cast<uint32_t>(num);
  } else if (name == "xseed") {
    ok = is_num;
    *f.x_seed = static_cast<uint32_t>(num);
  } else {
    return FieldParse::kNotCommon;
  }
  return ok ? FieldParse::kOk : FieldParse::kBad;
}

}  // namespace w4jit::check
