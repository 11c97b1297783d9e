// Shared by the bench unit tests (bench_linkrate_test.cc,
// bench_alone_test.cc): a made-up bandwidth matrix, and what rdmx-bench's
// text report prints for one.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "report.h"

namespace rdmxbench_test {

// "Each pair alone" bandwidth of n ranks, `value` MB/s on every link.
inline rdmxbench::Matrix bw_matrix(int n, double value) {
  rdmxbench::Matrix m;
  m.name = "bw_alone";
  m.title = "All-pairs bandwidth (MB/s), each pair alone";
  m.unit = "MB/s";
  m.higher_is_better = true;
  m.resize(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      m.at(a, b) = a == b ? rdmxbench::kNaN : value;
    }
  }
  return m;
}

inline std::string text_of(const rdmxbench::Matrix &m, const std::vector<std::string> &hosts) {
  char *buf = nullptr;
  std::size_t len = 0;
  std::FILE *f = open_memstream(&buf, &len);
  rdmxbench::TextOut(f).matrix(m, hosts);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

}  // namespace rdmxbench_test
