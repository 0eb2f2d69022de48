# gradcomm_compile_step(<target> SOURCE <step.mlir> [EXCLUDE_FROM_ALL]
#                       [OPTIONS <gradcomm-compile options>...])
#
# Compiles an MLIR training step with gradcomm-compile into a static library
# <target> holding the step's object file; linking it gives a trainer the
# `_mlir_ciface_<function>` entry points, the generated header `step.h`
# (include directory propagated), GradComm::runtime and GradComm::blas (its
# matrix products). EXCLUDE_FROM_ALL: built only when a target that links
# it is built (as add_library's option).
#
# Needs GRADCOMM_COMPILE_EXECUTABLE (set by find_package(GradComm), or by
# the GradComm build itself).
function(gradcomm_compile_step target)
  cmake_parse_arguments(ARG "EXCLUDE_FROM_ALL" "SOURCE" "OPTIONS" ${ARGN})
  if(NOT ARG_SOURCE)
    message(FATAL_ERROR "gradcomm_compile_step(${target}): SOURCE is required")
  endif()
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  add_custom_command(
    OUTPUT "${out}/step.o" "${out}/step.h"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out}"
    COMMAND ${GRADCOMM_COMPILE_EXECUTABLE} "${source}" -o "${out}/step.o"
            "--emit-header=${out}/step.h" ${ARG_OPTIONS}
    DEPENDS "${source}" ${GRADCOMM_COMPILE_EXECUTABLE}
    COMMENT "gradcomm-compile ${target}"
    VERBATIM)
  set_source_files_properties("${out}/step.o" PROPERTIES
    EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(exclude)
  if(ARG_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  add_library(${target} STATIC ${exclude} "${out}/step.o" "${out}/step.h")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${target} INTERFACE "${out}")
  target_link_libraries(${target} INTERFACE GradComm::runtime GradComm::blas m)
endfunction()
