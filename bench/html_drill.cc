// bench/html_drill.cc: the drill-down of a grouped heat map. A map too big
// for one cell per rank pair (html_heatmap.cc) draws one cell per pair of
// hosts; the page also carries every link of the matrix in one inert JSON
// block, and a small script draws a host pair's rank x rank map from it when
// a reader opens that cell. Without scripts the page still shows the host
// map, and the block is never read.
//
// The block keeps each value to 0.05 % as a small integer, the natural log
// of value / ref in steps of `step`: the noise between healthy links is a
// handful of steps, so most values take two to four characters.
#include "html_svg.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

namespace rdmxbench {

namespace {

constexpr double kLogStep = 0.001;   // one step is 0.1 %; rounding keeps a value to 0.05 %

// Everything the script needs to draw a group pair: per rank its group and
// host, per link its value code, whether the verdict flagged it and why it
// could not talk.
nlohmann::json drill_json(const Matrix &m, const std::vector<std::string> &hosts) {
  const RankGroups groups = rank_groups(m.n, hosts);
  const double ref = std::isfinite(m.median) && m.median > 0 ? m.median : 1.0;
  nlohmann::json j = {{"name", m.name},        {"title", m.title}, {"unit", m.unit},
                      {"higher", m.higher_is_better}, {"ref", ref},       {"step", kLogStep},
                      {"n", m.n},              {"axis", groups.axis}, {"labels", groups.names}};
  j["median"] = std::isfinite(m.median) ? nlohmann::json(m.median) : nlohmann::json(nullptr);
  std::vector<int> group(static_cast<std::size_t>(m.n), 0);
  for (std::size_t g = 0; g < groups.ranks.size(); ++g) {
    for (int r : groups.ranks[g]) {
      group[static_cast<std::size_t>(r)] = static_cast<int>(g);
    }
  }
  j["group"] = group;
  // Host names once each, and per rank an index into them.
  std::vector<std::string> names;
  std::vector<int> host_of;
  std::map<std::string, int> seen;
  if (hosts.size() == static_cast<std::size_t>(m.n)) {
    for (const std::string &h : hosts) {
      auto [it, added] = seen.emplace(h, static_cast<int>(names.size()));
      if (added) {
        names.push_back(h);
      }
      host_of.push_back(it->second);
    }
  }
  j["hosts"] = names;
  j["host"] = host_of;
  nlohmann::json q = nlohmann::json::array(), flagged = nlohmann::json::array(), errors = nlohmann::json::array();
  std::vector<std::string> reasons;
  std::map<std::string, int> reason_at;
  for (std::size_t i = 0; i < m.v.size(); ++i) {
    const double v = m.v[i];
    q.push_back(std::isfinite(v) && v > 0 ? nlohmann::json(std::lround(std::log(v / ref) / kLogStep))
                                          : nlohmann::json(nullptr));
    if (m.flagged[i] != 0) {
      flagged.push_back(i);
    }
    if (!m.err[i].empty()) {
      auto [it, added] = reason_at.emplace(m.err[i], static_cast<int>(reasons.size()));
      if (added) {
        reasons.push_back(m.err[i]);
      }
      errors.push_back({i, it->second});
    }
  }
  j["q"] = std::move(q);
  j["flagged"] = std::move(flagged);
  j["errors"] = std::move(errors);   // [link index, index into reasons]
  j["reasons"] = reasons;
  return j;
}

}  // namespace

std::string drill_data(const Matrix &m, const std::vector<std::string> &hosts, const std::string &drill_id) {
  if (m.n <= kMaxHeatmapSide || drill_id.empty()) {
    return "";
  }
  // '<' appears only inside JSON strings, where \u003c means the same; so
  // no host name or reason can end the script element early.
  const std::string dumped = drill_json(m, hosts).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(dumped.size());
  for (char c : dumped) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  return "<script type=\"application/json\" class=\"rdmx-drill\" id=\"" + html_escape(drill_id) + "\">" + safe +
         "</script>\n";
}

}  // namespace rdmxbench

