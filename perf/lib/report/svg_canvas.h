// A minimal SVG writer and log-scale axes, enough for the bench charts
// without a plotting stack.
#ifndef W4JIT_PERF_LIB_REPORT_SVG_CANVAS_H_
#define W4JIT_PERF_LIB_REPORT_SVG_CANVAS_H_

#include <string>
#include <utility>
#include <vector>

namespace w4jit::perf {

// &, <, >, " and ' as entities.
std::string XmlEscape(const std::string& text);

class SvgCanvas {
 public:
  SvgCanvas(int width, int height);

  void Line(double x1, double y1, double x2, double y2,
            const std::string& stroke, double width = 1.0,
            const std::string& dash = "");
  void Polyline(const std::vector<std::pair<double, double>>& points,
                const std::string& stroke, double width = 1.5,
                const std::string& dash = "");
  // A non-empty `title` is the shape's tooltip (an SVG <title> child).
  void Circle(double cx, double cy, double r, const std::string& fill,
              const std::string& stroke, const std::string& title = "");
  void Rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& stroke, const std::string& title = "");
  // anchor: "start", "middle" or "end"; rotate in degrees about (x, y).
  // backdrop: a white box under the text (TextWidth wide, kTextAscent and
  // kTextDescent high, turned with it), so that it stays readable where it
  // crosses a line.
  void Text(double x, double y, const std::string& text, int size = 12,
            const std::string& anchor = "start",
            const std::string& fill = "#222", double rotate = 0.0,
            bool backdrop = false);
  // Clips everything drawn until EndClip() to the rectangle.
  void BeginClip(double x, double y, double w, double h);
  void EndClip();

  // The complete document: XML declaration, <svg> root, a white
  // background and everything drawn.
  std::string Finish() const;

 private:
  int width_, height_;
  int clips_ = 0;
  std::string body_;
};

// Maps [lo, hi] logarithmically onto pixels [px_lo, px_hi] (px_hi may be
// smaller, for a y axis that grows upwards).
struct LogAxis {
  double lo, hi, px_lo, px_hi;
  double Map(double v) const;
  // Tick values inside [lo, hi]: 1-2-5 steps when it spans under three
  // decades, else powers of ten.
  std::vector<double> Ticks() const;
};

// The box a line of chart text takes, for keeping labels apart: from
// kTextAscent * size above its baseline to kTextDescent * size below, and
// TextWidth() wide, an estimate of 0.62 em a character (a little wider
// than the average glyph of the usual sans-serif fonts).
inline constexpr double kTextAscent = 0.8;
inline constexpr double kTextDescent = 0.25;
double TextWidth(const std::string& text, int size);

// Places intervals of the lengths `sizes` on a line, each as near the
// centre it `wanted` as it can be with `gap` between neighbours and none
// overlapping: a run of intervals that would overlap moves as one block,
// centred on what its members want on average (with `towards_lo`: moved
// only towards lo, none ending past the centre it wanted), and kept inside
// [lo, hi] where it fits. The order along the line follows `wanted`.
// Returns the centres, in the order of the input.
std::vector<double> SpreadApart(const std::vector<double>& wanted,
                                const std::vector<double>& sizes, double gap,
                                double lo, double hi, bool towards_lo = false);

// Frame, grid, tick labels and axis titles of a log-log plot.
void DrawLogAxes(SvgCanvas* svg, const LogAxis& x, const LogAxis& y,
                 const std::string& x_title, const std::string& y_title);

// "0.5", "20", "1k", "2M": short tick labels.
std::string ShortNumber(double v);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_SVG_CANVAS_H_
