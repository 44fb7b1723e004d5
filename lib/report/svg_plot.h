#pragma once
// Plots as inline SVG, written by the tool (no script, no font, no network): a line plot on a
// linear or logarithmic y axis, and a map of boolean cells (tensor by step). Every label passes
// through html_escaped. Long series are reduced per pixel column (its minimum and maximum, in
// order), so a plot's size depends on its width, not on the number of steps. A point left out
// (not finite, or <= 0 on a log axis) breaks a line and a band, rather than being bridged by a
// line through values that never were. Legends wrap into rows inside the plot's width (the plot
// grows by the rows it needs) and list at most kLegendEntries entries, then "and N more".
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::report::svg {

// `text` made safe in HTML and SVG text and attributes: printable (core/printable.h), then the
// markup characters as entities.
std::string html_escaped(const std::string& text);
// The same, line by line: newlines are kept (for <pre>).
std::string html_lines_escaped(const std::string& text);

// A fixed qualitative palette of kPaletteSize colours: Tableau 10, then ten darker or more
// saturated hues from Sasha Trubetskoy's "20 distinct colours" (its pale ones left out: they
// vanish on white). Index i mod kPaletteSize.
inline constexpr std::size_t kPaletteSize = 20;
const char* palette_colour(std::size_t i);
// At most this many legend entries are drawn; the rest are counted ("and 7 more").
inline constexpr std::size_t kLegendEntries = 20;

struct Series {
  std::string label;
  std::vector<double> x, y;  // equal lengths; on a log axis, points with y <= 0 are left out
  int colour = -1;           // palette index (the same run keeps its colour from plot to plot);
                             // -1: the series' position in the plot
};

// A filled band between two curves, drawn under the series: the spread of many runs (per step,
// the least and the greatest value over them) where drawing every run would be a tangle.
struct Band {
  std::string label;
  std::vector<double> x, low, high;  // equal lengths; a point whose high is not finite (or <= 0
                                     // on a log axis) is left out; on a log axis a low <= 0 is
                                     // drawn at the axis' bottom
};

struct LinePlot {
  std::string title;
  std::string x_label, y_label;  // with units: "step", "loss (nats)"
  bool log_y = false;
  std::vector<Series> series;
  std::optional<Band> band;
  bool integer_x = false, integer_y = false;  // counts (epochs, parameters): whole-number ticks
  std::optional<double> marker_x;             // a vertical line (the first divergent step)
  std::string marker_label;
  int width = 960, height = 300;  // height with a one-row legend; each further row adds to it
};
std::string line_plot(const LinePlot& plot);

struct CellMap {
  std::string title;
  std::string x_label;
  std::vector<std::string> rows;         // row labels, top to bottom
  std::vector<std::vector<bool>> cells;  // [row][column]; true cells are drawn (a pixel column
                                         // holding several is drawn when any of them is true)
  std::int64_t first_column = 0;         // the x value of column 0 (a step number)
  std::string on_label, off_label;       // the legend's words for true and false cells
  int width = 960;
};
std::string cell_map(const CellMap& map);

// Points per group (a seed group's runs) on one value axis.
struct StripPlot {
  std::string title, value_label;
  struct Group {
    std::string label;
    std::vector<double> values;
  };
  std::vector<Group> groups;
  int width = 960;
};
std::string strip_plot(const StripPlot& plot);

// The tick positions of an axis over [low, high]: about `count` round numbers (1, 2 or 5 times a
// power of ten), or the powers of ten on a log axis.
std::vector<double> ticks(double low, double high, int count, bool log, bool integer = false);

// Reduces (x, y) to at most 2 points per pixel column of a plot `columns` wide over
// [x_low, x_high]: each column's minimum and maximum y, in x order. Shorter series are kept.
void reduce_per_pixel(std::vector<double>& x, std::vector<double>& y, double x_low, double x_high,
                      int columns);

}  // namespace ra::report::svg
