// `w4jit selftest`: random layer configurations checked against the
// reference on every ISA tier this CPU supports. Run it first on a new CPU.
// The engine is check/selftest.h; this file parses options and prints.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "check/moe_selftest.h"
#include "check/selftest.h"
#include "dispatch/cpu_profile.h"
#include "tools/commands.h"

namespace w4jit::tools {
namespace {

void Help() {
  std::printf(
      "usage: w4jit selftest [options]\n\n"
      "Creates random layers (shape, group size incl. per-channel and odd,\n"
      "all checkpoint formats, s4/u4, W4A16/DA8W4, bf16/f32 in and out,\n"
      "bias, M with every tile tail, padded ldx/ldy, 1..T threads, every\n"
      "parallel backend) and checks every output against the reference, on\n"
      "each ISA tier this CPU supports (as W4JIT_ISA would cap them). One\n"
      "configuration in %d is a MoE layer (experts, top-k, H, I, format,\n"
      "stacked or per-expert, gate activation, routing) checked against\n"
      "its float64 oracle.\n\n"
      "options:\n"
      "  --configs=N     configurations per ISA tier (default 10000)\n"
      "  --seconds=S     time limit over all tiers (default 600)\n"
      "  --seed=N        random seed (default 1)\n"
      "  --threads=T     at most T threads per layer (default: all cores)\n"
      "  --isa=LIST      tiers to test, e.g. ref,avx2 (default: all here)\n"
      "  --backend=LIST  parallel backends (default: all: %s)\n"
      "  --case=CASE     rerun one configuration (as printed on failure)\n\n"
      "Exit status 0 if every configuration agreed, 1 if any did not (each\n"
      "failure is printed as a command line that reruns just it).\n",
      static_cast<int>(check::kMoeEvery),
      [] {
        std::string s;
        for (const std::string& b : check::SelftestBackends()) {
          s += (s.empty() ? "" : ",") + b;
        }
        return s;
      }()
          .c_str());
}

// The path of this executable, for reproducer lines.
std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "w4jit";
}

std::string Reproducer(const std::string& case_text) {
  return SelfPath() + " selftest --case='" + case_text + "'";
}

bool Value(const std::string& arg, const char* name, std::string* out) {
  const std::string prefix = std::string(name) + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *out = arg.substr(prefix.size());
  return true;
}

void PrintResult(const std::string& case_text, const check::CaseResult& r) {
  std::printf("%s: %s\n", r.ok ? "OK" : "FAILED", case_text.c_str());
  std::printf("  %s, worst |error| / tolerance %.3f\n",
              r.on_jit ? "JIT kernels" : "reference path", r.worst_ratio);
  if (!r.ok) std::printf("  %s\n", r.error.c_str());
}

int RunOneCase(const std::string& text) {
  const bool moe = check::IsMoeCaseText(text);
  absl::Status parsed;
  if (moe) {
    absl::StatusOr<check::MoeCase> c = check::ParseMoeCase(text);
    parsed = c.status();
    if (c.ok()) {
      const check::CaseResult r = check::RunMoeCase(*c);
      PrintResult(check::MoeCaseToString(*c), r);
      return r.ok ? 0 : 1;
    }
  } else {
    absl::StatusOr<check::Case> c = check::ParseCase(text);
    parsed = c.status();
    if (c.ok()) {
      const check::CaseResult r = check::RunCase(*c);
      PrintResult(check::CaseToString(*c), r);
      return r.ok ? 0 : 1;
    }
  }
  std::fprintf(stderr, "w4jit selftest: %s\n",
               std::string(parsed.message()).c_str());
  return 2;
}

}  // namespace

int RunSelftest(int argc, char** argv) {
  check::SelftestOptions options;
  std::string one_case;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      Help();
      return 0;
    } else if (Value(arg, "--configs", &v)) {
      ok = absl::SimpleAtoi(v, &options.configs_per_tier) &&
           options.configs_per_tier >= 1;
    } else if (Value(arg, "--seconds", &v)) {
      ok = absl::SimpleAtod(v, &options.seconds) && options.seconds > 0;
    } else if (Value(arg, "--seed", &v)) {
      ok = absl::SimpleAtoi(v, &options.seed);
    } else if (Value(arg, "--threads", &v)) {
      ok =
          absl::SimpleAtoi(v, &options.max_threads) && options.max_threads >= 1;
    } else if (Value(arg, "--isa", &v)) {
      const std::vector<std::string> names = absl::StrSplit(v, ',');
      for (const std::string& t : names) {
        internal::IsaTier tier;
        if (!internal::ParseIsaTier(t, &tier) || tier > internal::ActiveIsa()) {
          std::fprintf(stderr,
                       "w4jit selftest: --isa: '%s' is not a tier this CPU "
                       "runs (up to %s)\n",
                       t.c_str(), internal::ToString(internal::ActiveIsa()));
          return 2;
        }
        options.tiers.push_back(tier);
      }
    } else if (Value(arg, "--backend", &v)) {
      const std::vector<std::string> known = check::SelftestBackends();
      const std::vector<std::string> names = absl::StrSplit(v, ',');
      for (const std::string& b : names) {
        if (std::find(known.begin(), known.end(), b) == known.end()) {
          std::fprintf(stderr, "w4jit selftest: unknown backend '%s'\n",
                       b.c_str());
          return 2;
        }
        options.backends.push_back(b);
      }
    } else if (Value(arg, "--case", &v)) {
      one_case = v;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "w4jit selftest: bad option '%s' (see --help)\n",
                   arg.c_str());
      return 2;
    }
  }
  if (!one_case.empty()) return RunOneCase(one_case);

  const bool tty = isatty(STDERR_FILENO) != 0;
  const internal::CpuProfile& cpu = internal::HostCpu();
  std::printf("w4jit selftest: %s, ISA tiers up to %s, seed %lu\n",
              cpu.name.c_str(), internal::ToString(internal::ActiveIsa()),
              static_cast<unsigned long>(options.seed));
  std::fflush(stdout);
  const check::SelftestReport report =
      check::RunSelftest(options, [&](const check::Progress& p) {
        if (!tty || (p.done % 16 != 0 && p.done != p.target)) return;
        std::fprintf(stderr,
                     "\r  %-12s %6ld / %ld configs, %ld failed, %.0f s ",
                     internal::ToString(p.tier), static_cast<long>(p.done),
                     static_cast<long>(p.target), static_cast<long>(p.failed),
                     p.elapsed_s);
        std::fflush(stderr);
      });
  if (tty) std::fprintf(stderr, "\n");
  std::printf("\n%s", check::FormatSummary(report).c_str());
  std::printf("%.1f s in all\n", report.seconds);
  if (report.total_failed == 0) {
    std::printf("all configurations agree with the reference\n");
    return 0;
  }
  std::printf("\n%ld configurations FAILED; rerun one with:\n",
              static_cast<long>(report.total_failed));
  for (const std::string& f : report.failures) {
    const size_t nl = f.find('\n');
    std::printf("%s\n%s\n", Reproducer(f.substr(0, nl)).c_str(),
                f.substr(nl + 1).c_str());
  }
  return 1;
}

}  // namespace w4jit::tools
