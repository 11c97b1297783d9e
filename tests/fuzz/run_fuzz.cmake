# cmake -DFUZZER=<exe> -DSEEDS=<seed dir> -DWORK=<scratch dir> [-DSECONDS=20] -P run_fuzz.cmake
# Copies the seeds to a fresh scratch corpus and fuzzes for a fixed time;
# crash inputs land in <scratch>/../<name>-artifacts/.
foreach(v FUZZER SEEDS WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED SECONDS)
  set(SECONDS 20)
endif()
get_filename_component(_name "${WORK}" NAME)
get_filename_component(_parent "${WORK}" DIRECTORY)
set(_artifacts "${_parent}/${_name}-artifacts")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}" "${_artifacts}")
file(COPY "${SEEDS}/" DESTINATION "${WORK}")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${_artifacts}/ "${WORK}" "${SEEDS}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}); reproducer in ${_artifacts}/")
endif()