namespace rdmxbench {

namespace {

// Colours and scale as html_heatmap.cc draws them (kFlaggedFill, shade(),
// quality()), so a rank cell looks like the host cell it came from.
const char *const kDrillScript = R"JS(
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var FLAGGED = '#c00000', SILENT = '#222', SELF = '#ddd', UNMEASURED = '#bbb';
  var PALE_AT = 0.5, DARK_L = 40, PALE_L = 88, SWATCHES = 5;
  var MAP_SIDE = 480, MIN_CELL = 4, MAX_CELL = 40, MAX_LABELS = 24, CHAR_W = 6;
  var LEFT = 48, TOP = 52, MARGIN = 8, MIN_WIDTH = 480;
  var SWATCH = 14, GAP = 6, TEXT = 11, KEY_W = 170, LEGEND_AT = 24, LEGEND_H = 70;   // the legend
  var cache = {};

  function clamp(x, lo, hi) { return Math.min(hi, Math.max(lo, x)); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }
  function fmt(v) { return v.toFixed(1); }
  function shade(t) { return 'hsl(210,45%,' + Math.round(PALE_L - (PALE_L - DARK_L) * clamp(t, 0, 1)) + '%)'; }
  function quality(d, v) {
    if (!(d.median > 0) || !(v > 0)) return 1;
    var q = d.higher ? v / d.median : d.median / v;
    return (q - PALE_AT) / (1 - PALE_AT);
  }
  // The block of one map, parsed on first use, with its lookups built.
  function data(id) {
    if (!cache[id]) {
      var d = JSON.parse(document.getElementById(id).textContent);
      d.flagSet = new Set(d.flagged);
      d.reasonAt = new Map(d.errors.map(function (e) { return [e[0], d.reasons[e[1]]]; }));
      cache[id] = d;
    }
    return cache[id];
  }
  function ranksOf(d, g) {
    var out = [];
    for (var r = 0; r < d.n; ++r) if (d.group[r] === g) out.push(r);
    return out;
  }
  function who(d, r) { return 'rank ' + r + (d.host.length ? ' (' + d.hosts[d.host[r]] + ')' : ''); }
  function value(d, i) { return d.q[i] === null ? NaN : d.ref * Math.exp(d.q[i] * d.step); }

  // One rank pair: its fill, outline and tooltip, as the per-rank map has them.
  function cell(d, a, b) {
    var i = a * d.n + b, v = value(d, i), fl = d.flagSet.has(i), why = d.reasonAt.get(i);
    var c = { flagged: fl, silent: why !== undefined, tip: '',
              fill: a === b ? SELF : why !== undefined ? SILENT : fl ? FLAGGED
                  : isFinite(v) ? shade(quality(d, v)) : UNMEASURED };
    if (a !== b) {
      c.tip = who(d, a) + ' -> ' + who(d, b) + ': ' + (c.silent ? why : isFinite(v)
        ? String(Number(v.toPrecision(3))) + ' ' + d.unit + (fl ? ' (flagged)' : '') : 'not measured');
    }
    return c;
  }

  function labels(rows, cols, px) {
    var out = [], every = Math.max(1, Math.ceil(Math.max(rows.length, cols.length) / MAX_LABELS));
    var turned = CHAR_W * String(cols[cols.length - 1]).length > px * every - 2;
    var bottom = TOP + px * rows.length;
    rows.forEach(function (r, k) {
      if (k % every === 0) out.push('<text x="' + (LEFT - 4) + '" y="' + fmt(TOP + k * px + px / 2 + 4) +
                                    '" font-size="10" text-anchor="end">' + r + '</text>');
    });
    cols.forEach(function (r, k) {
      var x = LEFT + k * px + px / 2;
      if (k % every !== 0) return;
      out.push(turned ? '<text x="' + fmt(x + 3) + '" y="' + fmt(bottom + 4) + '" font-size="10" text-anchor="end" ' +
                        'transform="rotate(-90 ' + fmt(x + 3) + ' ' + fmt(bottom + 4) + ')">' + r + '</text>'
                      : '<text x="' + fmt(x) + '" y="' + fmt(bottom + 14) + '" font-size="10" text-anchor="middle">' +
                        r + '</text>');
    });
    return { svg: out.join(''), height: turned ? CHAR_W * String(cols[cols.length - 1]).length + 8 : 18 };
  }

