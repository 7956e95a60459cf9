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

// A label drawn after the lines, so that the points go over it: text on
// a white backdrop, and for a peak label moved off its line a leader from
// the label's end to the line.
struct PendingLabel {
  double x, y;
  std::string text;
  std::string anchor;
  std::string color;
  double rotate = 0.0;
  bool leader = false;
  double leader_from_y = 0.0, leader_to_y = 0.0;
};

void DrawLabel(const PendingLabel& l, SvgCanvas* svg) {
  svg->Text(l.x, l.y, l.text, kLabelSize, l.anchor, l.color, l.rotate,
            /*backdrop=*/true);
  if (l.leader) {
    svg->Line(kRight - 12, l.leader_from_y, kRight - 2, l.leader_to_y, "#888");
  }
}

// The rows the roofline plots and the axes that hold them and the peaks.
struct RooflineFrame {
  std::vector<const BenchRow*> points;
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;  // padded
  LogAxis x, y;
};

RooflineFrame FrameRoofline(const BenchReport& report) {
  RooflineFrame f;
  for (const BenchRow& r : report.rows) {
    if (!r.ok() || r.gflops <= 0 || r.weight_bytes <= 0) continue;
    f.points.push_back(&r);
    f.x_lo = std::min(f.x_lo, Intensity(r));
    f.x_hi = std::max(f.x_hi, Intensity(r));
    f.y_lo = std::min(f.y_lo, r.gflops);
    f.y_hi = std::max(f.y_hi, r.gflops);
  }
  for (const ComputePeak& p : report.roofline.peaks) {
    if (p.available) f.y_hi = std::max(f.y_hi, 2e-9 * p.macs_per_s);
  }
  Pad(&f.x_lo, &f.x_hi, 2.0, 1.0, 1000.0);
  Pad(&f.y_lo, &f.y_hi, 2.0, 1.0, 1000.0);
  f.x = LogAxis{f.x_lo, f.x_hi, kLeft, kRight};
  f.y = LogAxis{f.y_lo, f.y_hi, kBottom, kTop};
  return f;
}

// What the peak lines leave for the rest of the chart.
struct PeakLines {
  double top_peak = 0.0;  // the highest, in GFLOP/s (0: none)
  bool tile_peaks = false;
};

// Draws the available compute peaks' lines and queues their labels:
// right-aligned above their lines; where lines lie close (f32 FMA ymm and
// zmm often measure the same) they stack upwards, each moved one with a
// leader to its line.
PeakLines DrawPeakLines(const BenchReport& report, const LogAxis& y,
                        SvgCanvas* svg, std::vector<PendingLabel>* labels) {
  PeakLines lines;
  std::vector<double> peak_y, label_y, label_h;
  std::vector<std::string> peak_text;
  for (const ComputePeak& p : report.roofline.peaks) {
    if (!p.available) continue;
    const double gflops = 2e-9 * p.macs_per_s;
    lines.top_peak = std::max(lines.top_peak, gflops);
    const double py = y.Map(gflops);
    // AMX peaks bound only the peers that run AMX: drawn apart from the
    // vector peaks that bound w4jit's kernels.
    const bool tiles = IsAmxPeak(p);
    lines.tile_peaks = lines.tile_peaks || tiles;
    svg->Line(kLeft, py, kRight, py, "#555", 1.2, tiles ? kTileDash : "6,3");
    peak_y.push_back(py);
    peak_text.push_back(absl::StrFormat("%s %.0f GFLOP/s", p.key, gflops));
    // The centre of the label's box with its baseline 4 px above the line.
    label_y.push_back(py - 4 - (kTextAscent - kTextDescent) / 2 * kLabelSize);
    label_h.push_back((kTextAscent + kTextDescent) * kLabelSize);
  }
  const std::vector<double> placed =
      SpreadApart(label_y, label_h, kLabelGap, kTop + 2, kBottom - 2,
                  /*towards_lo=*/true);
  for (size_t i = 0; i < placed.size(); ++i) {
    PendingLabel l;
    // Moved off its line: a leader from the label's end to the line.
    l.leader = std::fabs(placed[i] - label_y[i]) > 1.0;
    l.x = l.leader ? kRight - 14 : kRight - 6;
    l.y = placed[i] + (kTextAscent - kTextDescent) / 2 * kLabelSize;
    l.text = peak_text[i];
    l.anchor = "end";
    l.color = "#555";
    l.leader_from_y = placed[i];
    l.leader_to_y = peak_y[i];
    labels->push_back(std::move(l));
  }
  return lines;
}

