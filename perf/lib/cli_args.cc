#include "perf/lib/cli_args.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace w4jit::perf {

absl::StatusOr<std::vector<int64_t>> ParsePositiveList(
    const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", part, "' is not a positive integer (in '", text, "')"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<LayerShape> ParseShape(const std::string& flag,
                                      const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  int64_t v[3] = {0, 0, 128};
  bool ok = parts.size() == 2 || parts.size() == 3;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    ok = absl::SimpleAtoi(parts[i], &v[i]);
  }
  if (!ok || v[0] <= 0 || v[1] <= 0 || (v[2] <= 0 && v[2] != -1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": want N,K[,G] with N, K > 0 and G > 0 or -1, got '", text,
        "'"));
  }
  return LayerShape{absl::StrCat(v[0], "x", v[1]), v[0], v[1], v[2], false};
}

absl::StatusOr<std::vector<Mode>> ParseModes(const std::string& flag,
                                             const std::string& text) {
  std::vector<Mode> modes;
  for (absl::string_view m : absl::StrSplit(text, ',')) {
    if (m == "w4a16") {
      modes.push_back(Mode::kW4A16);
    } else if (m == "da8w4") {
      modes.push_back(Mode::kDA8W4);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", m, "' is not w4a16 or da8w4"));
    }
  }
  return modes;
}

}  // namespace w4jit::perf
