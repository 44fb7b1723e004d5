// Plots that scale (report/svg_plot.h, report/html_sections.h): a colour per run up to 20 runs,
// above that the reference, the first runs to part and a band of all; legends that wrap inside
// the plot; per-epoch plots only from two epochs; grid lighter than the axes; the recording cost
// explained on the page.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/html_report.h"
#include "report/svg_plot.h"
#include "support/text_lines.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::count_of;

using ra::test::TraceBuilder;
using ra::trace::Trace;
namespace svg = ra::report::svg;
using ra::test::runs_of;

// The n-th <svg>...</svg> of a page (0-based).
std::string nth_svg(const std::string& html, int n) {
  std::size_t at = html.find("<svg ");
  for (int i = 0; i < n && at != std::string::npos; ++i) at = html.find("<svg ", at + 1);
  REQUIRE(at != std::string::npos);
  return html.substr(at, html.find("</svg>", at) + 6 - at);
}

// The value of `attribute` in every tag starting with `tag` ("<path class=\"series\""), in order.
// A plain scan, not a regex: libstdc++'s regex recurses once per character it repeats, and a path
// of thousands of points overflows the stack (as it did under AddressSanitizer).
std::vector<std::string> attribute_values(const std::string& text, const std::string& tag,
                                          const std::string& attribute) {
  std::vector<std::string> out;
  const std::string key = " " + attribute + "=\"";
  for (std::size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at + 1)) {
    const std::size_t end = text.find('>', at);
    const std::size_t value = text.find(key, at);
    if (value == std::string::npos || value > end) continue;
    const std::size_t begin = value + key.size();
    out.push_back(text.substr(begin, text.find('"', begin) - begin));
  }
  return out;
}

// Every match of a regex's first group, in order (short matches only: see attribute_values).
std::vector<std::string> all_of(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// n runs of 10 steps in 5 epochs; run r in `parting` parts from the reference at step p (its loss
// from step p + 1: in_memory_traces.h diverge).
std::string page_of(int n, const std::vector<std::pair<int, int>>& parting) {
  TraceBuilder b;
  b.steps = 10;
  std::vector<Trace> traces = runs_of(b, n);
  for (const auto& [run, step] : parting) ra::test::diverge(traces[run], step, 0);
  return ra::report::render_html(ra::compare::compare_traces(traces, {}));
}

}  // namespace

TEST_CASE("the palette has 20 distinct colours, then repeats", "[report][html][plots]") {
  std::set<std::string> colours;
  for (std::size_t i = 0; i < svg::kPaletteSize; ++i) colours.insert(svg::palette_colour(i));
  CHECK(colours.size() == 20);
  CHECK(std::string(svg::palette_colour(20)) == svg::palette_colour(0));
}

TEST_CASE("20 runs: every run a curve of its own colour, every run in the legend",
          "[report][html][plots]") {
  std::vector<std::pair<int, int>> parting;
  for (int run = 1; run < 20; ++run) parting.emplace_back(run, run % 8);
  const std::string html = page_of(20, parting);
  const std::string losses = nth_svg(html, 0);
  const auto strokes = all_of(losses, "<path class=\"series\" fill=\"none\" stroke=\"([^\"]+)\"");
  CHECK(strokes.size() == 20);
  CHECK(std::set<std::string>(strokes.begin(), strokes.end()).size() == 20);
  CHECK(strokes[10] != strokes[0]);  // the issue: runs 0 and 10 shared a colour
  for (int run = 0; run < 20; ++run) {
    INFO("run " << run);
    CHECK(count_of(losses, ">run " + std::to_string(run) + (run == 0 ? " (reference)<" : "<")) ==
          1);
  }
  CHECK(losses.find("more</text>") == std::string::npos);
  CHECK(losses.find("class=\"band\"") == std::string::npos);
  // The distance plot gives each run the colour it has in the loss plot.
  const std::string distance = nth_svg(html, 1);
  const auto distance_strokes =
      all_of(distance, "<path class=\"series\" fill=\"none\" stroke=\"([^\"]+)\"");
  REQUIRE(distance_strokes.size() == 19);
  CHECK(distance_strokes[9] == strokes[10]);
  CHECK(distance_strokes[18] == strokes[19]);
}

