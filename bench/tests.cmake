# bench/tests.cmake: ctest entries for rdmx-bench and its MPI twin.
# Included from tests/CMakeLists.txt after RdmxTestHelpers.cmake, which
# defines rdmx_mpi_test().
#
# Every subcommand runs with --verify --quick on 2 and 4 ranks: once on the
# MPI twin (label "native": shared memory / TCP loopback on any host) and
# once on rdmx (label "verbs": needs an RDMA device, exit 77 = skip without
# one). The --inject-corruption runs flip one received byte and must fail,
# proving that --verify catches corruption.

set(RDMX_BENCH_TEST_COMMANDS latency bw bibw mr allpairs coll connect bringup)
# The HTML, JSON and report checkers are Python scripts.
find_package(Python3 COMPONENTS Interpreter QUIET)
# The HTML report's drill-down data is written with nlohmann::json (bench/
# requires it; imported targets are per directory, so it is found here again).
find_package(nlohmann_json 3 REQUIRED)

# rdmx_bench_tests(<target> <name prefix> <label> <timeout> <allpairs flags...>)
function(rdmx_bench_tests target prefix label timeout)
  set(exe $<TARGET_FILE:${target}>)
  foreach(np 2 4)
    foreach(cmd ${RDMX_BENCH_TEST_COMMANDS})
      set(extra)
      if(cmd STREQUAL "allpairs" OR cmd STREQUAL "bringup")
        set(extra ${ARGN})
      endif()
      rdmx_mpi_test(NAME ${prefix}_${cmd}_np${np} NP ${np}
        COMMAND ${exe} ${cmd} --verify --quick --quiet ${extra}
        TIMEOUT ${timeout} LABELS ${label})
    endforeach()
  endforeach()
  # The same runs with one received byte flipped: --verify must fail them.
  foreach(cmd latency bw coll allpairs)
    rdmx_mpi_test(NAME ${prefix}_${cmd}_inject_corruption NP 2
      COMMAND ${exe} ${cmd} --verify --quick --quiet --max-size 4K --inject-corruption
      TIMEOUT ${timeout} LABELS ${label})
    set_tests_properties(${prefix}_${cmd}_inject_corruption PROPERTIES WILL_FAIL TRUE)
  endforeach()
  # The all-pairs diagnosis, on links made slow or silent on purpose
  # (hidden test hooks): it must name the node, the link, the silent pair.
  set(ap ${exe} allpairs --quick --quiet --flag-fraction 0 --max-lat 20000)
  rdmx_mpi_test(NAME ${prefix}_allpairs_diagnose_node NP 4 COMMAND ${ap} --inject-slow 2
    TIMEOUT ${timeout} LABELS ${label})
  rdmx_mpi_test(NAME ${prefix}_allpairs_diagnose_link NP 4 COMMAND ${ap} --inject-slow 0:1
    TIMEOUT ${timeout} LABELS ${label})
  rdmx_mpi_test(NAME ${prefix}_allpairs_diagnose_silent NP 4 COMMAND ${ap} --inject-silent 0:1 --pair-timeout 2
    TIMEOUT ${timeout} LABELS ${label})
  set_tests_properties(${prefix}_allpairs_diagnose_node PROPERTIES
    PASS_REGULAR_EXPRESSION "Verdict: suspect node rank 2 ")
  set_tests_properties(${prefix}_allpairs_diagnose_link PROPERTIES
    PASS_REGULAR_EXPRESSION "Verdict: suspect link between rank 0 \\([^)]*\\) and rank 1 ")
  set_tests_properties(${prefix}_allpairs_diagnose_silent PROPERTIES
    PASS_REGULAR_EXPRESSION "rank 0 \\([^)]*\\) -> rank 1 \\([^)]*\\): cannot talk \\(alone\\): latency exchange: no progress")
  # The alone phase sampled (the default above 32 ranks, forced here): 2 pairs
  # per rank alone, every pair all at once, and the summary says so.
  rdmx_mpi_test(NAME ${prefix}_allpairs_alone_sample NP 4
    COMMAND ${exe} allpairs --verify --quick --quiet --alone sample ${ARGN}
    TIMEOUT ${timeout} LABELS ${label})
  set_tests_properties(${prefix}_allpairs_alone_sample PROPERTIES
    PASS_REGULAR_EXPRESSION "Checked 12 links [^\n]*, and 8 of them alone\\.\n# Alone: 8 of 12 pairs sampled \\(--alone sample"
    FAIL_REGULAR_EXPRESSION "VERIFY FAILED|suspect link\\(s\\)")
  # ... and fail for the right reason.
  rdmx_mpi_test(NAME ${prefix}_inject_corruption_message NP 2
    COMMAND ${exe} latency --verify --quick --quiet --max-size 4K --inject-corruption
    TIMEOUT ${timeout} LABELS ${label})
  set_tests_properties(${prefix}_inject_corruption_message PROPERTIES
    PASS_REGULAR_EXPRESSION "VERIFY FAILED: latency message")
endfunction()

