#include "dispatch/tuning.h"

#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "base/log.h"
#include "dispatch/isa_traits.h"
#include "nlohmann/json.hpp"
#include "w4jit/tuning.hpp"

namespace w4jit::internal {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("tuning file: ", what));
}

// Rejects keys outside `allowed`, naming the first one found.
absl::Status OnlyKeys(const json& obj, const std::set<std::string>& allowed,
                      const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (allowed.count(it.key()) == 0) {
      return Bad(absl::StrCat("unknown key \"", it.key(), "\" in ", where));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> PositiveInt(const json& obj, const char* key,
                                    const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) {
    return Bad(absl::StrCat(where, ": \"", key, "\" must be an integer"));
  }
  const int64_t v = it->get<int64_t>();
  if (v <= 0) {
    return Bad(
        absl::StrCat(where, ": \"", key, "\" = ", v, " must be positive"));
  }
  return v;
}

absl::StatusOr<TuningEntry> ParseEntry(const json& e, size_t index) {
  const std::string where = absl::StrCat("entries[", index, "]");
  if (!e.is_object()) return Bad(where + " is not an object");
  if (absl::Status s = OnlyKeys(
          e, {"mode", "shape", "n", "k", "group_size", "params", "note"},
          where);
      !s.ok()) {
    return s;
  }
  TuningEntry out;
  auto mode = e.find("mode");
  if (mode == e.end() || !mode->is_string()) {
    return Bad(where + ": \"mode\" must be \"w4a16\" or \"da8w4\"");
  }
  if (*mode == "w4a16") {
    out.mode = Mode::kW4A16;
  } else if (*mode == "da8w4") {
    out.mode = Mode::kDA8W4;
  } else {
    return Bad(absl::StrCat(where, ": mode \"", mode->get<std::string>(),
                            "\" is not w4a16 or da8w4"));
  }
  if (auto shape = e.find("shape"); shape != e.end()) {
    if (!shape->is_string() || *shape != "all") {
      return Bad(where + ": \"shape\" must be \"all\" (or absent)");
    }
    for (const char* key : {"n", "k", "group_size"}) {
      if (e.contains(key)) {
        return Bad(
            absl::StrCat(where, ": \"", key, "\" with \"shape\": \"all\""));
      }
    }
    out.all_shapes = true;
  } else {
    auto n = PositiveInt(e, "n", where);
    if (!n.ok()) return n.status();
    auto k = PositiveInt(e, "k", where);
    if (!k.ok()) return k.status();
    out.n = *n;
    out.k = *k;
    auto g = e.find("group_size");
    if (g == e.end() || !g->is_number_integer() ||
        (g->get<int64_t>() <= 0 && g->get<int64_t>() != -1)) {
      return Bad(where + ": \"group_size\" must be a positive integer or -1");
    }
    out.group_size = g->get<int64_t>();
  }
  auto params = e.find("params");
  if (params == e.end() || !params->is_object()) {
    return Bad(where + ": \"params\" must be an object");
  }
  for (auto it = params->begin(); it != params->end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return Bad(absl::StrCat(where, ": param \"", it.key(),
                              "\" must be a non-negative integer"));
    }
    out.params[it.key()] = it->get<int64_t>();
  }
  return out;
}

struct Active {
  std::mutex mu;
  bool env_checked = false;
  TuningState state;
};

Active& GetActive() {
  static Active* a = new Active;
  return *a;
}