TEST_CASE("above 20 runs: the reference, the first 4 runs to part, and a band of all",
          "[report][html][plots]") {
  // Loss parts from step p + 1: run 20 at 1, runs 9 and 17 at 2, run 12 at 3, runs 5 and 3 later.
  const std::string html = page_of(21, {{5, 4}, {9, 1}, {12, 2}, {3, 6}, {17, 1}, {20, 0}});
  CHECK(html.find("21 runs are too many curves to tell apart") != std::string::npos);
  const std::string losses = nth_svg(html, 0);
  CHECK(all_of(losses, "class=\"legend\">([^<]+)<") ==
        std::vector<std::string>{"run 0 (reference)", "run 20 (parts at step 1)",
                                 "run 9 (parts at step 2)", "run 17 (parts at step 2)",
                                 "run 12 (parts at step 3)", "min..max over all 21 runs"});
  CHECK(count_of(losses, "<path class=\"series\"") == 5);
  CHECK(count_of(losses, "<polygon class=\"band\"") == 1);
  const std::string distance = nth_svg(html, 1);
  CHECK(all_of(distance, "class=\"legend\">([^<]+)<") ==
        std::vector<std::string>{"run 20 (parts at step 1)", "run 9 (parts at step 2)",
                                 "run 17 (parts at step 2)", "run 12 (parts at step 3)",
                                 "min..max over all 20 same-seed runs, where they differ"});
  CHECK(count_of(distance, "<polygon class=\"band\"") == 1);
  // Run 20 keeps its colour from plot to plot.
  const auto loss_strokes = all_of(losses, "class=\"series\" fill=\"none\" stroke=\"([^\"]+)\"");
  const auto gap_strokes = all_of(distance, "class=\"series\" fill=\"none\" stroke=\"([^\"]+)\"");
  REQUIRE(loss_strokes.size() == 5);
  REQUIRE(gap_strokes.size() == 4);
  CHECK(gap_strokes[0] == loss_strokes[1]);
}

TEST_CASE("the band runs from the least to the greatest value at each step",
          "[report][html][plots]") {
  svg::LinePlot plot;
  plot.title = "band";
  plot.band = svg::Band{"spread", {0, 1, 2}, {1, 2, 3}, {2, 4, 3}};
  plot.width = 200 + 78 + 16;   // a plot area 200 px wide: x = 78, 178, 278
  plot.height = 48 + 100 + 46;  // and 100 px high; values 1..4 padded by 5%: 0.85..4.15
  const std::string out = svg::line_plot(plot);
  // Upper edge left to right, then the lower edge back: y(v) = 148 - (v - 0.85) / 3.3 * 100, so
  // y(1) = 143.45, y(2) = 113.15, y(3) = 82.85, y(4) = 52.55 (to one decimal: 143.5, 113.2, 82.8,
  // 52.5; the exact values lie a little off the halves).
  const auto points = attribute_values(out, "<polygon class=\"band\"", "points");
  REQUIRE(points.size() == 1);
  CHECK(points[0] == "78.0,113.2 178.0,52.5 278.0,82.8 278.0,82.8 178.0,113.2 78.0,143.5");
}

TEST_CASE("legends wrap into rows inside the plot, and count what they leave out",
          "[report][html][plots]") {
  svg::LinePlot plot;
  plot.title = "many";
  for (int i = 0; i < 25; ++i)
    plot.series.push_back({"run " + std::to_string(i) + " (label)", {0, 1}, {1, 2}});
  const std::string out = svg::line_plot(plot);
  const auto xs = all_of(out, "<text x=\"([0-9.]+)\" y=\"[0-9.]+\" class=\"legend\"");
  const auto labels = all_of(out, "class=\"legend\">([^<]+)<");
  REQUIRE(xs.size() == 21);  // 20 entries and "and 5 more"
  CHECK(labels.back() == "and 5 more");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    INFO(labels[i]);
    CHECK(std::stod(xs[i]) + 7.0 * double(labels[i].size()) <= 960 - 16);
  }
  // An entry is 24 + 7 * (label length) px: 115 for "run 0 (label)", 122 from "run 10 (label)"
  // on. Rows of 866 px (78..944) hold runs 0-6, 7-13, then 14-19 and "and 5 more" (70 px): three
  // rows, so the plot grows by two rows of 15 px.
  const auto ys = all_of(out, "<text x=\"[0-9.]+\" y=\"([0-9.]+)\" class=\"legend\"");
  CHECK(std::set<std::string>(ys.begin(), ys.end()).size() == 3);
  CHECK(ys[6] == ys[0]);
  CHECK(ys[7] != ys[6]);
  CHECK(ys[14] != ys[13]);
  CHECK(out.find("height=\"330\"") != std::string::npos);
}

