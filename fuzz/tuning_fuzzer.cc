// Fuzzing of the tuning-file parser and of what a parsed file does to
// layers: arbitrary bytes go to ParseTuningJson; a file that parses must
// serialise and parse back to the same text. Then its entries are retargeted
// to this CPU class and to a small layer of each mode, loaded with
// LoadTuningFile, and layers created under it must still compute what the
// reference computes (tuning may change speed, never results), at row
// counts on both sides of the GEMV/GEMM handovers.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "check/layer_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "fuzz/fuzz_util.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::fuzz {
namespace {

LayerDesc SmallLayer(Mode mode) {
  LayerDesc d;
  d.mode = mode;
  d.n = 40;
  d.k = 64;
  d.group_size = 32;
  d.weight_type = WeightType::kU4;
  d.scale_dtype = DType::kBF16;
  d.act_dtype = DType::kBF16;
  d.out_dtype = DType::kF32;
  d.has_bias = true;
  return d;
}

void CheckLayersUnderTuning() {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    const LayerDesc desc = SmallLayer(mode);
    const auto w = check::RandomWeights(desc, 1);
    auto layer = check::MakeLayer(desc, w);
    if (!layer.ok()) {
      if (absl::IsResourceExhausted(layer.status())) continue;
      Fail(absl::StrCat("Create under a tuning file: ",
                        layer.status().ToString()));
    }
    for (int64_t m : {1, 7, 11, 17, 40}) {
      const auto x = check::RandomActivations(desc, m, desc.k, 2);
      const check::CheckResult r =
          check::CheckRun(**layer, w, m, x.data(), desc.k, desc.n);
      if (!r.ok()) {
        Fail(absl::StrCat(ToString(mode), " m=", m, " under tuning (",
                          (*layer)->kernel_names()[0], "): ", r.report));
      }
    }
  }
}

void RunOne(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<internal::TuningFile> file = internal::ParseTuningJson(text);
  if (!file.ok()) {
    if (file.status().message().empty()) Fail("parse error without message");
    return;
  }
  const std::string json = internal::TuningToJson(*file);
  absl::StatusOr<internal::TuningFile> again = internal::ParseTuningJson(json);
  if (!again.ok() || internal::TuningToJson(*again) != json) {
    Fail(absl::StrCat("round trip of a parsed file failed: ",
                      again.status().ToString(), "\n", json));
  }

  // Apply it here: this CPU class, entries for the small layers.
  file->cpu_class =
      internal::CpuClassOf(internal::HostCpu(), internal::ActiveIsa());
  for (internal::TuningEntry& e : file->entries) {
    const LayerDesc d = SmallLayer(e.mode);
    e.n = d.n;
    e.k = d.k;
    e.group_size = d.group_size;
  }
  static const std::string path =
      absl::StrCat("/tmp/w4jit-fuzz-tuning-", getpid(), ".json");
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    const std::string out = internal::TuningToJson(*file);
    std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
  }
  if (absl::Status s = LoadTuningFile(path); !s.ok()) {
    Fail(absl::StrCat("a retargeted file did not load: ", s.ToString()));
  }
  CheckLayersUnderTuning();
  (void)LoadTuningFile("");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace w4jit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  w4jit::fuzz::RunOne(data, size);
  return 0;
}
