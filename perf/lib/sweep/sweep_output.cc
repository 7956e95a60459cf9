#include "perf/lib/sweep/sweep_output.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace w4jit::perf {
namespace {

std::string Group(int64_t g) { return g == -1 ? "pc" : absl::StrCat(g); }

// Quotes a CSV field when it holds a separator or a quote.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return absl::InternalError("cannot write " + path);
  return absl::OkStatus();
}

}  // namespace

std::string FormatSweepTable(const SweepReport& report) {
  std::string s = absl::StrFormat(
      "w4jit sweep: cpu class %s, %d threads\n"
      "%-6s %-8s %6s %6s %4s %5s %12s %12s %6s  %s\n",
      report.cpu_class, report.threads, "mode", "layer", "N", "K", "G", "M",
      "default us", "tuned us", "gain", "tuned parameters");
  for (const WinnerRow& w : report.winners) {
    const double gain = w.tuned_us > 0 ? w.default_us / w.tuned_us : 0.0;
    absl::StrAppendFormat(
        &s, "%-6s %-8s %6d %6d %4s %5d %12.1f %12.1f %5.2fx  %s\n",
        ToString(w.mode), w.layer, w.n, w.k, Group(w.group_size), w.m,
        w.default_us, w.tuned_us, gain, w.params);
  }
  for (const std::string& note : report.notes) {
    absl::StrAppend(&s, "note: ", note, "\n");
  }
  return s;
}

std::string SweepCandidatesCsv(const SweepReport& report) {
  std::string s =
      "mode,layer,n,k,group_size,m,cold,group,params,status,median_us,"
      "gain\n";
  for (const CandidateRow& r : report.candidates) {
    absl::StrAppend(&s, ToString(r.mode), ",", CsvField(r.layer), ",", r.n, ",",
                    r.k, ",", r.group_size, ",", r.m, ",", r.cold ? 1 : 0, ",",
                    CsvField(r.group), ",", CsvField(r.params), ",",
                    CsvField(r.status), ",",
                    absl::StrFormat("%.3f,%.4f", r.median_us, r.gain), "\n");
  }
  return s;
}

absl::StatusOr<std::vector<std::string>> WriteSweepFiles(
    const SweepReport& report, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  const std::string tuning = dir + "/tuning.json";
  const std::string csv = dir + "/candidates.csv";
  if (absl::Status s =
          WriteFile(tuning, internal::TuningToJson(report.tuning) + "\n");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteFile(csv, SweepCandidatesCsv(report)); !s.ok()) {
    return s;
  }
  return std::vector<std::string>{tuning, csv};
}

}  // namespace w4jit::perf
