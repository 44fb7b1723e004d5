// Inline SVG plots (report/svg_plot.h).
#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/printable.h"
#include "report/markup.h"

namespace ra::report::svg {
namespace {

// Tableau 10 (apart for the usual kinds of colour blindness and in grey print), then ten from
// Trubetskoy's "20 distinct colours", ordered so that colour i + 10 is of another hue than
// colour i (runs 0 and 10 must not look alike): maroon after steel blue, navy after orange, ...
constexpr const char* kColours[kPaletteSize] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac", "#800000", "#000075", "#469990", "#f032e6",
    "#911eb4", "#4363d8", "#808000", "#42d4f4", "#bfef45", "#1a1a1a"};

// Axes dark, grid light: the grid helps read values without competing with the data. Written as
// presentation attributes, so the SVG looks the same outside the page's stylesheet.
constexpr const char* kAxisStroke = "#555";
constexpr const char* kGridStroke = "#e6e6e6";
constexpr const char* kBandFill = "#8c96a3";

constexpr int kLeft = 78, kRight = 16, kTop = 48, kBottom = 46;
constexpr int kLegendRow = 15;      // a legend row's height
constexpr double kCharWidth = 7.0;  // an 11 px label's widest average character, in pixels

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string text(double x, double y, const std::string& content, const std::string& extra = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + extra + ">" + html_escaped(content) +
         "</text>";
}

struct LegendEntry {
  std::string label, colour;
  bool band = false;  // a light swatch, as the band is drawn
};

// Legend entries from `top` down, left to right from `left`, a new row whenever the next entry
// would pass `right`; past kLegendEntries entries, "and N more". Returns the rows used.
int legend(std::string& out, const std::vector<LegendEntry>& entries, double left, double right,
           double top) {
  const std::size_t shown = std::min(entries.size(), kLegendEntries);
  double x = left;
  int row = 0;
  const auto place = [&](double width) {
    if (x > left && x + width > right) x = left, ++row;
    const double at = x;
    x += width;
    return at;
  };
  for (std::size_t i = 0; i < shown; ++i) {
    const LegendEntry& e = entries[i];
    const double at = place(24 + kCharWidth * static_cast<double>(e.label.size()));
    const double y = top + kLegendRow * row;
    out += "<rect x=\"" + px(at) + "\" y=\"" + px(y) + "\" width=\"10\" height=\"10\" fill=\"" +
           e.colour + "\"" + (e.band ? " fill-opacity=\"0.35\"" : "") + "/>";
    out += text(at + 14, y + 9, e.label, " class=\"legend\"");
  }
  if (shown < entries.size()) {
    const std::string more = "and " + std::to_string(entries.size() - shown) + " more";
    const double at = place(kCharWidth * static_cast<double>(more.size()));
    out += text(at, top + kLegendRow * row + 9, more, " class=\"legend\"");
  }
  return row + 1;
}

// The plot's frame: title, the legend (wrapped into rows: the plot area starts below them) and
// axes labels. `height` is the plot's with a one-row legend; returns the extra height taken by
// further rows (the caller moves the plot area down by it).
int frame(std::string& out, int width, int height, const std::string& title,
          const std::vector<LegendEntry>& entries, const std::string& x_label,
          const std::string& y_label) {
  std::string body = text(kLeft, 18, title, " class=\"title\"");
  const int rows = legend(body, entries, kLeft, width - kRight, 28);
  const int extra = kLegendRow * (rows - 1);
  const int total = height + extra;
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" +
         std::to_string(width) + "\" height=\"" + std::to_string(total) + "\" viewBox=\"0 0 " +
         std::to_string(width) + " " + std::to_string(total) + "\" role=\"img\" aria-label=\"" +
         html_escaped(title) + "\">" + body;
  out += text(kLeft + (width - kLeft - kRight) / 2.0, total - 8, x_label,
              " text-anchor=\"middle\" class=\"axis-label\"");
  const double mid = kTop + extra + (height - kTop - kBottom) / 2.0;
  out += text(
      16, mid, y_label,
      " text-anchor=\"middle\" class=\"axis-label\" transform=\"rotate(-90 16 " + px(mid) + ")\"");
  return extra;
}

struct Scale {
  double low, high, from, to;
  bool log = false;
  double operator()(double v) const {
    if (log) {
      v = std::log10(v);
      const double l = std::log10(low), h = std::log10(high);
      return from + (v - l) / (h - l) * (to - from);
    }
    return from + (v - low) / (high - low) * (to - from);
  }
};

std::string line(double x1, double x2, double y1, double y2, const std::string& attributes) {
  return "<line x1=\"" + px(x1) + "\" x2=\"" + px(x2) + "\" y1=\"" + px(y1) + "\" y2=\"" + px(y2) +
         "\" " + attributes + "/>";
}

// Axis lines, grid and tick labels of a plot area.
std::string axes(const Scale& x, const Scale& y, const std::vector<double>& x_ticks,
                 const std::vector<double>& y_ticks) {
  const std::string grid = "class=\"grid\" stroke=\"" + std::string(kGridStroke) + "\"";
  const std::string axis = "class=\"axis\" stroke=\"" + std::string(kAxisStroke) + "\"";
  std::string out = "<g class=\"axes\">";
  for (double t : y_ticks) {
    const double py = y(t);
    out += line(x.from, x.to, py, py, grid);
    out += text(x.from - 6, py + 4, num(t), " text-anchor=\"end\"");
  }
  for (double t : x_ticks) {
    const double pxx = x(t);
    out += line(pxx, pxx, y.from, y.from + 5, axis);
    out += text(pxx, y.from + 18, num(t), " text-anchor=\"middle\"");
  }
  out += line(x.from, x.to, y.from, y.from, axis);
  out += line(x.from, x.from, y.from, y.to, axis);
  return out + "</g>";
}

// The range of the plotted values, padded so that a flat series is not on the frame.
std::pair<double, double> y_range(const LinePlot& plot) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  const auto add = [&](const std::vector<double>& values) {
    for (double v : values) {
      if (!std::isfinite(v) || (plot.log_y && v <= 0)) continue;
      low = std::min(low, v);
      high = std::max(high, v);
    }
  };
  for (const Series& s : plot.series) add(s.y);
  if (plot.band) add(plot.band->low), add(plot.band->high);
  if (!std::isfinite(low)) return {plot.log_y ? 1e-8 : 0.0, 1.0};
  if (plot.integer_y && !plot.log_y) return {std::min(low, 0.0), std::max(high, 1.0) * 1.05};
  if (plot.log_y)
    return {std::pow(10, std::floor(std::log10(low))),
            std::pow(10, std::ceil(std::log10(high) + 1e-12))};
  if (high == low) return {low - 1, high + 1};
  const double pad = (high - low) * 0.05;
  return {low - pad, high + pad};
}

