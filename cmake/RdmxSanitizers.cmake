# Extra build types: Asan (ASan + UBSan) and Tsan. Select with
# -DCMAKE_BUILD_TYPE=Asan|Tsan or the presets in CMakePresets.json.
# RDMX_SAN_DEBUG: the debug information level of both. -g1 (line tables:
# every report still names function, file and line, but gdb shows no
# variables) compiles a quarter faster; CI's trees use it
# (scripts/test.sh).
set(RDMX_SAN_DEBUG "-g" CACHE STRING "debug information flag of the Asan and Tsan build types (-g or -g1)")
set(_rdmx_asan "-O1 ${RDMX_SAN_DEBUG} -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined")
set(_rdmx_tsan "-O1 ${RDMX_SAN_DEBUG} -fno-omit-frame-pointer -fsanitize=thread")
foreach(lang C CXX)
  set(CMAKE_${lang}_FLAGS_ASAN "${_rdmx_asan}" CACHE STRING "" FORCE)
  set(CMAKE_${lang}_FLAGS_TSAN "${_rdmx_tsan}" CACHE STRING "" FORCE)
endforeach()
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "" FORCE)
set(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "" FORCE)
mark_as_advanced(CMAKE_C_FLAGS_ASAN CMAKE_CXX_FLAGS_ASAN CMAKE_C_FLAGS_TSAN CMAKE_CXX_FLAGS_TSAN
  CMAKE_EXE_LINKER_FLAGS_ASAN CMAKE_SHARED_LINKER_FLAGS_ASAN CMAKE_EXE_LINKER_FLAGS_TSAN
  CMAKE_SHARED_LINKER_FLAGS_TSAN)