# The test ranks share a host (or a small guest) with other tests, so their
# timings are noise: the allpairs and bringup runs check that every pair can
# talk and that every byte arrives intact (--flag-fraction 0), not speed; the
# diagnose tests above check the speed verdicts with delays far above noise.
if(TARGET rdmx-bench-mpi)
  rdmx_bench_tests(rdmx-bench-mpi bench_mpi native 300 --flag-fraction 0)
  # The HTML report: colours follow the verdict, a lone value is written out.
  add_test(NAME bench_mpi_html COMMAND ${PROJECT_SOURCE_DIR}/tests/unit/bench_html_check.sh
    $<TARGET_FILE:rdmx-bench-mpi> ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS})
  set_tests_properties(bench_mpi_html PROPERTIES LABELS native TIMEOUT 300
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  if(Python3_Interpreter_FOUND)
    # The same pages loaded by headless Chromium, checked as rendered
    # (skipped, exit 77, where chromium is not installed).
    # A made-up 512-rank run's page, for the heat maps at scale.
    add_executable(bench_html_synth ${PROJECT_SOURCE_DIR}/tests/unit/bench_html_synth.cc
      ${PROJECT_SOURCE_DIR}/bench/report.cc ${PROJECT_SOURCE_DIR}/bench/html.cc
      ${PROJECT_SOURCE_DIR}/bench/html_svg.cc ${PROJECT_SOURCE_DIR}/bench/html_heatmap.cc
      ${PROJECT_SOURCE_DIR}/bench/html_drill.cc)
    target_include_directories(bench_html_synth PRIVATE ${PROJECT_SOURCE_DIR}/bench)
    target_compile_features(bench_html_synth PRIVATE cxx_std_20)
    target_link_libraries(bench_html_synth PRIVATE rdmx_warnings nlohmann_json::nlohmann_json)
    add_test(NAME bench_mpi_html_render COMMAND ${PROJECT_SOURCE_DIR}/tests/unit/bench_html_render.sh
      ${Python3_EXECUTABLE} $<TARGET_FILE:bench_html_synth> $<TARGET_FILE:rdmx-bench-mpi>
      ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS})
    # Eleven page loads, seven of them the 1.8 MB page of 512 ranks: about 80 s on a busy 2-core host.
    set_tests_properties(bench_mpi_html_render PROPERTIES LABELS "native;html" TIMEOUT 300
      SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "bench html render: OK"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # latency --rounds: one row per round, round 1 the main table's; the
    # options refused where they mean nothing.
    add_test(NAME bench_mpi_latency_rounds COMMAND ${PROJECT_SOURCE_DIR}/tests/unit/bench_rounds_check.sh
      ${Python3_EXECUTABLE} $<TARGET_FILE:rdmx-bench-mpi> ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS})
    set_tests_properties(bench_mpi_latency_rounds PROPERTIES LABELS native TIMEOUT 120
      PASS_REGULAR_EXPRESSION "bench rounds: OK"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # Every subcommand's --json - parses as JSON and says what it ran.
    foreach(cmd ${RDMX_BENCH_TEST_COMMANDS})
      add_test(NAME bench_mpi_json_${cmd} COMMAND ${PROJECT_SOURCE_DIR}/tests/unit/bench_json_check.sh
        ${Python3_EXECUTABLE} ${cmd} $<TARGET_FILE:rdmx-bench-mpi> ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS})
      set_tests_properties(bench_mpi_json_${cmd} PROPERTIES LABELS "native;json" TIMEOUT 120
        PASS_REGULAR_EXPRESSION "bench json ${cmd}: OK"
        ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    endforeach()
  endif()
endif()
# Verbs: every subcommand once on rdmx, where an RDMA device exists (exit 77,
# i.e. skipped, without one). The emulated test bed is slow, so the pairwise
# ones run on 2 ranks and the multi-rank ones on 4; the verify, corruption
# and diagnosis logic is shared with the MPI twin, which covers it above.
# Over rc in the guest: what only a device shows (bw: RDMA rendezvous at
# every size; connect: connection set-up; allpairs and bringup: the main job,
# whose pair tests include latency and bandwidth); latency, bibw, coll and mr
# add no rc path to those and run over shared memory only (SM_ONLY).
if(TARGET rdmx-bench)
  set(exe $<TARGET_FILE:rdmx-bench>)
  foreach(cmd latency bw bibw coll connect)
    set(where SM)
    if(cmd MATCHES "^(latency|bibw|coll)$")
      set(where SM_ONLY)
    endif()
    rdmx_mpi_test(NAME bench_rdmx_${cmd}_np2 NP 2 COMMAND ${exe} ${cmd} --verify --quick --quiet
      TIMEOUT 600 LABELS verbs ${where})
  endforeach()
  foreach(cmd mr allpairs bringup)
    set(where SM)
    if(cmd STREQUAL "mr")
      set(where SM_ONLY)
    endif()
    rdmx_mpi_test(NAME bench_rdmx_${cmd}_np4 NP 4 COMMAND ${exe} ${cmd} --verify --quick --quiet --flag-fraction 0
      TIMEOUT 600 LABELS verbs ${where})
  endforeach()
  # latency --rounds on rdmx over shared memory: rank 1's wait outlasts its
  # spin in every pause and sleeps, then the next round must run.
  if(Python3_Interpreter_FOUND)
    add_test(NAME sm.bench_rdmx_latency_rounds COMMAND ${PROJECT_SOURCE_DIR}/tests/unit/bench_rounds_check.sh
      ${Python3_EXECUTABLE} ${exe} ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS})
    set_tests_properties(sm.bench_rdmx_latency_rounds PROPERTIES LABELS sm TIMEOUT 120
      PASS_REGULAR_EXPRESSION "bench rounds: OK"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;RDMX_TRANSPORTS=sm,self;${RDMX_SAN_ENV}")
  endif()
  rdmx_mpi_test(NAME bench_rdmx_inject_corruption_message NP 2
    COMMAND ${exe} latency --verify --quick --quiet --max-size 4K --inject-corruption TIMEOUT 600 LABELS verbs)
  set_tests_properties(bench_rdmx_inject_corruption_message PROPERTIES
    PASS_REGULAR_EXPRESSION "VERIFY FAILED: latency message")
endif()

# The port rate rules and the per-host text matrices on made-up runs (no
# device, no launcher): bench/linkrate.h, allpairs flagging, the reports,
# the sample of pairs tested alone (bench/allpairs_sample.h).
if(TARGET GTest::gtest_main)
  add_executable(bench_linkrate_test ${PROJECT_SOURCE_DIR}/tests/unit/bench_linkrate_test.cc
    ${PROJECT_SOURCE_DIR}/tests/unit/bench_alone_test.cc ${PROJECT_SOURCE_DIR}/bench/allpairs_sample.cc
    ${PROJECT_SOURCE_DIR}/bench/linkrate.cc ${PROJECT_SOURCE_DIR}/bench/report.cc
    ${PROJECT_SOURCE_DIR}/bench/allpairs_diag.cc ${PROJECT_SOURCE_DIR}/bench/html.cc
    ${PROJECT_SOURCE_DIR}/bench/html_svg.cc ${PROJECT_SOURCE_DIR}/bench/html_heatmap.cc
    ${PROJECT_SOURCE_DIR}/bench/html_drill.cc)
  target_include_directories(bench_linkrate_test PRIVATE ${PROJECT_SOURCE_DIR}/bench)
  target_compile_features(bench_linkrate_test PRIVATE cxx_std_20)
  target_link_libraries(bench_linkrate_test PRIVATE rdmx_warnings GTest::gtest_main nlohmann_json::nlohmann_json)
  include(GoogleTest)
  gtest_discover_tests(bench_linkrate_test TEST_PREFIX bench. PROPERTIES LABELS unit TIMEOUT 60
    DISCOVERY_TIMEOUT 60)
endif()

# scripts/perf/report.py (the guest comparison's report) on made-up raw
# directories: tables, per-mode targets and --check, percentiles, spread.
if(Python3_Interpreter_FOUND)
  add_test(NAME bench_perf_report COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/perf/report_test.py
    ${Python3_EXECUTABLE})
  set_tests_properties(bench_perf_report PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION "perf report: OK")
  # scripts/perf/sched_trace.py (compare.sh --trace's reading of the
  # scheduler traces) on a made-up trace.
  add_test(NAME bench_sched_trace COMMAND ${Python3_EXECUTABLE}
    ${PROJECT_SOURCE_DIR}/scripts/perf/sched_trace_test.py ${Python3_EXECUTABLE})
  set_tests_properties(bench_sched_trace PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION "sched trace: OK")
endif()

# bed-probe (compare.sh's reading of the machine's speed): prints one
# positive figure of milliseconds, and refuses a bad count with exit 2
# naming it.
add_test(NAME bench_bed_probe COMMAND sh -c
  "out=$(\"$1\" 1000000) && echo \"$out\" | grep -Eq '^[0-9]+[.][0-9]$' || { echo \"bad output: $out\"; exit 1; };
   \"$1\" 12x 2>&1; test $? -eq 2 || { echo 'a bad count was not refused'; exit 1; }; echo bed-probe OK" _ $<TARGET_FILE:bed-probe>)
set_tests_properties(bench_bed_probe PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "got '12x'.*bed-probe OK")

# rdmx-info --json parses, even with quotes, backslashes and control
# characters in a setting (its strings go through nlohmann::json).
if(TARGET rdmx-info)
  if(Python3_Interpreter_FOUND)
    set(_dev "a\"b\\c\t")
    add_test(NAME info.json COMMAND sh -c "\"$1\" --json | \"$2\" \"$3\" \"$4\""
      sh $<TARGET_FILE:rdmx-info> ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/unit/info_json_check.py "${_dev}")
    set_tests_properties(info.json PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION "info json: OK"
      ENVIRONMENT "RDMX_DEVICE=${_dev}")
  endif()
endif()