bool plottable(double v, const Scale& y) {
  return std::isfinite(v) && !(y.log && v <= 0);
}

std::string series_colour(const Series& s, std::size_t position) {
  return kColours[(s.colour >= 0 ? static_cast<std::size_t>(s.colour) : position) % kPaletteSize];
}

// The plottable points of a curve (see plottable), in strokes. A point left out breaks the line:
// drawn across the gap, it would show values that never were (on a log axis, a run's distance 0
// between two steps where it differed). Unless the points either side are within 1.5 px: such a
// break would not show, and one stroke keeps the per-pixel reduction bounded by the width.
std::vector<std::vector<std::size_t>> strokes(const std::vector<double>& xs,
                                              const std::vector<double>& ys, const Scale& x,
                                              const Scale& y) {
  std::vector<std::vector<std::size_t>> out;
  bool gap = false;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (!plottable(ys[k], y)) {
      gap = true;
      continue;
    }
    if (out.empty() || (gap && x(xs[k]) - x(xs[out.back().back()]) > 1.5)) out.emplace_back();
    out.back().push_back(k);
    gap = false;
  }
  return out;
}

// One series as one path of strokes, each reduced per pixel column; a stroke of one point is a dot.
std::string series_line(const Series& s, const std::string& colour, const Scale& x, const Scale& y,
                        int columns) {
  std::string path, dots;
  for (const std::vector<std::size_t>& stroke : strokes(s.x, s.y, x, y)) {
    std::vector<double> sx, sy;
    for (std::size_t k : stroke) sx.push_back(s.x[k]), sy.push_back(s.y[k]);
    reduce_per_pixel(sx, sy, x.low, x.high, columns);
    if (sx.size() == 1) {
      dots += "<circle cx=\"" + px(x(sx[0])) + "\" cy=\"" + px(y(sy[0])) + "\" r=\"2.5\" fill=\"" +
              colour + "\"/>";
      continue;
    }
    for (std::size_t k = 0; k < sx.size(); ++k) {
      path += (k ? " L" : path.empty() ? "M" : " M") + px(x(sx[k])) + "," + px(y(sy[k]));
    }
  }
  if (path.empty()) return dots;
  return "<path class=\"series\" fill=\"none\" stroke=\"" + colour + "\" d=\"" + path + "\"/>" +
         dots;
}

