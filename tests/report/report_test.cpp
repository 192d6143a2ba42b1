// The scaling report and its charts: well-formed SVG with the series and bars asked for,
// a self-contained HTML page (no script, nothing fetched), the terminal table, and
// training curves read from --metrics-json reports and CSVLogger files.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "report/scaling_report.h"
#include "report/svg_chart.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every opened element is closed, in order (enough to catch broken markup we write).
void expect_balanced(const std::string& xml) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z]+)[^>]*?(/?)>)");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    const std::string name = m[2];
    if (name == "meta" || name == "br" || xml.compare(m.position(), 2, "<!") == 0) continue;
    if (m[3] == "/") continue;  // self-closing
    if (m[1] == "/") {
      ASSERT_FALSE(open.empty()) << "closing </" << name << "> with nothing open";
      ASSERT_EQ(open.back(), name) << "at offset " << m.position();
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  EXPECT_TRUE(open.empty()) << "unclosed <" << (open.empty() ? "" : open.back()) << ">";
}

ScalingReport sample_report() {
  ScalingReport r;
  r.model = "Dense 784-64-10 <small> & fast";
  r.batch = 128;
  r.hardware = "this-machine-cpu";
  r.configs = {{"1 device", "mirrored", 1, 100, 1, 1, 100, {{"forward", 35}, {"backward", 60}}},
               {"2 devices mirrored",
                "mirrored",
                2,
                63,
                1.59,
                1.65,
                60.6,
                {{"forward", 20}, {"backward", 37}, {"idle", 3}}},
               {"2 devices host",
                "host",
                2,
                77,
                1.30,
                1.32,
                75.8,
                {{"forward", 22}, {"backward", 35}, {"allreduce", 12.5}}}};
  r.curves.push_back(
      {"run.json",
       {{"loss", {1.4, 0.8, 0.7}}, {"val_loss", {1.0, 0.8, 0.7}}, {"accuracy", {0.5, 0.7, 0.75}}}});
  r.notes = {"2 devices host: the weights cross to every device each step"};
  return r;
}

TEST(Report, HtmlIsSelfContainedWithEveryChart) {
  const std::string html = report_html(sample_report());
  expect_balanced(html);
  EXPECT_EQ(count(html, "<svg"), 4);  // speedup, breakdown, loss, accuracy
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://") == std::string::npos ||
                html.find("http://") == html.find("http://www.w3.org/2000/svg"),
            true);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("&lt;small&gt; &amp; fast"), std::string::npos);  // escaped
  EXPECT_NE(html.find("mirrored predicted"), std::string::npos);
  EXPECT_NE(html.find("ideal"), std::string::npos);
  EXPECT_NE(html.find("2 devices host: allreduce 12.5"), std::string::npos);  // a bar's title
}

TEST(Report, TextTableHasMeasuredPredictedAndError) {
  const std::string text = report_text(sample_report());
  EXPECT_NE(text.find("2 devices mirrored"), std::string::npos);
  EXPECT_NE(text.find("1.59x"), std::string::npos);
  EXPECT_NE(text.find("1.65x"), std::string::npos);
  EXPECT_NE(text.find("3.8%"), std::string::npos);  // 1.65 / 1.59 - 1
}

TEST(Report, ChartsAreWellFormedEvenWhenEmpty) {
  expect_balanced(svg_line_chart({"empty", "x", "y", {}}));
  expect_balanced(svg_stacked_bars({"empty", "ms", {}, {}, {}, {}}));
  const std::string one = svg_line_chart({"one point", "x", "y", {{"s", "#000", {{1, 2}}}}});
  expect_balanced(one);
  EXPECT_EQ(count(one, "<circle"), 1);
}

TEST(Report, TrainingCurvesFromMetricsJsonAndCsvLogger) {
  test::TempDir dir;
  std::ofstream(dir.file("m.json"))
      << R"({"epochs": [{"epoch": 1, "loss": 1.5, "accuracy": 0.4, "seconds": 2},
                        {"epoch": 2, "loss": 1.0, "accuracy": 0.6, "seconds": 2}]})";
  const auto a = read_training_curve(dir.file("m.json"));
  EXPECT_EQ(a.series.at("loss"), (std::vector<double>{1.5, 1.0}));
  EXPECT_EQ(a.series.count("seconds"), 0u);
  std::ofstream(dir.file("log.csv")) << "epoch,accuracy,loss\n0,0.5,1.2\n1,0.7,0.9\n";
  const auto b = read_training_curve(dir.file("log.csv"));
  EXPECT_EQ(b.series.at("accuracy"), (std::vector<double>{0.5, 0.7}));

  std::ofstream(dir.file("bad.csv")) << "epoch,loss\n0,0.5\n1,abc\n";
  test::expect_error<FormatError>([&] { read_training_curve(dir.file("bad.csv")); },
                                  {"bad.csv", "offset 17", "'abc' is not a number"});
  std::ofstream(dir.file("other.txt")) << "hello\n";
  test::expect_error<FormatError>([&] { read_training_curve(dir.file("other.txt")); },
                                  {"other.txt", "neither"});
  test::expect_error<IoError>([&] { read_training_curve(dir.file("missing.json")); },
                              {"missing.json"});
}

}  // namespace
}  // namespace tandem::detail