// The bandwidth lines are parallel: in a frame turned to their slope
// (u along them, v across, upwards), every label is an upright box.
struct SlopeFrame {
  double angle, du, dv;
  explicit SlopeFrame(const RooflineFrame& f)
      : angle(std::atan2(f.y.Map(10.0) - f.y.Map(1.0),
                         f.x.Map(10.0) - f.x.Map(1.0))),
        du(std::cos(angle)),
        dv(std::sin(angle)) {}
  double U(double px, double py) const { return px * du + py * dv; }
  double V(double px, double py) const { return px * dv - py * du; }
};

struct BandwidthLabel {
  std::string text;
  double u_lo, u_hi;  // the visible line's extent along u
  double v;           // the line's offset across
  double wanted, width;
};

// Draws the cache levels' read bandwidth lines (bandwidth-bound up to the
// highest peak) and returns their labels, not yet placed.
std::vector<BandwidthLabel> DrawBandwidthLines(const BenchReport& report,
                                               const RooflineFrame& f,
                                               const SlopeFrame& slope,
                                               double top_peak,
                                               SvgCanvas* svg) {
  std::vector<BandwidthLabel> bw_labels;
  for (const ReadBandwidth& b : report.roofline.bandwidths) {
    if (!absl::EndsWith(b.label, "-sized")) continue;  // the cache levels
    const double gbps = b.bytes_per_s * 1e-9;
    const double x_a = std::max(f.x_lo, f.y_lo / gbps);
    const double x_b = std::min(f.x_hi, top_peak / gbps);
    if (x_a >= x_b) continue;
    const double ax = f.x.Map(x_a), ay = f.y.Map(gbps * x_a);
    const double bx = f.x.Map(x_b), by = f.y.Map(gbps * x_b);
    svg->Polyline({{ax, ay}, {bx, by}}, "#888", 1.2, "2,3");
    BandwidthLabel l;
    l.text = absl::StrFormat("%s read %.0f GB/s", b.label, gbps);
    l.u_lo = slope.U(ax, ay);
    l.u_hi = slope.U(bx, by);
    l.v = slope.V(ax, ay);
    l.wanted = (l.u_lo + l.u_hi) / 2;
    l.width = TextWidth(l.text, kLabelSize);
    bw_labels.push_back(l);
  }
  return bw_labels;
}

// Each label's baseline (v) sits 4 px above its line, but of two lines
// closer than a label is high the lower one's goes 4 px below: each label
// then touches only its own line.
std::vector<double> BandwidthBaselines(
    const std::vector<BandwidthLabel>& bw_labels) {
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
  return baseline;
}

// Where along its line (u) each label goes: labels whose boxes still meet
// across (three lines close together, or a label below its line near one
// above the next) slide apart along their lines, as one run each.
std::vector<double> BandwidthLabelU(
    const std::vector<BandwidthLabel>& bw_labels,
    const std::vector<double>& baseline) {
  std::vector<size_t> by_v(bw_labels.size());
  for (size_t i = 0; i < by_v.size(); ++i) by_v[i] = i;
  std::sort(by_v.begin(), by_v.end(), [&](size_t a, size_t b) {
    return bw_labels[a].v < bw_labels[b].v;
  });
  std::sort(by_v.begin(), by_v.end(),
            [&](size_t a, size_t b) { return baseline[a] < baseline[b]; });
  const double label_height = (kTextAscent + kTextDescent) * kLabelSize;
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
  return label_u;
}

// Draws the bandwidth lines and queues their labels, placed.
void DrawBandwidths(const BenchReport& report, const RooflineFrame& f,
                    double top_peak, SvgCanvas* svg,
                    std::vector<PendingLabel>* labels) {
  const SlopeFrame slope(f);
  const std::vector<BandwidthLabel> bw_labels =
      DrawBandwidthLines(report, f, slope, top_peak, svg);
  const std::vector<double> baseline = BandwidthBaselines(bw_labels);
  const std::vector<double> label_u = BandwidthLabelU(bw_labels, baseline);
  for (size_t i = 0; i < bw_labels.size(); ++i) {
    // Back from the turned frame to the page.
    const double u = label_u[i], v = baseline[i];
    PendingLabel l;
    l.x = u * slope.du + v * slope.dv;
    l.y = u * slope.dv - v * slope.du;
    l.text = bw_labels[i].text;
    l.anchor = "middle";
    l.color = "#666";
    l.rotate = slope.angle * 180 / M_PI;
    labels->push_back(std::move(l));
  }
}

