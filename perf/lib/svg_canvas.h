// A minimal SVG writer and log-scale axes, enough for the bench charts
// without a plotting stack.
#ifndef W4JIT_PERF_LIB_SVG_CANVAS_H_
#define W4JIT_PERF_LIB_SVG_CANVAS_H_

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
  void Circle(double cx, double cy, double r, const std::string& fill,
              const std::string& stroke);
  void Rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& stroke);
  // anchor: "start", "middle" or "end"; rotate in degrees about (x, y).
  void Text(double x, double y, const std::string& text, int size = 12,
            const std::string& anchor = "start",
            const std::string& fill = "#222", double rotate = 0.0);
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

// Frame, grid, tick labels and axis titles of a log-log plot.
void DrawLogAxes(SvgCanvas* svg, const LogAxis& x, const LogAxis& y,
                 const std::string& x_title, const std::string& y_title);

// "0.5", "20", "1k", "2M": short tick labels.
std::string ShortNumber(double v);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SVG_CANVAS_H_
