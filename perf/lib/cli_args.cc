#include "perf/lib/cli_args.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace w4jit::perf {

absl::StatusOr<LayerShape> ParseShape(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  int64_t v[3] = {0, 0, 128};
  bool ok = parts.size() == 2 || parts.size() == 3;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    ok = absl::SimpleAtoi(parts[i], &v[i]);
  }
  if (!ok || v[0] <= 0 || v[1] <= 0 || (v[2] <= 0 && v[2] != -1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "want N,K[,G] with N, K > 0 and G > 0 or -1, got '", text, "'"));
  }
  return LayerShape{absl::StrCat(v[0], "x", v[1]), v[0], v[1], v[2], false};
}

absl::StatusOr<std::vector<Mode>> ParseModes(const std::string& text) {
  std::vector<Mode> modes;
  for (absl::string_view m : absl::StrSplit(text, ',')) {
    if (m == "w4a16") {
      modes.push_back(Mode::kW4A16);
    } else if (m == "da8w4") {
      modes.push_back(Mode::kDA8W4);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("'", m, "' is not w4a16 or da8w4"));
    }
  }
  return modes;
}

absl::StatusOr<const ModelPreset*> ParsePreset(const std::string& text) {
  const ModelPreset* p = FindPreset(text);
  if (p == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown '", text, "' (have ", PresetNames(), ")"));
  }
  return p;
}

}  // namespace w4jit::perf
