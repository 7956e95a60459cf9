// The bench's SVG charts are well-formed XML documents: header, one <svg>
// root, balanced tags, escaped text, and the ceilings and points drawn.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "perf/lib/report/svg_canvas.h"
#include "perf/lib/report/svg_charts.h"
#include "tests/bench_sample_report.h"

namespace w4jit::perf {
namespace {

// A minimal XML checker: every tag is closed in order, attributes are
// quoted, '&' starts an entity, and there is exactly one root element.
::testing::AssertionResult WellFormed(const std::string& doc) {
  const std::string decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
  if (doc.rfind(decl, 0) != 0) {
    return ::testing::AssertionFailure() << "no XML declaration";
  }
  std::vector<std::string> stack;
  int roots = 0;
  for (size_t i = decl.size(); i < doc.size();) {
    if (doc[i] == '&') {
      const size_t semi = doc.find(';', i);
      if (semi == std::string::npos || semi - i > 6) {
        return ::testing::AssertionFailure() << "bare & at " << i;
      }
      i = semi + 1;
      continue;
    }
    if (doc[i] != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(doc[i]))) {
        return ::testing::AssertionFailure() << "text outside root at " << i;
      }
      ++i;
      continue;
    }
    // A tag: find its end outside quoted attribute values.
    size_t j = i + 1;
    bool quoted = false;
    for (; j < doc.size() && (quoted || doc[j] != '>'); ++j) {
      if (doc[j] == '"') quoted = !quoted;
      if (!quoted && doc[j] == '<') {
        return ::testing::AssertionFailure() << "'<' inside tag at " << j;
      }
    }
    if (j == doc.size()) return ::testing::AssertionFailure() << "open tag";
    const std::string tag = doc.substr(i + 1, j - i - 1);
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    const std::string name =
        tag.substr(closing ? 1 : 0, tag.find_first_of(" /\n", closing ? 1 : 0) -
                                        (closing ? 1 : 0));
    if (closing) {
      if (stack.empty() || stack.back() != name) {
        return ::testing::AssertionFailure() << "unbalanced </" << name << ">";
      }
      stack.pop_back();
    } else if (!self_closing) {
      if (stack.empty()) ++roots;
      stack.push_back(name);
    } else if (stack.empty()) {
      ++roots;
    }
    i = j + 1;
  }
  if (!stack.empty()) {
    return ::testing::AssertionFailure() << "unclosed <" << stack.back() << ">";
  }
  if (roots != 1) return ::testing::AssertionFailure() << roots << " roots";
  if (doc.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") ==
      std::string::npos) {
    return ::testing::AssertionFailure() << "no svg root";
  }
  return ::testing::AssertionSuccess();
}

TEST(BenchSvg, CheckerRejectsBrokenDocuments) {
  const std::string decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  EXPECT_FALSE(WellFormed(decl + "<svg xmlns=\"http://www.w3.org/2000/svg\">"));
  EXPECT_FALSE(WellFormed(decl + "<svg><g></svg></g>"));
  EXPECT_FALSE(WellFormed(decl + "<svg>a & b</svg>"));
  EXPECT_FALSE(WellFormed("<svg></svg>"));
  EXPECT_TRUE(
      WellFormed(decl +
                 "<svg xmlns=\"http://www.w3.org/2000/svg\"><g><line/>x &amp; y"
                 "</g></svg>\n"));
}

TEST(BenchSvg, CanvasEscapesText) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  SvgCanvas svg(100, 50);
  svg.Text(1, 2, "<&>");
  svg.BeginClip(0, 0, 10, 10);
  svg.Circle(1, 1, 1, "red", "blue");
  svg.EndClip();
  const std::string doc = svg.Finish();
  EXPECT_TRUE(WellFormed(doc)) << doc;
  EXPECT_NE(doc.find("&lt;&amp;&gt;"), std::string::npos);
}