// One stroke of the band as a filled polygon: its upper edge left to right, then its lower edge
// back. Per pixel column the highest `high` and the lowest `low`, so it keeps its extremes as
// series do; on a log axis a low of 0 or less is drawn at the axis' bottom. A stroke one column
// wide is a thick vertical line.
std::string band_polygon(const Band& band, const std::vector<std::size_t>& stroke, const Scale& x,
                         const Scale& y) {
  std::vector<double> bx, low, high;
  long last_column = std::numeric_limits<long>::min();
  for (std::size_t k : stroke) {
    const double h = band.high[k];
    const double l = plottable(band.low[k], y) ? std::max(band.low[k], y.low) : y.low;
    const long column = std::lround(std::floor(x(band.x[k])));
    if (column == last_column) {
      low.back() = std::min(low.back(), l);
      high.back() = std::max(high.back(), h);
      continue;
    }
    last_column = column;
    bx.push_back(band.x[k]), low.push_back(l), high.push_back(h);
  }
  const bool line = bx.size() == 1;
  if (line) bx.push_back(bx[0]), low.push_back(low[0]), high.push_back(high[0]);
  std::string points;
  for (std::size_t k = 0; k < bx.size(); ++k) points += px(x(bx[k])) + "," + px(y(high[k])) + " ";
  for (std::size_t k = bx.size(); k-- > 0;) points += px(x(bx[k])) + "," + px(y(low[k])) + " ";
  points.pop_back();
  return "<polygon class=\"band\" fill=\"" + std::string(kBandFill) +
         "\" fill-opacity=\"0.35\" stroke=\"" + kBandFill + "\" stroke-width=\"" +
         (line ? "3" : "0.5") + "\" points=\"" + points + "\"/>";
}

std::string band_polygons(const Band& band, const Scale& x, const Scale& y) {
  std::string out;
  for (const auto& stroke : strokes(band.x, band.high, x, y))
    out += band_polygon(band, stroke, x, y);
  return out;
}

}  // namespace

const char* palette_colour(std::size_t i) {
  return kColours[i % kPaletteSize];
}

std::string html_escaped(const std::string& raw) {
  return with_entities(printable(raw));
}