  // As html_heatmap.cc's legend(): the blue scale, then red and black
  // explained only where they appear.
  function legend(d, y, anyFlagged, anySilent) {
    var out = [], x = MARGIN, y2 = y + SWATCH + GAP;
    for (var k = 0; k < SWATCHES; ++k) {
      out.push('<rect x="' + (MARGIN + k * SWATCH) + '" y="' + fmt(y) + '" width="' + SWATCH + '" height="' + SWATCH +
               '" fill="' + shade(k / (SWATCHES - 1)) + '"/>');
    }
    out.push('<text x="' + (MARGIN + SWATCHES * SWATCH + GAP) + '" y="' + fmt(y + TEXT) + '" font-size="11">' +
             (d.higher ? 'palest \u2264 median / 2, darkest \u2265 median (not a verdict)'
                       : 'palest \u2265 2 x median, darkest \u2264 median (not a verdict)') + '</text>');
    function key(fill, what) {
      out.push('<rect x="' + x + '" y="' + fmt(y2) + '" width="' + SWATCH + '" height="' + SWATCH + '" fill="' + fill +
               '" stroke="#000" stroke-width="2"/><text x="' + (x + SWATCH + GAP) + '" y="' + fmt(y2 + TEXT) +
               '" font-size="11">' + what + '</text>');
      x += KEY_W;
    }
    if (anyFlagged) key(FLAGGED, 'flagged by the verdict');
    if (anySilent) key(SILENT, 'cannot talk');
    if (!anyFlagged && !anySilent) {
      out.push('<text x="' + MARGIN + '" y="' + fmt(y2 + TEXT) +
               '" font-size="11">no link flagged between these groups</text>');
    }
    return out.join('');
  }


  // The rank x rank map of sender group ga and receiver group gb.
  function drillSvg(d, ga, gb) {
    var rows = ranksOf(d, ga), cols = ranksOf(d, gb);
    var side = Math.max(rows.length, cols.length);
    var px = clamp(MAP_SIDE / side, MIN_CELL, MAX_CELL), outline = clamp(px / 5, 1, 3);
    var lab = labels(rows, cols, px), parts = [], anyFlagged = false, anySilent = false;
    rows.forEach(function (a, i) {
      cols.forEach(function (b, j) {
        var c = cell(d, a, b);
        anyFlagged = anyFlagged || c.flagged;
        anySilent = anySilent || c.silent;
        parts.push('<rect x="' + fmt(LEFT + j * px) + '" y="' + fmt(TOP + i * px) + '" width="' + fmt(px) +
                   '" height="' + fmt(px) + '" fill="' + c.fill + '" stroke="' + (c.flagged ? '#000' : '#fff') +
                   '" stroke-width="' + (c.flagged ? fmt(outline) : 1) + '">' +
                   (c.tip ? '<title>' + esc(c.tip) + '</title>' : '') + '</rect>');
      });
    });
    var under = TOP + px * rows.length + lab.height, width = Math.max(LEFT + px * cols.length + 20, MIN_WIDTH);
    var name = d.labels[ga] + ' -> ' + d.labels[gb];
    return '<svg xmlns="' + NS + '" width="' + fmt(width) + '" height="' + fmt(under + LEGEND_H) +
      '" role="img" class="heatmap drill" aria-label="' + esc(d.title + ', ' + name) + '">' +
      '<text x="8" y="18" font-size="13" font-weight="bold">' + esc(d.title) + '</text>' +
      '<text x="8" y="36" font-size="11">' + esc(d.axis === 'host' ? 'host ' + name : 'ranks from ' + name) +
      '; median of the whole matrix ' + (d.median === null ? '-' : d.median.toFixed(2)) + ' ' + esc(d.unit) +
      '</text>' + lab.svg + parts.join('') +
      '<text x="' + fmt(LEFT + px * cols.length / 2) + '" y="' + fmt(under + 12) +
      '" font-size="11" text-anchor="middle">receiver rank (rows: sender rank)</text>' +
      legend(d, under + LEGEND_AT, anyFlagged, anySilent) + '</svg>';
  }
)JS"
                                      R"JS(
  // The panel that stands in for a map while one of its cells is open.
  function panelOf(map) {
    var p = map.nextElementSibling;
    if (p && p.classList.contains('drill-panel')) return p;
    p = document.createElement('div');
    p.className = 'drill-panel';
    p.tabIndex = -1;
    p.hidden = true;
    p.addEventListener('keydown', function (e) { if (e.key === 'Escape') back(map); });
    map.after(p);
    return p;
  }
  function open(map, ga, gb, focus) {
    var d = data(map.dataset.drill), p = panelOf(map);
    p.innerHTML = '<p class="meta"><button type="button" class="drill-back">Back to the ' +
      (d.axis === 'host' ? 'host' : 'group') + ' map</button> Every link from ' + esc(d.labels[ga]) + ' to ' +
      esc(d.labels[gb]) + '; hover a cell for its value (Esc goes back).</p><div class="drill-scroll">' +
      drillSvg(d, ga, gb) + '</div>';
    p.querySelector('.drill-back').addEventListener('click', function () { back(map); });
    p.dataset.open = ga + ',' + gb;
    p.hidden = false;
    map.style.display = 'none';
    // The focus goes to the panel, not its button: the key that opened it
    // (Space activates a button when released) must not press Back.
    if (focus) p.focus();
  }
  function close(map) {
    var p = panelOf(map);
    if (!p.dataset.open) return;
    p.hidden = true;
    p.innerHTML = '';
    delete p.dataset.open;
    map.style.display = '';
  }
  // Back: the fragment moves to the map itself, so a reload or a shared
  // link shows the map, and the cell that was open gets the focus again.
  function back(map) {
    var was = panelOf(map).dataset.open;
    close(map);
    location.hash = map.id;
    var c = was && map.querySelector('[data-cell="' + was + '"]');
    if (c) rove(map, c);
  }
  function rove(map, c) {
    map.querySelectorAll('[data-cell][tabindex="0"]').forEach(function (o) { o.setAttribute('tabindex', '-1'); });
    c.setAttribute('tabindex', '0');
    c.focus();
  }

