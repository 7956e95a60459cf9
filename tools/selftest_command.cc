// `w4jit selftest`: random layer configurations checked against the
// reference on every ISA tier this CPU supports. Run it first on a new CPU.
// The engine is check/selftest.h; this file parses options and prints.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "check/moe_selftest.h"
#include "check/selftest.h"
#include "cli/flags.h"
#include "dispatch/cpu_profile.h"
#include "tools/commands.h"

namespace w4jit::tools {
namespace {

// The path of this executable, for reproducer lines.
std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "w4jit";
}

std::string Reproducer(const std::string& case_text) {
  return SelfPath() + " selftest --case='" + case_text + "'";
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

// Every option of `w4jit selftest`, writing into *options and *one_case.
std::unique_ptr<CLI::App> SelftestApp(check::SelftestOptions* options,
                                      std::string* one_case) {
  const check::SelftestOptions d;
  auto app = flags::NewApp(
      "w4jit selftest",
      absl::StrCat(
          "Creates random layers (shape, group size incl. per-channel and "
          "odd, all checkpoint formats, s4/u4, W4A16/DA8W4, bf16/f32 in and "
          "out, bias, M with every tile tail, padded ldx/ldy, 1..T threads, "
          "every parallel backend) and checks every output against the "
          "reference, on each ISA tier this CPU supports (as W4JIT_ISA would "
          "cap them). One configuration in ",
          check::kMoeEvery,
          " is a MoE layer (experts, top-k, H, I, format, stacked or "
          "per-expert, gate activation, routing) checked against its float64 "
          "oracle.\n\nExit status 0 if every configuration agreed, 1 if any "
          "did not (each failure is printed as a command line that reruns "
          "just it), 2 on a bad option."));
  CLI::App& a = *app;
  flags::AddOption<int64_t>(
      a, "--configs", "N", "configurations per ISA tier",
      flags::PositiveInteger,
      [options](int64_t n) { options->configs_per_tier = n; })
      ->default_str(absl::StrCat(d.configs_per_tier));
  flags::AddOption<double>(a, "--seconds", "S", "time limit over all tiers",
                           flags::PositiveNumber,
                           [options](double s) { options->seconds = s; })
      ->default_str(absl::StrCat(d.seconds));
  flags::AddOption<uint64_t>(
      a, "--seed", "N", "random seed",
      [](const std::string& text) -> absl::StatusOr<uint64_t> {
        uint64_t seed = 0;
        if (!absl::SimpleAtoi(text, &seed)) {
          return absl::InvalidArgumentError(
              absl::StrCat("'", text, "' is not a non-negative integer"));
        }
        return seed;
      },
      [options](uint64_t seed) { options->seed = seed; })
      ->default_str(absl::StrCat(d.seed));
  flags::AddOption<int64_t>(
      a, "--threads", "T", "at most T threads per layer (default: all cores)",
      flags::PositiveInteger, [options](int64_t t) {
        options->max_threads = static_cast<int>(std::min<int64_t>(t, 1 << 20));
      });
  flags::AddOption<std::vector<internal::IsaTier>>(
      a, "--isa", "LIST",
      "tiers to test, e.g. ref,avx2 (default: all this CPU runs)",
      [](const std::string& text)
          -> absl::StatusOr<std::vector<internal::IsaTier>> {
        std::vector<internal::IsaTier> tiers;
        const std::vector<std::string> names = absl::StrSplit(text, ',');
        for (const std::string& t : names) {
          internal::IsaTier tier;
          if (!internal::ParseIsaTier(t, &tier) ||
              tier > internal::ActiveIsa()) {
            return absl::InvalidArgumentError(
                absl::StrCat("'", t, "' is not a tier this CPU runs (up to ",
                             internal::ToString(internal::ActiveIsa()), ")"));
          }
          tiers.push_back(tier);
        }
        return tiers;
      },
      [options](std::vector<internal::IsaTier> tiers) {
        options->tiers = std::move(tiers);
      });
  const std::vector<std::string> backends = check::SelftestBackends();
  flags::AddOption<std::vector<std::string>>(
      a, "--backend", "LIST",
      absl::StrCat("parallel backends (default: all: ",
                   absl::StrJoin(backends, ","), ")"),
      flags::ListOf(backends), [options](std::vector<std::string> b) {
        options->backends = std::move(b);
      });
  flags::AddOption<std::string>(
      a, "--case", "CASE", "rerun one configuration (as printed on failure)",
      flags::NonEmpty,
      [one_case](std::string text) { *one_case = std::move(text); });
  return app;
}

}  // namespace

int RunSelftest(int argc, char** argv) {
  check::SelftestOptions options;
  std::string one_case;
  std::unique_ptr<CLI::App> app = SelftestApp(&options, &one_case);
  absl::StatusOr<bool> help = flags::Parse(*app, argc, argv);
  if (!help.ok()) {
    std::fprintf(stderr, "w4jit selftest: %s\n",
                 std::string(help.status().message()).c_str());
    return 2;
  }
  if (*help) {
    std::fputs(app->help().c_str(), stdout);
    return 0;
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