TEST(BenchSvg, LogAxisMapsAndTicks) {
  const LogAxis axis{1.0, 1000.0, 0.0, 300.0};
  EXPECT_DOUBLE_EQ(axis.Map(1.0), 0.0);
  EXPECT_NEAR(axis.Map(10.0), 100.0, 1e-9);
  EXPECT_NEAR(axis.Map(1000.0), 300.0, 1e-9);
  EXPECT_EQ(axis.Ticks(), (std::vector<double>{1, 10, 100, 1000}));
  const LogAxis fine{0.5, 4.0, 0.0, 100.0};
  EXPECT_EQ(fine.Ticks(), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(ShortNumber(2000), "2k");
  EXPECT_EQ(ShortNumber(0.5), "0.5");
}

TEST(BenchSvg, RooflineChartIsWellFormedAndDrawsCeilingsAndPoints) {
  const std::string doc = RooflineSvg(SampleReport());
  EXPECT_TRUE(WellFormed(doc)) << doc;
  EXPECT_NE(doc.find("int8_avx2 200 GFLOP/s"), std::string::npos);
  EXPECT_NE(doc.find("DRAM-sized read 15 GB/s"), std::string::npos);
  EXPECT_NE(doc.find("<circle"), std::string::npos);
  EXPECT_NE(doc.find("&lt;with&gt; &quot;markup&quot; &amp; co"),
            std::string::npos);
}

TEST(BenchSvg, RooflinePointsSayWhichBoundBindsThem) {
  const std::string doc = RooflineSvg(SampleReport());
  // Memory-bound rows are circles, compute-bound ones squares, each with a
  // tooltip naming its share of the bound.
  const size_t memory = doc.find(
      "<title>W4A16 qkv M=1 hot: 55.9 GFLOP/s, 50% of the memory bound (L3 "
      "read 16.8 MB)</title></circle>");
  EXPECT_NE(memory, std::string::npos) << doc;
  const size_t compute = doc.find(
      "<title>W4A16 qkv M=8 hot: 161.1 GFLOP/s, 81% of the compute bound "
      "(peak f32_fma_ymm)</title></rect>");
  EXPECT_NE(compute, std::string::npos) << doc;
  EXPECT_NE(doc.find("compute bound binds"), std::string::npos);
}

// A label of the chart as drawn: anchor point, font size, text-anchor,
// rotation (degrees about the anchor) and text.
struct Label {
  double x = 0, y = 0, size = 0, rotate = 0;
  std::string anchor, text;
};

double Attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return 0.0;
  return std::stod(tag.substr(at + key.size()));
}

// Every <text> element of `doc` whose text contains `needle`.
std::vector<Label> LabelsWith(const std::string& doc,
                              const std::string& needle) {
  std::vector<Label> out;
  for (size_t at = doc.find("<text "); at != std::string::npos;
       at = doc.find("<text ", at + 1)) {
    const size_t open_end = doc.find('>', at);
    const size_t close = doc.find("</text>", open_end);
    const std::string tag = doc.substr(at, open_end - at);
    Label l;
    l.text = doc.substr(open_end + 1, close - open_end - 1);
    if (l.text.find(needle) == std::string::npos) continue;
    l.x = Attribute(tag, "x");
    l.y = Attribute(tag, "y");
    l.size = Attribute(tag, "font-size");
    const size_t anchor = tag.find("text-anchor=\"");
    l.anchor =
        tag.substr(anchor + 13, tag.find('"', anchor + 13) - anchor - 13);
    const size_t rotate = tag.find("rotate(");
    if (rotate != std::string::npos)
      l.rotate = std::stod(tag.substr(rotate + 7));
    out.push_back(l);
  }
  return out;
}

// Whether the boxes of two labels turned by the same angle overlap: each
// box is 0.6 em a character wide (placed by its text-anchor) and reaches
// from 0.8 em above the baseline to 0.2 em below, in the labels' own frame.
bool Overlap(const Label& a, const Label& b) {
  const double t = a.rotate * M_PI / 180;
  const auto box = [&](const Label& l, double* u0, double* u1, double* v0,
                       double* v1) {
    const double u = l.x * std::cos(t) + l.y * std::sin(t);
    const double v = -l.x * std::sin(t) + l.y * std::cos(t);
    const double w = 0.6 * l.size * static_cast<double>(l.text.size());
    *u0 = l.anchor == "middle" ? u - w / 2 : l.anchor == "end" ? u - w : u;
    *u1 = *u0 + w;
    *v0 = v - 0.8 * l.size;
    *v1 = v + 0.2 * l.size;
  };
  double au0, au1, av0, av1, bu0, bu1, bv0, bv1;
  box(a, &au0, &au1, &av0, &av1);
  box(b, &bu0, &bu1, &bv0, &bv1);
  return au0 < bu1 && bu0 < au1 && av0 < bv1 && bv0 < av1;
}

