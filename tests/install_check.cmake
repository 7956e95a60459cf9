# Installs the build tree into a scratch prefix, then builds and runs the
# examples the README shows against the installed package: find_package(w4jit)
# for C++ and pkg-config for C.
set(prefix "${BUILD_DIR}/install-check/prefix")
file(REMOVE_RECURSE "${BUILD_DIR}/install-check")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

set(cpp_build "${BUILD_DIR}/install-check/cpp")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/embed_cpp"
                        -B "${cpp_build}" -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the C++ example failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${cpp_build}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the C++ example failed:\n${out}")
endif()
execute_process(COMMAND "${cpp_build}/embed_cpp" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the C++ example failed (${rc}):\n${out}")
endif()
message(STATUS "C++ example: ${out}")

execute_process(COMMAND bash "${SOURCE_DIR}/examples/embed_c/build.sh" "${prefix}"
                        "${BUILD_DIR}/install-check/embed_c"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the C example with pkg-config failed:\n${out}")
endif()
execute_process(COMMAND "${BUILD_DIR}/install-check/embed_c" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the C example failed (${rc}):\n${out}")
endif()
message(STATUS "C example: ${out}")