TEST_CASE("grid lines are lighter than the axes, whatever the stylesheet",
          "[report][html][plots]") {
  svg::LinePlot plot;
  plot.series.push_back({"a", {0, 1, 2}, {1, 3, 2}});
  const std::string out = svg::line_plot(plot);
  CHECK(count_of(out, "class=\"grid\" stroke=\"#e6e6e6\"") >= 2);
  CHECK(count_of(out, "class=\"axis\" stroke=\"#555\"") >= 2);
  CHECK(count_of(out, "class=\"grid\"") == count_of(out, "class=\"grid\" stroke=\"#e6e6e6\""));
  // The page sets no stroke for lines, which would override the attributes (CSS beats them).
  const std::string html = page_of(2, {});
  CHECK(html.find(".axes line") == std::string::npos);
  CHECK(html.find(".grid {") == std::string::npos);
}

TEST_CASE("per-epoch plots need two epochs, one epoch gets a line saying so",
          "[report][html][plots]") {
  TraceBuilder b;
  b.steps = 2;  // one epoch of 2 steps
  std::vector<Trace> traces = runs_of(b, 3);
  ra::test::diverge(traces[1], 0, 0);
  const std::string one = ra::report::render_html(ra::compare::compare_traces(traces, {}));
  CHECK(one.find("Growth per epoch is plotted from two epochs on; this audit has one") !=
        std::string::npos);
  CHECK(one.find("Divergence growth per epoch") == std::string::npos);
  CHECK(count_of(one, "<svg ") == 3);  // losses, their distance, the digest map
  const std::string five = page_of(3, {{1, 0}});
  CHECK(five.find("Growth per epoch is plotted from two epochs on") == std::string::npos);
  CHECK(five.find("Divergence growth per epoch") != std::string::npos);
}

TEST_CASE("the recording cost says what its percentage is", "[report][html][plots]") {
  const std::string html = page_of(2, {});
  const std::size_t table = html.find("<h2>Cost per step</h2>");
  const std::size_t caption = html.find("recording: the time the recorder spent digesting");
  REQUIRE(table != std::string::npos);
  REQUIRE(caption != std::string::npos);
  CHECK(table < caption);
  CHECK(html.find("It can exceed 100%: on a GPU") != std::string::npos);
}

TEST_CASE("a point left out breaks the line instead of being bridged", "[report][html][plots]") {
  svg::LinePlot plot;
  plot.log_y = true;
  // Steps 0..4 over a plot area of 866 px: 216.5 px apart. The distance 0 at step 2 cannot be
  // drawn on a log axis; a line from step 1 to step 3 would show distances that never were.
  plot.series.push_back({"a", {0, 1, 2, 3, 4}, {1, 2, 0, 3, 4}});
  const std::string broken = svg::line_plot(plot);
  const auto paths = attribute_values(broken, "<path class=\"series\"", "d");
  REQUIRE(paths.size() == 1);
  CHECK(count_of(paths[0], "M") == 2);
  CHECK(count_of(paths[0], "L") == 2);
  CHECK(broken.find("<circle") == std::string::npos);
  // Left alone by the gaps either side, step 2 is a dot.
  plot.series[0].y = {1, 0, 2, 0, 4};
  const std::string dots = svg::line_plot(plot);
  CHECK(count_of(dots, "<circle") == 3);
  CHECK(dots.find("<path class=\"series\"") == std::string::npos);
  // Gaps narrower than a pixel and a half do not break it: 10,000 steps, every other one 0, stay
  // one stroke, reduced per pixel column.
  plot.series[0].x.clear();
  plot.series[0].y.clear();
  for (int k = 0; k < 10000; ++k) {
    plot.series[0].x.push_back(k);
    plot.series[0].y.push_back(k % 2 ? 1.0 + k % 7 : 0.0);
  }
  const std::string dense = svg::line_plot(plot);
  const auto dense_paths = attribute_values(dense, "<path class=\"series\"", "d");
  REQUIRE(dense_paths.size() == 1);
  CHECK(count_of(dense_paths[0], "M") == 1);
  CHECK(count_of(dense_paths[0], "L") < 2 * 866);
  CHECK(dense.find("<circle") == std::string::npos);
}
