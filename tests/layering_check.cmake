# Checks the library's module layering from the #include lines of its
# sources, so that a back-edge fails the suite instead of creeping in:
#
#   base/      leaf utilities (buffers, 16-bit floats, the log hook)
#   dispatch/  CPU profile, kernel key, tuning      (uses base)
#   jit/       generators and the layouts they read (uses base, and the
#              ISA tier and kernel key of dispatch)
#   dispatch/kernel_cache.*                         (runs jit generators)
#   runtime/   everything above
#
# The public headers ("w4jit/...") and third-party ones may be included
# anywhere. One static library per module would let the linker enforce
# this, but the installed shared library is built from one object set.
#
# cmake -DSOURCE_DIR=<tree> -P layering_check.cmake
cmake_minimum_required(VERSION 3.22)

# Project folders; an include that starts with none of them is external.
set(project_dirs base check dispatch fuzz jit perf runtime tests tools torch)

# What a source under each module may include: folder prefixes ("base/")
# or single headers ("dispatch/kernel_key.h").
set(allowed_base base/)
set(allowed_dispatch base/ dispatch/)
set(allowed_kernel_cache ${allowed_dispatch} jit/generator.h)
set(allowed_jit base/ jit/ dispatch/cpu_profile.h dispatch/kernel_key.h)
set(allowed_runtime base/ dispatch/ jit/ runtime/)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

set(violations "")
set(checked 0)
foreach(module base dispatch jit runtime)
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${module}/*.h" "${SOURCE_DIR}/${module}/*.cc")
  foreach(source ${sources})
    math(EXPR checked "${checked} + 1")
    set(allowed ${allowed_${module}})
    if(source MATCHES "^dispatch/kernel_cache\\.(h|cc)$")
      set(allowed ${allowed_kernel_cache})
    endif()
    file(STRINGS "${SOURCE_DIR}/${source}" lines
         REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" header "${line}")
      string(REGEX REPLACE "/.*$" "" top "${header}")
      if(NOT header MATCHES "/" OR NOT top IN_LIST project_dirs)
        continue()  # external or public
      endif()
      set(ok FALSE)
      foreach(entry ${allowed})
        string(LENGTH "${entry}" n)
        string(SUBSTRING "${header}" 0 ${n} head)
        if((entry MATCHES "/$" AND head STREQUAL entry) OR
           header STREQUAL entry)
          set(ok TRUE)
          break()
        endif()
      endforeach()
      if(NOT ok)
        string(REPLACE ";" " " may_use "${allowed}")
        string(APPEND violations
               "  ${source} includes ${header} (may use: ${may_use})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layering: no sources under ${SOURCE_DIR}")
endif()
if(violations)
  message(FATAL_ERROR "layering: back-edges between modules:\n${violations}")
endif()
message(STATUS "layering: ${checked} files follow base < dispatch < jit < runtime")
