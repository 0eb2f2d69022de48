# cmake -DEXPECTED=<step.h> -DACTUAL=<step.h> -P same-interface.cmake
#
# Fails unless the two generated step headers declare the same interface:
# equal after their first line (a comment naming the source file). The
# linear-regression trainers share one compiled trainer.cpp (CMakeLists.txt).
cmake_minimum_required(VERSION 3.20)
file(STRINGS "${EXPECTED}" expected)
file(STRINGS "${ACTUAL}" actual)
list(POP_FRONT expected)
list(POP_FRONT actual)
if(NOT expected STREQUAL actual)
  message(FATAL_ERROR "${ACTUAL} declares another interface than "
    "${EXPECTED}; trainer.cpp is compiled once against the latter "
    "(examples/linear-regression/CMakeLists.txt)")
endif()
