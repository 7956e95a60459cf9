#include "perf/lib/sections/model_settings.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "w4jit/tuning.hpp"

namespace w4jit::perf {

std::string TuningLabel(const std::string& path) {
  return path.empty() ? std::string()
                      : std::filesystem::path(path).stem().string();
}

std::string SpaceThen(const std::string& label) {
  return label.empty() ? label : absl::StrCat(" ", label);
}

absl::Status InstallPrefetchTuning(const ModelOptions& config, int distance) {
  internal::TuningFile file;
  const internal::CpuProfile& cpu = internal::HostCpu();
  file.cpu_class = internal::CpuClassOf(cpu, internal::ActiveIsa());
  file.cpu_name = cpu.name;
  file.created = "w4jit bench model --prefetch";
  for (Mode mode : config.modes) {
    internal::TuningEntry e;
    e.mode = mode;
    e.all_shapes = true;
    e.params = {{"prefetch_distance", distance}};
    file.entries.push_back(e);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("w4jit-model-prefetch-", getpid(), ".json"))
          .string();
  {
    std::ofstream f(path, std::ios::trunc);
    f << internal::TuningToJson(file);
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  absl::Status s = LoadTuningFile(path);
  std::filesystem::remove(path);
  return s;
}

std::vector<CopySetting> CopySettings(const ModelOptions& config) {
  std::vector<CopySetting> settings;
  if (!config.model_prefetch.empty()) {
    for (int64_t d : config.model_prefetch) {
      settings.push_back({static_cast<int>(d), ""});
    }
  } else if (!config.model_tunings.empty()) {
    for (const std::string& t : config.model_tunings) {
      settings.push_back({-1, t == "default" ? "" : t});
    }
  } else {
    settings.push_back(CopySetting{});  // the defaults
  }
  return settings;
}

absl::Status ApplyCopySetting(const ModelOptions& config,
                              const CopySetting& setting) {
  if (setting.prefetch >= 0) {
    return InstallPrefetchTuning(config, setting.prefetch);
  }
  if (config.model_tunings.empty()) return absl::OkStatus();
  absl::Status s = LoadTuningFile(setting.tuning);  // "" clears: the defaults
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tunings: ", setting.tuning, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
