// bench/main.cc: rdmx-bench / rdmx-bench-mpi entry point. The executable's
// backend (rdmx or MPI) comes from the make_backend() it is linked with.
#include "commands.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace rdmxbench {

namespace {

bool needs_pairs(const std::string &c) {
  return c == "latency" || c == "bw" || c == "bibw" || c == "mr" || c == "allpairs";
}

bool validate(const Options &opt, int nranks, std::string &err) {
  for (const std::string &c : opt.colls) {
    if (!known_collective(c)) {
      err = "unknown collective '" + c + "' in --colls";
      return false;
    }
  }
  if (needs_pairs(opt.command) && nranks < 2) {
    err = opt.command + " needs at least 2 ranks (run it under mpirun -np 2 or more)";
    return false;
  }
  return true;
}

void run_command(Ctx &ctx) {
  const Options &o = ctx.opt;
  const std::string &c = o.command;
  std::size_t top = default_max_size(o);
  if (c == "latency") {
    run_latency(ctx, size_list(o, 0, top));
  } else if (c == "bw" || c == "bibw") {
    run_bw(ctx, size_list(o, 1, top), c == "bibw");
  } else if (c == "mr") {
    run_mr(ctx, size_list(o, 1, top));
  } else if (c == "allpairs") {
    run_allpairs(ctx, allpairs_config(o));
  } else if (c == "coll") {
    run_coll(ctx, o.colls.empty() ? all_collective_names() : o.colls, size_list(o, 8, top));
  } else if (c == "connect") {
    run_connect(ctx, o.repeat);
  } else {
    run_bringup(ctx);
  }
}

// Rank 0: final text lines and the machine-readable files. Returns false if
// a file could not be written.
bool write_outputs(Ctx &ctx) {
  Report &r = ctx.rep;
  for (const std::string &l : r.summary) {
    if (r.command == "bringup") {
      ctx.text.line(l.empty() ? std::string() : "# " + l);
    }
  }
  for (const Check &c : r.checks) {
    ctx.text.line("# Check " + c.name + ": " + (c.pass ? "pass" : "FAIL") + " (" + c.detail + ")");
  }
  ctx.text.line(std::string("# Result: ") + (r.passed() ? "PASS" : "FAIL"));
  bool ok = true;
  std::string err;
  auto put = [&](const std::string &path, const std::string &text) {
    if (!path.empty() && !write_output(path, text, err)) {
      std::fprintf(stderr, "%s: cannot write %s\n", ctx.opt.prog.c_str(), err.c_str());
      ok = false;
    }
  };
  put(ctx.opt.json, json_report(r));
  put(ctx.opt.csv, csv_report(r));
  put(ctx.opt.html, html_report(r));
  return ok;
}

// The last lines of the bring-up summary: data verification and the verdict.
void close_bringup_summary(Report &r) {
  std::string data = r.mismatches == 0 ? "every received byte checked (" + std::to_string(r.bytes_checked) +
                                             " bytes), no corruption"
                                       : std::to_string(r.mismatches) + " messages arrived CORRUPTED (see stderr)";
  r.summary.push_back("Data:            " + data);
  std::string failed;
  for (const Check &c : r.checks) {
    failed += c.pass ? "" : (failed.empty() ? "" : ", ") + c.name;
  }
  r.summary.push_back(std::string("Result:          ") +
                      (failed.empty() ? "PASS: every check passed" : "FAIL: " + failed + " (see above)"));
}

// Combines every rank's verification counts, writes the report, agrees on
// the exit code.
int finish(Ctx &ctx) {
  ctx.progress_done();
  std::uint64_t mine[2] = {ctx.mismatches(), ctx.bytes_checked()};
  std::uint64_t all[2] = {0, 0};
  ctx.check(ctx.be.allreduce(mine, all, 2, DType::u64, ROp::sum), "allreduce of verification counts", -1,
            sizeof mine);
  ctx.hosts();
  int code = kExitPass;
  if (ctx.root()) {
    Report &r = ctx.rep;
    r.verify = ctx.opt.verify;
    r.mismatches = all[0];
    r.bytes_checked = all[1];
    if (r.verify || all[0] > 0) {
      r.checks.push_back(Check{"data verification", all[0] == 0,
                               std::to_string(all[1]) + " bytes checked, " + std::to_string(all[0]) +
                                   " mismatching messages"});
    }
    if (r.command == "bringup") {
      close_bringup_summary(r);
    }
    code = r.passed() ? kExitPass : kExitFail;
    if (!write_outputs(ctx)) {
      code = kExitError;
    }
  }
  ctx.check(ctx.be.bcast(&code, sizeof code, 0), "bcast of the exit code", 0, sizeof code);
  return code;
}

int usage_exit(Backend &be, const Options &opt, ParseResult pr, const std::string &err) {
  if (be.rank() == 0) {
    if (pr == ParseResult::help) {
      std::fputs(usage_text(opt.prog).c_str(), stdout);
    } else if (pr == ParseResult::version) {
      std::printf("%s 0.1.0 (%s)\n", opt.prog.c_str(), be.version().c_str());
    } else {
      std::fprintf(stderr, "%s: %s\n%s", opt.prog.c_str(), err.c_str(), usage_text(opt.prog).c_str());
    }
  }
  be.stop();
  return pr == ParseResult::error ? kExitUsage : kExitPass;
}

}  // namespace

}  // namespace rdmxbench

int main(int argc, char **argv) {
  using namespace rdmxbench;
  // connect, bringup and allpairs time and test every link: rdmx connects
  // the full mesh inside rdmx_init for them, whatever RDMX_CONNECT says
  // (connections made on first use would hide in the first exchange).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "connect") == 0 || std::strcmp(argv[i], "bringup") == 0 ||
        std::strcmp(argv[i], "allpairs") == 0) {
      setenv("RDMX_CONNECT", "mesh", 1);
      break;
    }
  }
  // Before the backend sees argv (MPI_Init may rewrite it); after the
  // setenv above, which is in effect for the run.
  Provenance prov = provenance_of(argc, argv);
  std::unique_ptr<Backend> be = make_backend();
  Options opt;
  const char *slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  opt.prog = slash != nullptr ? slash + 1 : (argc > 0 ? argv[0] : "rdmx-bench");
  Status s = be->start(argc, argv);
  if (!s.ok()) {
    bool skip = be->unavailable(s);
    std::fprintf(stderr, "%s: initialisation failed: %s (code %d)%s\n", opt.prog.c_str(), s.text.c_str(), s.code,
                 skip ? "; skipping" : "");
    return skip ? kExitSkip : kExitError;
  }
  std::string err;
  ParseResult pr = parse_options(argc, argv, opt, err);
  if (pr == ParseResult::run && !validate(opt, be->size(), err)) {
    pr = ParseResult::error;
  }
  if (pr != ParseResult::run) {
    return usage_exit(*be, opt, pr, err);
  }
  Report rep;
  rep.prog = opt.prog;
  rep.backend = be->name();
  rep.backend_version = be->version();
  rep.command = opt.command;
  rep.provenance = std::move(prov);
  rep.provenance.settings = be->settings();
  rep.ranks = be->size();
  Ctx ctx(*be, opt, rep);
  run_command(ctx);
  int code = finish(ctx);
  s = be->stop();
  if (!s.ok()) {
    std::fprintf(stderr, "%s: rank %d: finalize failed: %s\n", opt.prog.c_str(), ctx.rank, s.text.c_str());
    code = code == kExitPass ? kExitError : code;
  }
  return code;
}
