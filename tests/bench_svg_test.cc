// The bench's SVG charts are well-formed XML documents: header, one <svg>
// root, balanced tags, escaped text, and the ceilings and points drawn.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perf/lib/svg_canvas.h"
#include "perf/lib/svg_charts.h"
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
