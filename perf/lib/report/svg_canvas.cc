#include "perf/lib/report/svg_canvas.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace w4jit::perf {
namespace {

std::string Px(double v) { return absl::StrFormat("%.1f", v); }

std::string DashAttr(const std::string& dash) {
  return dash.empty() ? "" : absl::StrCat(" stroke-dasharray=\"", dash, "\"");
}

// The end of an element whose attributes are written: "/>" or, with a
// tooltip, "><title>...</title></name>".
std::string Closing(const char* name, const std::string& title) {
  if (title.empty()) return "/>\n";
  return absl::StrCat("><title>", XmlEscape(title), "</title></", name, ">\n");
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgCanvas::SvgCanvas(int width, int height) : width_(width), height_(height) {}

void SvgCanvas::Line(double x1, double y1, double x2, double y2,
                     const std::string& stroke, double width,
                     const std::string& dash) {
  absl::StrAppend(&body_, "<line x1=\"", Px(x1), "\" y1=\"", Px(y1), "\" x2=\"",
                  Px(x2), "\" y2=\"", Px(y2), "\" stroke=\"", XmlEscape(stroke),
                  "\" stroke-width=\"", Px(width), "\"", DashAttr(dash),
                  "/>\n");
}

void SvgCanvas::Polyline(const std::vector<std::pair<double, double>>& points,
                         const std::string& stroke, double width,
                         const std::string& dash) {
  std::string pts;
  for (const auto& [x, y] : points)
    absl::StrAppend(&pts, Px(x), ",", Px(y), " ");
  absl::StrAppend(&body_, "<polyline points=\"", pts,
                  "\" fill=\"none\" stroke=\"", XmlEscape(stroke),
                  "\" stroke-width=\"", Px(width), "\"", DashAttr(dash),
                  "/>\n");
}

void SvgCanvas::Circle(double cx, double cy, double r, const std::string& fill,
                       const std::string& stroke, const std::string& title) {
  absl::StrAppend(&body_, "<circle cx=\"", Px(cx), "\" cy=\"", Px(cy),
                  "\" r=\"", Px(r), "\" fill=\"", XmlEscape(fill),
                  "\" stroke=\"", XmlEscape(stroke), "\"",
                  Closing("circle", title));
}

void SvgCanvas::Rect(double x, double y, double w, double h,
                     const std::string& fill, const std::string& stroke,
                     const std::string& title) {
  absl::StrAppend(&body_, "<rect x=\"", Px(x), "\" y=\"", Px(y), "\" width=\"",
                  Px(w), "\" height=\"", Px(h), "\" fill=\"", XmlEscape(fill),
                  "\" stroke=\"", XmlEscape(stroke), "\"",
                  Closing("rect", title));
}

void SvgCanvas::Text(double x, double y, const std::string& text, int size,
                     const std::string& anchor, const std::string& fill,
                     double rotate, bool backdrop) {
  std::string transform;
  if (rotate != 0.0) {
    transform = absl::StrCat(" transform=\"rotate(", Px(rotate), " ", Px(x),
                             " ", Px(y), ")\"");
  }
  if (backdrop) {
    const double w = TextWidth(text, size);
    const double left = anchor == "middle" ? x - w / 2
                        : anchor == "end"  ? x - w
                                           : x;
    absl::StrAppend(&body_, "<rect x=\"", Px(left), "\" y=\"",
                    Px(y - kTextAscent * size), "\" width=\"", Px(w),
                    "\" height=\"", Px((kTextAscent + kTextDescent) * size),
                    "\" fill=\"white\" fill-opacity=\"0.85\"", transform,
                    "/>\n");
  }
  absl::StrAppend(&body_, "<text x=\"", Px(x), "\" y=\"", Px(y),
                  "\" font-size=\"", size, "\" text-anchor=\"", anchor,
                  "\" fill=\"", XmlEscape(fill), "\"", transform, ">",
                  XmlEscape(text), "</text>\n");
}

void SvgCanvas::BeginClip(double x, double y, double w, double h) {
  const std::string id = absl::StrCat("clip", clips_++);
  absl::StrAppend(&body_, "<clipPath id=\"", id, "\"><rect x=\"", Px(x),
                  "\" y=\"", Px(y), "\" width=\"", Px(w), "\" height=\"", Px(h),
                  "\"/></clipPath>\n<g clip-path=\"url(#", id, ")\">\n");
}

void SvgCanvas::EndClip() { body_ += "</g>\n"; }

std::string SvgCanvas::Finish() const {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"",
      width_, "\" height=\"", height_, "\" viewBox=\"0 0 ", width_, " ",
      height_, "\" font-family=\"sans-serif\">\n<rect x=\"0\" y=\"0\" width=\"",
      width_, "\" height=\"", height_, "\" fill=\"white\"/>\n", body_,
      "</svg>\n");
}

double LogAxis::Map(double v) const {
  const double t = (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  return px_lo + t * (px_hi - px_lo);
}

std::vector<double> LogAxis::Ticks() const {
  std::vector<double> ticks;
  const bool fine = hi / lo < 1000.0;
  for (int e = static_cast<int>(std::floor(std::log10(lo)));
       e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      if (!fine && mantissa != 1.0) continue;
      const double v = mantissa * std::pow(10.0, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push_back(v);
    }
  }
  return ticks;
}

std::string ShortNumber(double v) {
  if (v >= 1e9) return absl::StrFormat("%gG", v / 1e9);
  if (v >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

double TextWidth(const std::string& text, int size) {
  return 0.62 * size * static_cast<double>(text.size());
}

std::vector<double> SpreadApart(const std::vector<double>& wanted,
                                const std::vector<double>& sizes, double gap,
                                double lo, double hi, bool towards_lo) {
  std::vector<size_t> order(wanted.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return wanted[a] < wanted[b]; });
  // Blocks of neighbours laid end to end: the first member (in `order`),
  // how many, and where the block starts.
  struct Block {
    size_t first, count;
    double start, length;
  };
  // Puts a block where its members want it on average (each member's
  // wanted centre less its offset inside the block), inside [lo, hi].
  const auto place = [&](Block* b) {
    double sum = 0.0, offset = 0.0, least = 1e300;
    for (size_t j = b->first; j < b->first + b->count; ++j) {
      const double size = sizes[order[j]];
      const double start = wanted[order[j]] - (offset + size / 2);
      sum += start;
      least = std::min(least, start);
      offset += size + gap;
    }
    b->length = offset - gap;
    b->start = towards_lo ? least : sum / static_cast<double>(b->count);
    b->start = std::max(std::min(b->start, hi - b->length), lo);
  };
  std::vector<Block> blocks;
  for (size_t j = 0; j < order.size(); ++j) {
    blocks.push_back({j, 1, 0.0, 0.0});
    place(&blocks.back());
    // Merge with the block before while the two would overlap.
    while (blocks.size() > 1) {
      Block& prev = blocks[blocks.size() - 2];
      const Block& last = blocks.back();
      if (prev.start + prev.length + gap <= last.start) break;
      prev.count += last.count;
      blocks.pop_back();
      place(&blocks.back());
    }
  }
  std::vector<double> centres(wanted.size());
  for (const Block& b : blocks) {
    double at = b.start;
    for (size_t j = b.first; j < b.first + b.count; ++j) {
      const double size = sizes[order[j]];
      centres[order[j]] = at + size / 2;
      at += size + gap;
    }
  }
  return centres;
}

void DrawLogAxes(SvgCanvas* svg, const LogAxis& x, const LogAxis& y,
                 const std::string& x_title, const std::string& y_title) {
  const double left = x.px_lo, right = x.px_hi;
  const double bottom = y.px_lo, top = y.px_hi;
  for (double t : x.Ticks()) {
    const double px = x.Map(t);
    svg->Line(px, top, px, bottom, "#e4e4e4");
    svg->Text(px, bottom + 16, ShortNumber(t), 11, "middle");
  }
  for (double t : y.Ticks()) {
    const double py = y.Map(t);
    svg->Line(left, py, right, py, "#e4e4e4");
    svg->Text(left - 6, py + 4, ShortNumber(t), 11, "end");
  }
  svg->Rect(left, top, right - left, bottom - top, "none", "#444");
  svg->Text((left + right) / 2, bottom + 36, x_title, 13, "middle");
  svg->Text(left - 48, (top + bottom) / 2, y_title, 13, "middle", "#222",
            -90.0);
}

}  // namespace w4jit::perf
