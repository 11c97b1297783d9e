# rdmx_mpi_test(NAME <n> NP <np> COMMAND <exe> [args...] [TIMEOUT s] [LABELS l...] [ENV k=v...])
# Adds a ctest that runs <exe> under Open MPI's mpirun with <np> ranks.
# Verbs tests get the "verbs" label: they need an RDMA device (the Soft-RoCE
# guest provides one) and are skipped (ctest exit 77 -> SKIP) without one.
set(RDMX_MPIRUN ${MPIEXEC_EXECUTABLE})
# Sanitizer runtimes read these; harmless in other builds.
set(RDMX_SAN_ENV "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/sanitizers/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
set(RDMX_MPIRUN_FLAGS --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
function(rdmx_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT" "COMMAND;LABELS;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS} -np ${T_NP} ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
    LABELS "${T_LABELS}" ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${RDMX_SAN_ENV};${T_ENV}")
endfunction()
