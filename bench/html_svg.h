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
// N x N heat map of an all-pairs matrix, with a tooltip per cell. Beyond
// kMaxHeatmapSide ranks one cell per group (rank_groups); `drill_id`, when
// not empty, names the drill-down data block of the same map (drill_data),
// and the map's cells become the drill-down's targets.
inline constexpr int kMaxHeatmapSide = 64;
std::string svg_heatmap(const Matrix &m, const std::vector<std::string> &hosts, const std::string &drill_id = "");

// The ranks a grouped heat map draws as one row/column each: by host when
// there are 2..kMaxHeatmapSide hosts, else blocks of consecutive ranks.
struct RankGroups {
  std::vector<std::vector<int>> ranks;   // per group, in rank order
  std::vector<std::string> names;        // per group: its host, or its first rank
  std::string axis;                      // what a group is ("host", "ranks, 8 per block")
};
RankGroups rank_groups(int n, const std::vector<std::string> &hosts);

// The drill-down of a grouped heat map (html_drill.cc): every link's value
// in one inert JSON block (<script type="application/json" id=drill_id>),
// read by drill_script() only when a reader opens a group pair. Returns ""
// for a map drawn one cell per rank pair.
std::string drill_data(const Matrix &m, const std::vector<std::string> &hosts, const std::string &drill_id);
// The page's one script: opens a group pair of a grouped map on a click,
// Enter or Space on its cell, or from the URL fragment #drill=ROW,COL (every
// grouped map) or #drill=MATRIX,ROW,COL (one map; MATRIX is Matrix::name).
const char *drill_script();
std::string html_escape(const std::string &s);

}  // namespace rdmxbench
