#include "perf/lib/bench_legacy.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace w4jit::perf {
namespace {

// The old options that took no value.
constexpr const char* kFlags[] = {"--quick",    "--scaling", "--act-order",
                                  "--accuracy", "--parts",   "-h",
                                  "--help"};

struct OldOption {
  std::string name;   // "--m"
  std::string value;  // "1,16"
  bool has_value = false;
};

bool IsFlag(const std::string& name) {
  for (const char* f : kFlags) {
    if (name == f) return true;
  }
  return false;
}

// "--m=1", "--m 1" and "--quick" as name and value.
std::vector<OldOption> Split(const std::vector<std::string>& args) {
  std::vector<OldOption> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      out.push_back({a.substr(0, eq), a.substr(eq + 1), true});
    } else if (a.rfind("-", 0) == 0 && !IsFlag(a) && i + 1 < args.size() &&
               args[i + 1].rfind("--", 0) != 0) {
      out.push_back({a, args[i + 1], true});
      ++i;
    } else {
      out.push_back({a, "", false});
    }
  }
  return out;
}

bool Has(const std::vector<OldOption>& opts,
         std::initializer_list<const char*> names) {
  for (const OldOption& o : opts) {
    for (const char* n : names) {
      if (o.name == n) return true;
    }
  }
  return false;
}

// The job's name for an old option; "" drops it.
std::string Renamed(const std::string& job, const std::string& name) {
  static const struct {
    const char* job;
    const char* from;
    const char* to;
  } kRenames[] = {
      {"moe", "--moe", "--models"},
      {"moe", "--m", "--tokens"},
      {"scaling", "--scaling-layer", "--layer"},
      {"accuracy", "--accuracy-rows", "--rows"},
  };
  for (const auto& r : kRenames) {
    if (job == r.job && name == r.from) return r.to;
  }
  if (name == "--scaling" || name == "--accuracy") return "";
  return name;
}

bool AnyJobHas(const std::string& name) {
  for (const std::string& job : BenchJobNames()) {
    BenchJob unused;
    if (BenchJobApp(job, &unused)->get_option_no_throw(Renamed(job, name))) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> JobsOf(const std::vector<OldOption>& opts) {
  if (Has(opts, {"--model"})) return {"model"};
  if (Has(opts, {"--moe"})) return {"moe"};
  std::vector<std::string> jobs = {"layers"};
  if (Has(opts, {"--scaling", "--scaling-layer"})) jobs.push_back("scaling");
  if (Has(opts,
          {"--accuracy", "--outliers", "--outlier-scale", "--accuracy-rows"})) {
    jobs.push_back("accuracy");
  }
  return jobs;
}

}  // namespace

absl::StatusOr<BenchArgs> ParseOldBenchArgs(std::vector<std::string> args) {
  const std::vector<OldOption> opts = Split(args);
  const std::vector<std::string> jobs = JobsOf(opts);
  BenchArgs out;
  std::vector<std::string> commands;
  for (const std::string& job : jobs) {
    BenchJob probe;
    const std::unique_ptr<CLI::App> app = BenchJobApp(job, &probe);
    std::vector<std::string> job_args = {job};
    for (const OldOption& o : opts) {
      const std::string name = Renamed(job, o.name);
      if (name.empty()) continue;
      const bool known = app->get_option_no_throw(name) != nullptr;
      if (!known && (job != jobs.front() || AnyJobHas(o.name))) continue;
      job_args.push_back(o.has_value ? absl::StrCat(name, "=", o.value) : name);
    }
    commands.push_back(
        absl::StrCat("`w4jit bench ", absl::StrJoin(job_args, " "), "`"));
    absl::StatusOr<BenchArgs> parsed = ParseBenchArgs(std::move(job_args));
    if (!parsed.ok()) return parsed.status();
    if (!parsed->help.empty()) return parsed;
    for (BenchJob& j : parsed->jobs) out.jobs.push_back(std::move(j));
  }
  out.deprecation = absl::StrCat(
      "w4jit bench: options without a job are deprecated and go in the next "
      "release; this runs as ",
      absl::StrJoin(commands, " then "));
  return out;
}

}  // namespace w4jit::perf
