# Warnings for every rdmx target: rdmx_warnings(<target>)
add_library(rdmx_warnings INTERFACE)
target_compile_options(rdmx_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers
  $<$<BOOL:${RDMX_WERROR}>:-Werror>)
