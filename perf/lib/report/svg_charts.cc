#include "perf/lib/report/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/report/svg_canvas.h"

namespace w4jit::perf {
namespace {

constexpr int kWidth = 960, kHeight = 600;
constexpr double kLeft = 80, kRight = 700, kTop = 60, kBottom = 530;
// Ceiling labels: font size and the least room between two.
constexpr int kLabelSize = 11;
constexpr double kLabelGap = 2;

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

// The dash of the AMX tile peaks' lines (the vector peaks': "6,3").
constexpr const char* kTileDash = "12,3,2,3";

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
  // Peak labels: right-aligned above their lines; where lines lie close
  // (f32 FMA ymm and zmm often measure the same) they stack upwards, each
  // moved one with a leader to its line.
  std::vector<double> peak_y, label_y, label_h;
  std::vector<std::string> peak_text;
  bool tile_peaks = false;
  for (const ComputePeak& p : report.roofline.peaks) {
    if (!p.available) continue;
    const double gflops = 2e-9 * p.macs_per_s;
    top_peak = std::max(top_peak, gflops);
    const double py = y.Map(gflops);
    // AMX peaks bound only the peers that run AMX: drawn apart from the
    // vector peaks that bound w4jit's kernels.
    const bool tiles = IsAmxPeak(p);
    tile_peaks = tile_peaks || tiles;
    svg.Line(kLeft, py, kRight, py, "#555", 1.2, tiles ? kTileDash : "6,3");
    peak_y.push_back(py);
    peak_text.push_back(absl::StrFormat("%s %.0f GFLOP/s", p.key, gflops));
    // The centre of the label's box with its baseline 4 px above the line.
    label_y.push_back(py - 4 - (kTextAscent - kTextDescent) / 2 * kLabelSize);
    label_h.push_back((kTextAscent + kTextDescent) * kLabelSize);
  }
  const std::vector<double> placed =
      SpreadApart(label_y, label_h, kLabelGap, kTop + 2, kBottom - 2,
                  /*towards_lo=*/true);
  // Labels are drawn after the lines, with the points over them.
  std::vector<std::function<void()>> labels;
  for (size_t i = 0; i < placed.size(); ++i) {
    const double baseline =
        placed[i] + (kTextAscent - kTextDescent) / 2 * kLabelSize;
    // Moved off its line: a leader from the label's end to the line.
    const bool moved = std::fabs(placed[i] - label_y[i]) > 1.0;
    labels.push_back([&, i, baseline, moved] {
      svg.Text(moved ? kRight - 14 : kRight - 6, baseline, peak_text[i],
               kLabelSize, "end", "#555", 0.0, /*backdrop=*/true);
      if (moved) {
        svg.Line(kRight - 12, placed[i], kRight - 2, peak_y[i], "#888");
      }
    });
  }
  if (top_peak <= 0) top_peak = y_hi;
  // The bandwidth lines are parallel: in a frame turned to their slope
  // (u along them, v across, upwards), every label is an upright box.
  const double angle =
      std::atan2(y.Map(10.0) - y.Map(1.0), x.Map(10.0) - x.Map(1.0));
  const double du = std::cos(angle), dv = std::sin(angle);
  const auto u_of = [&](double px, double py) { return px * du + py * dv; };
  const auto v_of = [&](double px, double py) { return px * dv - py * du; };
  struct BandwidthLabel {
    std::string text;
    double u_lo, u_hi;  // the visible line's extent along u
    double v;           // the line's offset across
    double wanted, width;
  };
  std::vector<BandwidthLabel> bw_labels;
  for (const ReadBandwidth& b : report.roofline.bandwidths) {
    if (!absl::EndsWith(b.label, "-sized")) continue;  // the cache levels
    const double gbps = b.bytes_per_s * 1e-9;
    // The roofline: bandwidth-bound up to the highest peak.
    const double x_a = std::max(x_lo, y_lo / gbps);
    const double x_b = std::min(x_hi, top_peak / gbps);
    if (x_a >= x_b) continue;
    const double ax = x.Map(x_a), ay = y.Map(gbps * x_a);
    const double bx = x.Map(x_b), by = y.Map(gbps * x_b);
    svg.Polyline({{ax, ay}, {bx, by}}, "#888", 1.2, "2,3");
    BandwidthLabel l;
    l.text = absl::StrFormat("%s read %.0f GB/s", b.label, gbps);
    l.u_lo = u_of(ax, ay);
    l.u_hi = u_of(bx, by);
    l.v = v_of(ax, ay);
    l.wanted = (l.u_lo + l.u_hi) / 2;
    l.width = TextWidth(l.text, kLabelSize);
    bw_labels.push_back(l);
  }
  // Each label's baseline sits 4 px above its line, but of two lines
  // closer than a label is high the lower one's goes 4 px below: each label
  // then touches only its own line.
  std::vector<size_t> by_v(bw_labels.size());
  for (size_t i = 0; i < by_v.size(); ++i) by_v[i] = i;
  std::sort(by_v.begin(), by_v.end(), [&](size_t a, size_t b) {
    return bw_labels[a].v < bw_labels[b].v;
  });
  const double label_height = (kTextAscent + kTextDescent) * kLabelSize;
  std::vector<double> baseline(bw_labels.size());
  for (size_t j = 0; j < by_v.size(); ++j) {
    const double v = bw_labels[by_v[j]].v;
    const bool close_above =
        j + 1 < by_v.size() &&
        bw_labels[by_v[j + 1]].v - v < label_height + kLabelGap;
    const bool close_below =
        j > 0 && v - bw_labels[by_v[j - 1]].v < label_height + kLabelGap;
    baseline[by_v[j]] =
        close_above && !close_below ? v - 4 - kTextAscent * kLabelSize : v + 4;
  }
  // Labels whose boxes still meet across (three lines close together, or
  // a label below its line near one above the next) slide apart along
  // their lines, as one run each.
  std::sort(by_v.begin(), by_v.end(),
            [&](size_t a, size_t b) { return baseline[a] < baseline[b]; });
  std::vector<double> label_u(bw_labels.size());
  for (size_t first = 0; first < by_v.size();) {
    size_t end = first + 1;
    while (end < by_v.size() && baseline[by_v[end]] - baseline[by_v[end - 1]] <
                                    label_height + kLabelGap) {
      ++end;
    }
    std::vector<double> wanted, widths;
    double lo = -1e300, hi = 1e300;
    for (size_t j = first; j < end; ++j) {
      const BandwidthLabel& l = bw_labels[by_v[j]];
      wanted.push_back(l.wanted);
      widths.push_back(l.width);
      lo = std::max(lo, l.u_lo);
      hi = std::min(hi, l.u_hi);
    }
    const std::vector<double> u = SpreadApart(wanted, widths, 3 * kLabelGap,
                                              lo + kLabelGap, hi - kLabelGap);
    for (size_t j = first; j < end; ++j) label_u[by_v[j]] = u[j - first];
    first = end;
  }
  for (size_t i = 0; i < bw_labels.size(); ++i) {
    // Back from the turned frame to the page.
    const double u = label_u[i], v = baseline[i];
    labels.push_back([&, i, u, v] {
      svg.Text(u * du + v * dv, u * dv - v * du, bw_labels[i].text, kLabelSize,
               "middle", "#666", angle * 180 / M_PI,
               /*backdrop=*/true);
    });
  }
  for (const auto& draw : labels) draw();
  for (const BenchRow* r : points) {
    const std::string color = ImplColor(r->impl);
    const double px = x.Map(Intensity(*r)), py = y.Map(r->gflops);
    const std::string fill = r->cold ? "white" : color;
    // The tooltip: the row and its share of the bound that binds it.
    std::string title =
        absl::StrFormat("%s %s M=%d %s: %.1f GFLOP/s", ImplTitle(r->impl),
                        r->layer, r->m, r->cold ? "cold" : "hot", r->gflops);
    if (!r->bound.empty()) {
      absl::StrAppendFormat(&title, ", %.0f%% of the %s bound (%s)",
                            r->roofline_pct, r->bound, r->roofline_basis);
    }
    if (r->bound == kBoundCompute) {
      svg.Rect(px - 3.6, py - 3.6, 7.2, 7.2, fill, color, title);
    } else {
      svg.Circle(px, py, 4, fill, color, title);
    }
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
  ly += 22;
  svg.Circle(kRight + 24, ly, 4, "#444", "#444");
  svg.Text(kRight + 36, ly + 4, "memory bound binds", 12);
  ly += 22;
  svg.Rect(kRight + 20.4, ly - 3.6, 7.2, 7.2, "#444", "#444");
  svg.Text(kRight + 36, ly + 4, "compute bound binds", 12);
  svg.Text(kRight + 16, ly + 30, "dashed: measured peaks", 11, "start", "#555");
  if (tile_peaks) {
    ly += 18;
    svg.Line(kRight + 16, ly + 26, kRight + 40, ly + 26, "#555", 1.2,
             kTileDash);
    svg.Text(kRight + 46, ly + 30, "AMX tile peaks (peers)", 11, "start",
             "#555");
  }
  svg.Text(kRight + 16, ly + 48, "dotted: measured read bandwidth", 11, "start",
           "#555");
  svg.Text(kRight + 16, ly + 66, "(hover a point: its share of", 11, "start",
           "#555");
  svg.Text(kRight + 16, ly + 82, "the bound that binds it)", 11, "start",
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