std::string html_lines_escaped(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += html_escaped(text.substr(start, end - start));
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::vector<double> ticks(double low, double high, int count, bool log, bool integer) {
  std::vector<double> out;
  if (!(high > low)) return {low};
  if (log) {
    for (double e = std::ceil(std::log10(low) - 1e-9); e <= std::log10(high) + 1e-9; ++e) {
      out.push_back(std::pow(10, e));
    }
    // Many decades: every k-th, so labels do not collide.
    const std::size_t k = (out.size() + count - 1) / std::max(1, count);
    std::vector<double> thinned;
    for (std::size_t i = 0; i < out.size(); i += std::max<std::size_t>(1, k)) {
      thinned.push_back(out[i]);
    }
    return thinned;
  }
  const double raw = (high - low) / std::max(1, count);
  const double power = std::pow(10, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  if (integer) step = std::max(1.0, std::round(step));
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

void reduce_per_pixel(std::vector<double>& x, std::vector<double>& y, double x_low, double x_high,
                      int columns) {
  if (static_cast<int>(x.size()) <= 2 * columns || !(x_high > x_low)) return;
  std::vector<double> rx, ry;
  std::size_t i = 0;
  while (i < x.size()) {
    const int column = std::clamp(
        static_cast<int>((x[i] - x_low) / (x_high - x_low) * (columns - 1)), 0, columns - 1);
    std::size_t lo = i, hi = i, j = i;
    for (; j < x.size(); ++j) {
      const int c = std::clamp(static_cast<int>((x[j] - x_low) / (x_high - x_low) * (columns - 1)),
                               0, columns - 1);
      if (c != column) break;
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    for (std::size_t k : {std::min(lo, hi), std::max(lo, hi)}) {
      if (rx.empty() || rx.back() != x[k] || ry.back() != y[k]) {
        rx.push_back(x[k]);
        ry.push_back(y[k]);
      }
    }
    i = j;
  }
  x = std::move(rx);
  y = std::move(ry);
}

std::string line_plot(const LinePlot& plot) {
  std::vector<LegendEntry> entries;
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  const auto extend = [&](const std::vector<double>& xs) {
    for (double v : xs) x_low = std::min(x_low, v), x_high = std::max(x_high, v);
  };
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    entries.push_back({plot.series[i].label, series_colour(plot.series[i], i)});
    extend(plot.series[i].x);
  }
  if (plot.band) {
    entries.push_back({plot.band->label, kBandFill, true});
    extend(plot.band->x);
  }
  if (!std::isfinite(x_low)) x_low = 0, x_high = 1;
  if (x_high == x_low) x_high = x_low + 1;
  const auto [y_low, y_high] = y_range(plot);
  std::string out;
  const int extra =
      frame(out, plot.width, plot.height, plot.title, entries, plot.x_label, plot.y_label);
  const Scale x{x_low, x_high, double(kLeft), double(plot.width - kRight)};
  const Scale y{y_low, y_high, double(plot.height + extra - kBottom), double(kTop + extra),
                plot.log_y};
  out += axes(x, y, ticks(x_low, x_high, 8, false, plot.integer_x),
              ticks(y_low, y_high, 5, plot.log_y, plot.integer_y));
  if (plot.band) out += band_polygons(*plot.band, x, y);
  const int columns = plot.width - kLeft - kRight;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    out += series_line(plot.series[i], series_colour(plot.series[i], i), x, y, columns);
  }
  if (plot.marker_x) {
    const double mx = x(*plot.marker_x);
    out += "<line class=\"marker\" x1=\"" + px(mx) + "\" x2=\"" + px(mx) + "\" y1=\"" + px(y.from) +
           "\" y2=\"" + px(y.to) + "\"/>";
    out += text(mx + 4, y.to + 12, plot.marker_label, " class=\"marker-label\"");
  }
  return out + "</svg>";
}

std::string cell_map(const CellMap& map) {
  constexpr int kRow = 14, kLabel = 190;
  const int height = kTop + kRow * static_cast<int>(map.rows.size()) + kBottom;
  std::string out;
  const int first_row = kTop + frame(out, map.width, height, map.title,
                                     {{map.on_label, kColours[0]}}, map.x_label, "");
  const std::size_t columns = map.cells.empty() ? 0 : map.cells[0].size();
  const double left = kLabel, right = map.width - kRight;
  // More columns than pixels: each pixel column stands for a bin of columns, drawn when any is.
  const std::size_t bins = std::min<std::size_t>(columns, static_cast<std::size_t>(right - left));
  const double per = bins == 0 ? 0 : (right - left) / static_cast<double>(bins);
  const auto bin_of = [&](std::size_t c) { return c * bins / std::max<std::size_t>(1, columns); };
  for (std::size_t r = 0; r < map.rows.size(); ++r) {
    const double top = first_row + kRow * static_cast<double>(r);
    out += text(left - 6, top + kRow - 3, map.rows[r], " text-anchor=\"end\" class=\"row-label\"");
    out += "<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(right - left) +
           "\" height=\"" + std::to_string(kRow - 2) + "\" class=\"cell-off\"/>";
    // Runs of true cells as one rectangle each, at least a pixel wide: a single differing step
    // of 10,000 stays visible.
    std::vector<bool> row(bins, false);
    for (std::size_t c = 0; c < map.cells[r].size(); ++c) {
      if (map.cells[r][c]) row[bin_of(c)] = true;
    }
    for (std::size_t c = 0; c < row.size();) {
      if (!row[c]) {
        ++c;
        continue;
      }
      std::size_t end = c;
      while (end < row.size() && row[end]) ++end;
      out += "<rect x=\"" + px(left + per * static_cast<double>(c)) + "\" y=\"" + px(top) +
             "\" width=\"" + px(std::max(1.0, per * static_cast<double>(end - c))) +
             "\" height=\"" + std::to_string(kRow - 2) + "\" fill=\"" + kColours[0] + "\"/>";
      c = end;
    }
  }
  const double bottom = first_row + kRow * static_cast<double>(map.rows.size());
  if (columns > 0) {
    const double last = static_cast<double>(map.first_column + std::int64_t(columns) - 1);
    for (double t :
         ticks(double(map.first_column), std::max(last, double(map.first_column) + 1), 8, false)) {
      if (t > last) break;
      const double x = left + (right - left) * (t - double(map.first_column) + 0.5) /
                                  static_cast<double>(columns);
      out += text(x, bottom + 14, num(t), " text-anchor=\"middle\"");
    }
  }
  return out + "</svg>";
}

std::string strip_plot(const StripPlot& plot) {
  constexpr int kBand = 34, kLabel = 190;
  const int height = kTop + kBand * static_cast<int>(plot.groups.size()) + kBottom;
  std::vector<LegendEntry> entries;
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const auto& g : plot.groups) {
    entries.push_back({g.label, kColours[entries.size() % kPaletteSize]});
    for (double v : g.values) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  if (!std::isfinite(low)) low = 0, high = 1;
  if (high == low) low -= 1, high += 1;
  const double pad = (high - low) * 0.05;
  const Scale x{low - pad, high + pad, double(kLabel), double(plot.width - kRight)};
  std::string out;
  const int first_band =
      kTop + frame(out, plot.width, height, plot.title, entries, plot.value_label, "");
  const double bottom = first_band + kBand * static_cast<double>(plot.groups.size());
  for (std::size_t i = 0; i < plot.groups.size(); ++i) {
    const double mid = first_band + kBand * (static_cast<double>(i) + 0.5);
    out += text(kLabel - 6, mid + 4, plot.groups[i].label, " text-anchor=\"end\"");
    for (double v : plot.groups[i].values) {
      out += "<circle cx=\"" + px(x(v)) + "\" cy=\"" + px(mid) + "\" r=\"4\" fill=\"" +
             kColours[i % kPaletteSize] + "\" fill-opacity=\"0.7\"/>";
    }
  }
  for (double t : ticks(low - pad, high + pad, 8, false)) {
    out += text(x(t), bottom + 16, num(t), " text-anchor=\"middle\"");
  }
  out += line(x.from, x.to, bottom, bottom,
              "class=\"axis\" stroke=\"" + std::string(kAxisStroke) + "\"");
  return out + "</svg>";
}

}  // namespace ra::report::svg
