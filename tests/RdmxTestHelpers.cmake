# rdmx_mpi_test(NAME <n> NP <np> COMMAND <exe> [args...] [TIMEOUT s] [LABELS l...] [ENV k=v...] [SM] [MIXED])
# Adds a ctest that runs <exe> under Open MPI's mpirun with <np> ranks.
# Verbs tests get the "verbs" label: they need an RDMA device (the Soft-RoCE
# guest provides one) and are skipped (ctest exit 77 -> SKIP) without one.
# They run over rc alone (RDMX_TRANSPORTS=rc,self): every rank of the guest
# shares one node, where shared memory would carry them otherwise.
#   SM     the same test also runs natively over shared memory, no device
#          needed: sm.<name without "verbs.">, labels "sm" plus the others
#          but verbs; the verbs one gets the label "twin".
#   SM_ONLY  only the shared-memory twin (the verbs run would repeat what
#          other verbs tests cover: e.g. collectives, which use only the
#          public point-to-point calls, at every rank count).
#   MIXED  and in the guest on pretend nodes of two ranks each
#          (tests/verbs/pretend_nodes.sh): pairs on a node use sm, the others
#          rc. mixed.<name without "verbs.">, labels verbs and mixed.
set(RDMX_MPIRUN ${MPIEXEC_EXECUTABLE})
# Sanitizer runtimes read these; harmless in other builds.
set(RDMX_SAN_ENV "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/sanitizers/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
set(RDMX_MPIRUN_FLAGS --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
# Sanitizer trees: programs compiled by mpicc.mpich / mpicxx.mpich (and the
# rdmx-mpicc wrappers) are not instrumented, yet load the instrumented
# libmpich.so.12, and the sanitizer runtime must be the first library loaded.
# The ranks get it preloaded (-x: the ranks only, not mpirun, which is not
# instrumented either and would then report Open MPI's own leaks). Harmless
# for instrumented ranks, which link the same runtime. ASan trees preload it
# into every job; TSan trees only into the MPI layer's (tests/mpi): libtsan
# preloaded into the shell that system() starts makes it fail
# (tests/verbs/lifecycle_test.cc).
set(RDMX_SAN_RUNTIME)
set(_rdmx_san_lib)
if(CMAKE_BUILD_TYPE STREQUAL "Asan")
  set(_rdmx_san_lib libasan.so)
elseif(CMAKE_BUILD_TYPE STREQUAL "Tsan")
  set(_rdmx_san_lib libtsan.so)
endif()
if(_rdmx_san_lib)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_rdmx_san_lib}
    OUTPUT_VARIABLE RDMX_SAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(RDMX_SAN_RUNTIME "${RDMX_SAN_RUNTIME}" REALPATH)
  if(CMAKE_BUILD_TYPE STREQUAL "Asan")
    list(APPEND RDMX_MPIRUN_FLAGS -x LD_PRELOAD=${RDMX_SAN_RUNTIME})
  endif()
endif()
# Test programs whose ranks run Open MPI's MPI_Init link this: under ASan
# they keep Open MPI's components mapped until exit (the file says why).
add_library(rdmx_ompi_keep_mapped OBJECT ${CMAKE_CURRENT_LIST_DIR}/sanitizers/ompi_keep_mapped.cc)
set(RDMX_PRETEND_NODES ${CMAKE_CURRENT_LIST_DIR}/verbs/pretend_nodes.sh)
function(rdmx_mpi_test)
  cmake_parse_arguments(T "SM;SM_ONLY;MIXED" "NAME;NP;TIMEOUT" "COMMAND;LABELS;ENV" ${ARGN})
  if(T_SM_ONLY)
    set(T_SM TRUE)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${RDMX_SAN_ENV}")
  set(labels ${T_LABELS})
  set(rc_env)
  if("verbs" IN_LIST T_LABELS)
    set(rc_env "RDMX_TRANSPORTS=rc,self")
    if(T_SM)
      list(APPEND labels twin)
    endif()
  endif()
  if(NOT T_SM_ONLY)
    add_test(NAME ${T_NAME} COMMAND ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS} -np ${T_NP} ${T_COMMAND})
    set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
      LABELS "${labels}" ENVIRONMENT "${env};${rc_env};${T_ENV}")
  endif()
  string(REGEX REPLACE "^verbs\\." "" base ${T_NAME})
  if(T_SM)
    set(sm_labels ${T_LABELS})
    list(REMOVE_ITEM sm_labels verbs)
    add_test(NAME sm.${base} COMMAND ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS} -np ${T_NP} ${T_COMMAND})
    set_tests_properties(sm.${base} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
      LABELS "sm;${sm_labels}" ENVIRONMENT "${env};RDMX_TRANSPORTS=sm,self;${T_ENV}")
  endif()
  if(T_MIXED)
    add_test(NAME mixed.${base} COMMAND ${RDMX_MPIRUN} ${RDMX_MPIRUN_FLAGS} -np ${T_NP} ${RDMX_PRETEND_NODES} 2
             ${T_COMMAND})
    set_tests_properties(mixed.${base} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
      LABELS "verbs;mixed" ENVIRONMENT "${env};${T_ENV}")
  endif()
endfunction()
