#===- GradCommPythonPackage.cmake - what `pip install` installs -----------===#
#
# The pip package (pyproject.toml, scikit-build-core, which defines SKBUILD
# and SKBUILD_STATE) installs the component "python" only:
#  - a wheel: libgradcomm_runtime.so (and the CUDA backend, which the
#    runtime loads from its own folder) and libgradcomm_blas.so (compiled
#    steps' matrix products) in gradcomm/_libs, the runtime's
#    headers in gradcomm/include, the compiler tools in the environment's
#    bin when they were built;
#  - an editable install: nothing but gradcomm/_install.py naming the build
#    tree's lib/ and bin/, so Python loads what the last build made (a copy
#    would go stale at the next rebuild).
# gradcomm/_install.py tells gradcomm._paths where these are.
#
#===----------------------------------------------------------------------===#
if(NOT SKBUILD)
  return()
endif()

set(gradcomm_tools)
foreach(tool gradcomm-opt gradcomm-compile gradcomm-translate gradcomm-plan
    gradcomm-calibrate)
  if(TARGET ${tool})
    list(APPEND gradcomm_tools ${tool})
  endif()
endforeach()

if(SKBUILD_STATE STREQUAL "editable")
  set(GRADCOMM_INSTALL_LIBRARY_DIR "r'${CMAKE_BINARY_DIR}/lib'")
  set(GRADCOMM_INSTALL_TOOLS_DIR "r'${CMAKE_BINARY_DIR}/bin'")
else()
  set(GRADCOMM_INSTALL_LIBRARY_DIR "os.path.join(_here, '_libs')")
  set(GRADCOMM_INSTALL_TOOLS_DIR "sysconfig.get_path('scripts')")
  set(gradcomm_libraries gradcomm_runtime gradcomm_blas)
  if(TARGET gradcomm_runtime_cuda)
    list(APPEND gradcomm_libraries gradcomm_runtime_cuda)
  endif()
  install(TARGETS ${gradcomm_libraries}
    LIBRARY DESTINATION gradcomm/_libs COMPONENT python)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/gradcomm
    DESTINATION gradcomm/include COMPONENT python)
  if(gradcomm_tools)
    install(TARGETS ${gradcomm_tools}
      RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR} COMPONENT python)
  endif()
endif()

configure_file(${PROJECT_SOURCE_DIR}/cmake/_install.py.in
  ${CMAKE_BINARY_DIR}/python-package/_install.py @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/python-package/_install.py
  DESTINATION gradcomm COMPONENT python)