// The rows: a circle where the memory bound binds, a square where the
// compute bound does, hollow when cold; the tooltip says the row and its
// share of the bound that binds it.
void DrawRooflinePoints(const RooflineFrame& f, SvgCanvas* svg) {
  for (const BenchRow* r : f.points) {
    const std::string color = ImplColor(r->impl);
    const double px = f.x.Map(Intensity(*r)), py = f.y.Map(r->gflops);
    const std::string fill = r->cold ? "white" : color;
    std::string title =
        absl::StrFormat("%s %s M=%d %s: %.1f GFLOP/s", ImplTitle(r->impl),
                        r->layer, r->m, r->cold ? "cold" : "hot", r->gflops);
    if (!r->bound.empty()) {
      absl::StrAppendFormat(&title, ", %.0f%% of the %s bound (%s)",
                            r->roofline_pct, r->bound, r->roofline_basis);
    }
    if (r->bound == kBoundCompute) {
      svg->Rect(px - 3.6, py - 3.6, 7.2, 7.2, fill, color, title);
    } else {
      svg->Circle(px, py, 4, fill, color, title);
    }
  }
}

// The legend right of the plot: the impls (n/a where no row), the marks,
// the lines.
void DrawRooflineLegend(const BenchReport& report,
                        const std::vector<const BenchRow*>& points,
                        bool tile_peaks, SvgCanvas* svg) {
  SvgCanvas& s = *svg;
  double ly = kTop + 10;
  for (const std::string& impl : report.impls) {
    const bool any =
        std::any_of(points.begin(), points.end(),
                    [&](const BenchRow* r) { return r->impl == impl; });
    s.Circle(kRight + 24, ly, 5, ImplColor(impl), ImplColor(impl));
    s.Text(kRight + 36, ly + 4,
           any ? ImplTitle(impl) : ImplTitle(impl) + " (n/a)", 12);
    ly += 22;
  }
  s.Circle(kRight + 24, ly, 5, "white", "#444");
  s.Text(kRight + 36, ly + 4, "hollow: cold cache", 12);
  ly += 22;
  s.Circle(kRight + 24, ly, 4, "#444", "#444");
  s.Text(kRight + 36, ly + 4, "memory bound binds", 12);
  ly += 22;
  s.Rect(kRight + 20.4, ly - 3.6, 7.2, 7.2, "#444", "#444");
  s.Text(kRight + 36, ly + 4, "compute bound binds", 12);
  s.Text(kRight + 16, ly + 30, "dashed: measured peaks", 11, "start", "#555");
  if (tile_peaks) {
    ly += 18;
    s.Line(kRight + 16, ly + 26, kRight + 40, ly + 26, "#555", 1.2, kTileDash);
    s.Text(kRight + 46, ly + 30, "AMX tile peaks (peers)", 11, "start", "#555");
  }
  s.Text(kRight + 16, ly + 48, "dotted: measured read bandwidth", 11, "start",
         "#555");
  s.Text(kRight + 16, ly + 66, "(hover a point: its share of", 11, "start",
         "#555");
  s.Text(kRight + 16, ly + 82, "the bound that binds it)", 11, "start", "#555");
}

}  // namespace

std::string RooflineSvg(const BenchReport& report) {
  const RooflineFrame f = FrameRoofline(report);
  SvgCanvas svg(kWidth, kHeight);
  svg.Text(kWidth / 2.0, 28, Title(report, "Roofline"), 15, "middle");
  DrawLogAxes(&svg, f.x, f.y, "arithmetic intensity (FLOP per weight byte)",
              "GFLOP/s");
  svg.BeginClip(kLeft, kTop, kRight - kLeft, kBottom - kTop);
  std::vector<PendingLabel> labels;
  const PeakLines peaks = DrawPeakLines(report, f.y, &svg, &labels);
  DrawBandwidths(report, f, peaks.top_peak > 0 ? peaks.top_peak : f.y_hi, &svg,
                 &labels);
  for (const PendingLabel& l : labels) DrawLabel(l, &svg);
  DrawRooflinePoints(f, &svg);
  svg.EndClip();
  DrawRooflineLegend(report, f.points, peaks.tile_peaks, &svg);
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
