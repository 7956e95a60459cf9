#include "perf/lib/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/report_table.h"
#include "perf/lib/svg_canvas.h"

namespace w4jit::perf {
namespace {

constexpr int kWidth = 960, kHeight = 600;
constexpr double kLeft = 80, kRight = 700, kTop = 60, kBottom = 530;

std::string ImplColor(const std::string& impl) {
  if (impl == kImplW4a16) return "#1f77b4";
  if (impl == kImplDa8w4) return "#d62728";
  if (impl == kImplOneDnnBf16) return "#2ca02c";
  return "#9467bd";
}

std::string Title(const BenchReport& r, const std::string& what) {
  return absl::StrFormat("%s: %s, %s, %d thread(s), %s", what, r.preset,
                         r.cpu.name.empty() ? "unknown CPU" : r.cpu.name,
                         r.threads, r.date_utc);
}

// Expands [lo, hi] by `margin` on a log scale; a fallback when empty.
void Pad(double* lo, double* hi, double margin, double lo0, double hi0) {
  if (!(*lo > 0) || !(*hi > 0) || *lo > *hi) {
    *lo = lo0;
    *hi = hi0;
  }
  *lo /= margin;
  *hi *= margin;
}

double Intensity(const BenchRow& r) {
  return 2.0 * static_cast<double>(r.m) * r.n * r.k / r.weight_bytes;
}

}  // namespace

std::string RooflineSvg(const BenchReport& report) {
  std::vector<const BenchRow*> points;
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  for (const BenchRow& r : report.rows) {
    if (!r.ok() || r.gflops <= 0 || r.weight_bytes <= 0) continue;
    points.push_back(&r);
    x_lo = std::min(x_lo, Intensity(r));
    x_hi = std::max(x_hi, Intensity(r));
    y_lo = std::min(y_lo, r.gflops);
    y_hi = std::max(y_hi, r.gflops);
  }
  for (const ComputePeak& p : report.roofline.peaks) {
    if (p.available) y_hi = std::max(y_hi, 2e-9 * p.macs_per_s);
  }
  Pad(&x_lo, &x_hi, 2.0, 1.0, 1000.0);
  Pad(&y_lo, &y_hi, 2.0, 1.0, 1000.0);
  const LogAxis x{x_lo, x_hi, kLeft, kRight}, y{y_lo, y_hi, kBottom, kTop};

  SvgCanvas svg(kWidth, kHeight);
  svg.Text(kWidth / 2.0, 28, Title(report, "Roofline"), 15, "middle");
  DrawLogAxes(&svg, x, y, "arithmetic intensity (FLOP per weight byte)",
              "GFLOP/s");
  svg.BeginClip(kLeft, kTop, kRight - kLeft, kBottom - kTop);
  double top_peak = 0.0;
  for (const ComputePeak& p : report.roofline.peaks) {
    if (!p.available) continue;
    const double gflops = 2e-9 * p.macs_per_s;
    top_peak = std::max(top_peak, gflops);
    const double py = y.Map(gflops);
    svg.Line(kLeft, py, kRight, py, "#555", 1.2, "6,3");
    // Right-aligned: the bandwidth diagonals start at the left.
    svg.Text(kRight - 6, py - 4,
             absl::StrFormat("%s %.0f GFLOP/s", p.key, gflops), 11, "end",
             "#555");
  }
  if (top_peak <= 0) top_peak = y_hi;
  // The slope of any bandwidth line in pixels, for its label.
  const double angle =
      std::atan2(y.Map(10.0) - y.Map(1.0), x.Map(10.0) - x.Map(1.0)) * 180 /
      M_PI;
  for (const ReadBandwidth& b : report.roofline.bandwidths) {
    if (!absl::EndsWith(b.label, "-sized")) continue;  // the cache levels
    const double gbps = b.bytes_per_s * 1e-9;
    // The roofline: bandwidth-bound up to the highest peak.
    const double x_a = std::max(x_lo, y_lo / gbps);
    const double x_b = std::min(x_hi, top_peak / gbps);
    if (x_a >= x_b) continue;
    svg.Polyline(
        {{x.Map(x_a), y.Map(gbps * x_a)}, {x.Map(x_b), y.Map(gbps * x_b)}},
        "#888", 1.2, "2,3");
    const double label_x = std::sqrt(x_a * x_b);
    svg.Text(x.Map(label_x), y.Map(gbps * label_x) - 5,
             absl::StrFormat("%s read %.0f GB/s", b.label, gbps), 11, "middle",
             "#666", angle);
  }
  for (const BenchRow* r : points) {
    const std::string color = ImplColor(r->impl);
    svg.Circle(x.Map(Intensity(*r)), y.Map(r->gflops), 4,
               r->cold ? "white" : color, color);
  }
  svg.EndClip();
  double ly = kTop + 10;
  for (const std::string& impl : report.impls) {
    const bool any =
        std::any_of(points.begin(), points.end(),
                    [&](const BenchRow* r) { return r->impl == impl; });
    svg.Circle(kRight + 24, ly, 5, ImplColor(impl), ImplColor(impl));
    svg.Text(kRight + 36, ly + 4,
             any ? ImplTitle(impl) : ImplTitle(impl) + " (n/a)", 12);
    ly += 22;
  }
  svg.Circle(kRight + 24, ly, 5, "white", "#444");
  svg.Text(kRight + 36, ly + 4, "hollow: cold cache", 12);
  svg.Text(kRight + 16, ly + 30, "dashed: measured peaks", 11, "start", "#555");
  svg.Text(kRight + 16, ly + 48, "dotted: measured read bandwidth", 11, "start",
           "#555");
  return svg.Finish();
}

std::string SpeedupSvg(const BenchReport& report) {
  // (impl, peer) -> M -> speedups of the layers (hot rows).
  std::map<std::pair<std::string, bool>, std::map<int64_t, std::vector<double>>>
      series;
  double x_lo = 1e300, x_hi = 0, y_lo = 1.0, y_hi = 1.0;
  for (const BenchRow& r : report.rows) {
    if (!r.ok() || r.cold) continue;
    if (r.impl != kImplW4a16 && r.impl != kImplDa8w4) continue;
    for (bool bf16 : {false, true}) {
      const double s = bf16 ? r.speedup_vs_bf16 : r.speedup_vs_u8s8;
      if (s <= 0) continue;
      series[{r.impl, bf16}][r.m].push_back(s);
      x_lo = std::min<double>(x_lo, r.m);
      x_hi = std::max<double>(x_hi, r.m);
      y_lo = std::min(y_lo, s);
      y_hi = std::max(y_hi, s);
    }
  }
  Pad(&x_lo, &x_hi, 1.5, 1.0, 256.0);
  Pad(&y_lo, &y_hi, 1.3, 1.0, 1.0);
  const LogAxis x{x_lo, x_hi, kLeft, kRight}, y{y_lo, y_hi, kBottom, kTop};

  SvgCanvas svg(kWidth, kHeight);
  svg.Text(kWidth / 2.0, 28, Title(report, "Speedup over oneDNN (hot)"), 15,
           "middle");
  DrawLogAxes(&svg, x, y, "M (rows of x)",
              "speedup (oneDNN time / w4jit time)");
  svg.Line(kLeft, y.Map(1.0), kRight, y.Map(1.0), "#444", 1.2, "4,3");
  if (series.empty()) {
    svg.Text((kLeft + kRight) / 2, (kTop + kBottom) / 2,
             "no speedups: oneDNN peers not timed or unavailable", 14, "middle",
             "#a00");
  }
  double ly = kTop + 10;
  for (const auto& [key, by_m] : series) {
    const auto& [impl, bf16] = key;
    const std::string color = ImplColor(impl);
    const std::string dash = bf16 ? "6,4" : "";
    std::vector<std::pair<double, double>> line;
    for (const auto& [m, values] : by_m) {
      double log_sum = 0.0;
      for (double v : values) {
        log_sum += std::log(v);
        svg.Circle(x.Map(m), y.Map(v), 2, color, color);
      }
      const double geomean = std::exp(log_sum / values.size());
      line.emplace_back(x.Map(m), y.Map(geomean));
      svg.Circle(x.Map(m), y.Map(geomean), 4.5, "white", color);
    }
    svg.Polyline(line, color, 2.0, dash);
    svg.Line(kRight + 14, ly, kRight + 40, ly, color, 2.0, dash);
    svg.Text(kRight + 46, ly + 4,
             absl::StrCat(ImplTitle(impl), " vs ", bf16 ? "bf16" : "u8s8"), 12);
    ly += 22;
  }
  svg.Text(kRight + 14, ly + 8, "line: geomean over layers", 11, "start",
           "#555");
  svg.Text(kRight + 14, ly + 26, "dots: single layers", 11, "start", "#555");
  return svg.Finish();
}

}  // namespace w4jit::perf