absl::Status LoadLocked(Active& a, const std::string& path) {
  a.state = TuningState{};
  a.state.path = path;
  if (path.empty()) {
    a.state.status = "no tuning file";
    return absl::OkStatus();
  }
  std::ifstream in(path);
  if (!in) {
    a.state.status = "cannot be read";
    return Bad(absl::StrCat("cannot read ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<TuningFile> file = ParseTuningJson(text.str());
  if (!file.ok()) {
    a.state.status = std::string(file.status().message());
    return file.status();
  }
  const std::string here = CpuClassOf(HostCpu(), ActiveIsa());
  if (file->cpu_class != here) {
    a.state.status = absl::StrCat("recorded on cpu class ", file->cpu_class,
                                  ", this CPU is ", here, "; not applied");
    return absl::FailedPreconditionError(
        absl::StrCat("tuning file ", path, " was ", a.state.status));
  }
  a.state.status = "applied";
  a.state.file = *std::move(file);
  return absl::OkStatus();
}

void CheckEnvLocked(Active& a) {
  if (a.env_checked) return;
  a.env_checked = true;
  const char* env = GetEnv(EnvVar::kTuningFile);
  if (env == nullptr || *env == '\0') {
    a.state.status = "no tuning file";
    return;
  }
  absl::Status s = LoadLocked(a, env);
  if (!s.ok()) {
    Log(LogLevel::kWarning,
        absl::StrCat("W4JIT_TUNING_FILE: ", s.message(), "; using defaults"));
  }
}

}  // namespace

std::string CpuClassOf(const CpuProfile& cpu, IsaTier isa) {
  std::string base;
  if (cpu.zen_generation > 0) {
    base = absl::StrCat("zen", cpu.zen_generation);
    if (cpu.zen_generation >= 5 && cpu.features.fp256) base += "-fp256";
  } else if (cpu.vendor == Vendor::kIntel) {
    base =
        TierHas(cpu.isa, IsaFeature::kAvx512) ? "intel-avx512" : "intel-avx2";
  } else {
    base = "generic";
  }
  return absl::StrCat(base, "/", ToString(isa));
}

absl::StatusOr<TuningFile> ParseTuningJson(const std::string& text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("not valid JSON");
  if (!doc.is_object()) return Bad("the top level is not an object");
  if (absl::Status s = OnlyKeys(
          doc, {"w4jit_tuning_version", "cpu", "created", "entries"}, "file");
      !s.ok()) {
    return s;
  }
  auto version = doc.find("w4jit_tuning_version");
  if (version == doc.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kFormatVersion) {
    return Bad(
        absl::StrCat("\"w4jit_tuning_version\" must be ", kFormatVersion));
  }
  TuningFile out;
  auto cpu = doc.find("cpu");
  if (cpu == doc.end() || !cpu->is_object()) {
    return Bad("\"cpu\" must be an object with a \"class\"");
  }
  if (absl::Status s = OnlyKeys(*cpu, {"class", "name", "signature"}, "cpu");
      !s.ok()) {
    return s;
  }
  auto cls = cpu->find("class");
  if (cls == cpu->end() || !cls->is_string()) {
    return Bad("\"cpu.class\" must be a string");
  }
  out.cpu_class = cls->get<std::string>();
  if (auto name = cpu->find("name"); name != cpu->end() && name->is_string()) {
    out.cpu_name = name->get<std::string>();
  }
  if (auto c = doc.find("created"); c != doc.end() && c->is_string()) {
    out.created = c->get<std::string>();
  }
  auto entries = doc.find("entries");
  if (entries == doc.end() || !entries->is_array()) {
    return Bad("\"entries\" must be an array");
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    absl::StatusOr<TuningEntry> e = ParseEntry((*entries)[i], i);
    if (!e.ok()) return e.status();
    out.entries.push_back(*std::move(e));
  }
  return out;
}

std::string TuningToJson(const TuningFile& file) {
  json doc;
  doc["w4jit_tuning_version"] = kFormatVersion;
  doc["cpu"] = {{"class", file.cpu_class}, {"name", file.cpu_name}};
  doc["created"] = file.created;
  doc["entries"] = json::array();
  for (const TuningEntry& e : file.entries) {
    json params = json::object();
    for (const auto& [name, value] : e.params) params[name] = value;
    if (e.all_shapes) {
      doc["entries"].push_back(
          {{"mode", ToString(e.mode)}, {"shape", "all"}, {"params", params}});
    } else {
      doc["entries"].push_back({{"mode", ToString(e.mode)},
                                {"n", e.n},
                                {"k", e.k},
                                {"group_size", e.group_size},
                                {"params", params}});
    }
  }
  return doc.dump(2);
}

absl::Status LoadTuningFile(const std::string& path) {
  Active& a = GetActive();
  std::lock_guard<std::mutex> lock(a.mu);
  a.env_checked = true;  // an explicit call wins over the environment
  absl::Status s = LoadLocked(a, path);
  if (!s.ok()) {
    Log(LogLevel::kWarning, absl::StrCat(s.message(), "; using defaults"));
  }
  return s;
}

TuningState ActiveTuning() {
  Active& a = GetActive();
  std::lock_guard<std::mutex> lock(a.mu);
  CheckEnvLocked(a);
  return a.state;
}

std::optional<ParamMap> LookupTuning(const CpuProfile& cpu, IsaTier isa,
                                     const LayerDesc& desc) {
  Active& a = GetActive();
  std::lock_guard<std::mutex> lock(a.mu);
  CheckEnvLocked(a);
  if (!a.state.file || a.state.file->cpu_class != CpuClassOf(cpu, isa)) {
    return std::nullopt;
  }
  std::optional<ParamMap> all, exact;
  for (const TuningEntry& e : a.state.file->entries) {
    if (e.mode != desc.mode) continue;
    if (e.all_shapes) {
      if (!all) all = e.params;
    } else if (!exact && e.n == desc.n && e.k == desc.k &&
               e.group_size == desc.group_size) {
      exact = e.params;
    }
  }
  if (!all) return exact;
  if (exact) {
    for (const auto& [name, value] : *exact) (*all)[name] = value;
  }
  return all;
}

}  // namespace w4jit::internal

namespace w4jit {
absl::Status LoadTuningFile(const std::string& path) {
  return internal::LoadTuningFile(path);
}
}  // namespace w4jit