// The ceilings of an AMD Zen 4 run (2 threads): bf16 dot and the AVX2
// int16 loop, f32 FMA on ymm and zmm, and the L2 and L3 read rates lie
// close together.
BenchReport Zen4Ceilings() {
  BenchReport r = SampleReport();
  r.roofline.peaks.clear();
  for (const auto& [key, gmacs] :
       std::vector<std::pair<const char*, double>>{{"int8_avx2", 234.8},
                                                   {"int8_vnni_zmm", 469.7},
                                                   {"bf16_dot_zmm", 235.1},
                                                   {"f32_fma_ymm", 117.5},
                                                   {"f32_fma_zmm", 117.4},
                                                   {"int8_avx2_i16", 235.3}}) {
    ComputePeak p;
    p.key = key;
    p.available = true;
    p.macs_per_s = gmacs * 1e9;
    r.roofline.peaks.push_back(p);
  }
  r.roofline.bandwidths = {{"L2-sized", 1 << 20, 227e9, 2, 64},
                           {"L3-sized", 16 << 20, 195e9, 2, 64},
                           {"DRAM-sized", 128 << 20, 87e9, 2, 64}};
  return r;
}

TEST(BenchSvg, LabelsOfCloseCeilingsDoNotOverlap) {
  const std::string doc = RooflineSvg(Zen4Ceilings());
  EXPECT_TRUE(WellFormed(doc)) << doc;
  const std::vector<Label> peaks = LabelsWith(doc, " GFLOP/s");
  ASSERT_EQ(peaks.size(), 6u) << doc;
  const std::vector<Label> reads = LabelsWith(doc, " GB/s");
  ASSERT_EQ(reads.size(), 3u) << doc;
  for (const std::vector<Label>* labels : {&peaks, &reads}) {
    for (size_t i = 0; i < labels->size(); ++i) {
      // Inside the plot (80..700 x 60..530), the read labels turned along
      // their lines.
      const Label& a = (*labels)[i];
      EXPECT_GT(a.x, 80);
      EXPECT_LT(a.x, 700);
      EXPECT_GT(a.y, 60);
      EXPECT_LT(a.y, 530);
      EXPECT_EQ(a.rotate, (*labels)[0].rotate);
      for (size_t j = i + 1; j < labels->size(); ++j) {
        EXPECT_FALSE(Overlap(a, (*labels)[j]))
            << a.text << " at " << a.x << "," << a.y << " / "
            << (*labels)[j].text << " at " << (*labels)[j].x << ","
            << (*labels)[j].y;
      }
    }
  }
  // The checker itself: two labels at the same place overlap.
  EXPECT_TRUE(Overlap(peaks[0], peaks[0]));
  // A label moved off its line has a leader to it; the highest of a pair
  // moves, so the lower one stays right above its line.
  EXPECT_NE(doc.find("stroke=\"#888\" stroke-width=\"1.0\"/>"),
            std::string::npos);
}

TEST(BenchSvg, SpreadApartKeepsOrderAndRoom) {
  // Two that want nearly the same place share it; the third is left alone.
  std::vector<double> c = SpreadApart({10, 11, 50}, {10, 10, 10}, 2, 0, 100);
  EXPECT_DOUBLE_EQ(c[0], 5);  // would start at -0.5: kept inside [0, 100]
  EXPECT_DOUBLE_EQ(c[1], 17);
  EXPECT_DOUBLE_EQ(c[2], 50);
  // Centred on what they want, in the order they want.
  c = SpreadApart({51, 50}, {10, 10}, 2, 0, 100);
  EXPECT_DOUBLE_EQ(c[1], 44.5);
  EXPECT_DOUBLE_EQ(c[0], 56.5);
  // Towards lo only: the one nearer lo moves, the other keeps its place.
  c = SpreadApart({50, 51}, {10, 10}, 2, 0, 100, /*towards_lo=*/true);
  EXPECT_DOUBLE_EQ(c[0], 39);
  EXPECT_DOUBLE_EQ(c[1], 51);
  // A run pushed against hi merges with the one before it.
  c = SpreadApart({80, 95, 96}, {10, 10, 10}, 0, 0, 100);
  EXPECT_DOUBLE_EQ(c[2], 95);
  EXPECT_DOUBLE_EQ(c[1], 85);
  EXPECT_DOUBLE_EQ(c[0], 75);
  EXPECT_TRUE(SpreadApart({}, {}, 2, 0, 100).empty());
}

TEST(BenchSvg, SpeedupChartIsWellFormed) {
  const std::string doc = SpeedupSvg(SampleReport());
  EXPECT_TRUE(WellFormed(doc)) << doc;
  EXPECT_NE(doc.find("W4A16 vs u8s8"), std::string::npos);
  EXPECT_NE(doc.find("<polyline"), std::string::npos);
}

TEST(BenchSvg, EmptyReportStillGivesWellFormedCharts) {
  BenchReport empty;
  EXPECT_TRUE(WellFormed(RooflineSvg(empty)));
  const std::string speedup = SpeedupSvg(empty);
  EXPECT_TRUE(WellFormed(speedup));
  EXPECT_NE(speedup.find("no speedups"), std::string::npos);
}

}  // namespace
}  // namespace w4jit::perf
