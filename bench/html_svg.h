// bench/html_svg.h: inline SVG charts for the HTML report.
#pragma once

#include "report.h"

#include <string>
#include <utility>
#include <vector>

namespace rdmxbench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> pts;   // (size in bytes, value)
};

// Curves against message size (log2 x axis); log or linear y axis.
std::string svg_line_chart(const std::string &title, const std::string &ylabel, const std::vector<Series> &series,
                           bool log_y);
// N x N heat map of an all-pairs matrix, with a tooltip per cell.
std::string svg_heatmap(const Matrix &m, const std::vector<std::string> &hosts);
std::string html_escape(const std::string &s);

}  // namespace rdmxbench
