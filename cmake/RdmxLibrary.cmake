# librdmx: the layers' objects linked into one shared and one static library,
# installed with a CMake package (rdmx::rdmx) and a pkg-config file (rdmx.pc).
set(RDMX_LAYERS rdmx_core rdmx_transport rdmx_proto rdmx_coll)
set(_rdmx_objs)
foreach(l ${RDMX_LAYERS})
  list(APPEND _rdmx_objs $<TARGET_OBJECTS:${l}>)
endforeach()
set(_rdmx_deps PkgConfig::IBVERBS PkgConfig::RDMACM PkgConfig::HWLOC PkgConfig::PMIX Threads::Threads)

# Cross-layer inlining for the optimised library (RDMX_LTO, on for GCC's
# release builds): the API, the engine and the transports are separate
# objects, and a send crosses all three, so the shared library is linked
# with link-time optimisation. The objects are fat (-ffat-lto-objects): the
# static library and every test that links it use their ordinary code and
# pay no LTO at link time. -fno-semantic-interposition lets calls between
# exported functions (rdmx_send -> rdmx_isend) bind and inline inside the
# library, and -Bsymbolic-functions makes the remaining ones direct calls,
# not PLT jumps: librdmx's own functions are not meant to be interposed
# (LD_PRELOAD tools still see every call the application makes).
string(TOUPPER "${CMAKE_BUILD_TYPE}" _rdmx_bt)
set(_rdmx_lto_default OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND _rdmx_bt MATCHES "^(RELEASE|RELWITHDEBINFO|MINSIZEREL)$")
  set(_rdmx_lto_default ON)
endif()
option(RDMX_LTO "Link librdmx.so with link-time optimisation (GCC release builds)" ${_rdmx_lto_default})
# No speculative devirtualization (GCC): the hot entry points are flattened
# (core/hot.h), and a guessed target inlined under flatten copied the rc
# transport's code into every one of them (the library's text grew 3.5x).
set(_rdmx_nodevirt)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_rdmx_nodevirt -fno-devirtualize-speculatively)
endif()
foreach(l ${RDMX_LAYERS})
  target_compile_options(${l} PRIVATE -fno-semantic-interposition ${_rdmx_nodevirt})
  if(RDMX_LTO)
    target_compile_options(${l} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endforeach()

add_library(rdmx SHARED ${_rdmx_objs})
target_link_libraries(rdmx PRIVATE ${_rdmx_deps})
target_link_options(rdmx PRIVATE -Wl,-Bsymbolic-functions)
if(RDMX_LTO)
  target_link_options(rdmx PRIVATE -flto=auto -fno-semantic-interposition ${_rdmx_nodevirt})
endif()
target_include_directories(rdmx PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(rdmx PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/rdmx.map)
# -z nodelete: the memory hooks (core/memhooks.h) leave libc jumping into
# this library's code for the rest of the process, so dlclose must not unmap it.
target_link_options(rdmx PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/rdmx.map -Wl,--no-undefined
  -Wl,-z,nodelete)

add_library(rdmx_static STATIC ${_rdmx_objs})
set_target_properties(rdmx_static PROPERTIES OUTPUT_NAME rdmx)
target_include_directories(rdmx_static PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(rdmx_static INTERFACE
  $<LINK_ONLY:${IBVERBS_LINK_LIBRARIES}> $<LINK_ONLY:${RDMACM_LINK_LIBRARIES}>
  $<LINK_ONLY:${HWLOC_LINK_LIBRARIES}> $<LINK_ONLY:${PMIX_LINK_LIBRARIES}> $<LINK_ONLY:Threads::Threads>)
add_library(rdmx::rdmx ALIAS rdmx)
add_library(rdmx::rdmx_static ALIAS rdmx_static)

# Internal view for tests and benchmarks that exercise non-public code.
add_library(rdmx_internal INTERFACE)
target_link_libraries(rdmx_internal INTERFACE rdmx_static ${_rdmx_deps})
target_include_directories(rdmx_internal INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)

include(CMakePackageConfigHelpers)
install(TARGETS rdmx rdmx_static EXPORT rdmxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/rdmx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT rdmxTargets NAMESPACE rdmx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rdmx)
configure_package_config_file(cmake/rdmxConfig.cmake.in ${PROJECT_BINARY_DIR}/rdmxConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rdmx)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rdmxConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rdmxConfig.cmake ${PROJECT_BINARY_DIR}/rdmxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rdmx)
string(REPLACE ";" " " RDMX_PC_PRIVATE "-L${PMIX_LIBDIR} ${IBVERBS_LDFLAGS} ${RDMACM_LDFLAGS} ${HWLOC_LDFLAGS} ${PMIX_LDFLAGS} -lpthread")
# Relocatable: the prefix is found from the .pc file's own directory.
file(RELATIVE_PATH RDMX_PC_RELPREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" RDMX_PC_RELPREFIX "${RDMX_PC_RELPREFIX}")
configure_file(cmake/rdmx.pc.in ${PROJECT_BINARY_DIR}/rdmx.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rdmx.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
