// What rdmx-bench's text report prints for one matrix, for the bench unit
// tests (bench_linkrate_test.cc, bench_alone_test.cc).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "report.h"

namespace rdmxbench_test {

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