  var focusNext = null;   // the map whose drill-down the reader just asked for
  function go(map, a, b) {
    var d = data(map.dataset.drill);
    focusNext = map;
    location.hash = 'drill=' + [map.dataset.matrix, d.labels[a], d.labels[b]].map(encodeURIComponent).join(',');
  }
  // #drill=ROW,COL opens that group pair in every grouped map,
  // #drill=MATRIX,ROW,COL in the map of that matrix; anything else shows the maps.
  function apply() {
    var m = /^#drill=(.*)$/.exec(location.hash), want = [];
    try { want = m ? decodeURIComponent(m[1]).split(',') : []; } catch (e) { want = []; }
    maps.forEach(function (map) {
      var t = want.length === 3 ? (want[0] === map.dataset.matrix ? want.slice(1) : null)
                                : want.length === 2 ? want : null;
      var d = t && data(map.dataset.drill), ga = d ? d.labels.indexOf(t[0]) : -1, gb = d ? d.labels.indexOf(t[1]) : -1;
      if (ga >= 0 && gb >= 0) open(map, ga, gb, focusNext === map);
      else close(map);
    });
    focusNext = null;
  }

  var MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  // A map's cells become buttons: one tab stop per map, arrows move
  // between cells, Enter or Space (or a click) opens one.
  function wire(map) {
    var cells = map.querySelectorAll('[data-cell]'), side = Math.round(Math.sqrt(cells.length));
    if (!map.id) map.id = map.dataset.drill + '-map';
    map.classList.add('live');
    cells.forEach(function (c, k) {
      c.setAttribute('tabindex', k === 0 ? '0' : '-1');
      c.setAttribute('role', 'button');
    });
    function at(c) { return c.getAttribute('data-cell').split(',').map(Number); }
    map.addEventListener('click', function (e) {
      var c = e.target.closest('[data-cell]');
      if (c) go(map, at(c)[0], at(c)[1]);
    });
    map.addEventListener('keydown', function (e) {
      var c = e.target.closest('[data-cell]'), mv = MOVES[e.key];
      if (!c) return;
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        go(map, at(c)[0], at(c)[1]);
      } else if (mv) {
        e.preventDefault();
        var ab = at(c), a = clamp(ab[0] + mv[0], 0, side - 1), b = clamp(ab[1] + mv[1], 0, side - 1);
        rove(map, map.querySelector('[data-cell="' + a + ',' + b + '"]'));
      }
    });
  }

  var maps = Array.prototype.slice.call(document.querySelectorAll('svg[data-drill]'));
  maps.forEach(wire);
  window.addEventListener('hashchange', apply);
  apply();
})();
)JS";

}  // namespace

const char *drill_script() { return kDrillScript; }

}  // namespace rdmxbench
