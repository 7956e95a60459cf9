# Checks the library's module layering from the #include lines of its
# sources, so that a back-edge fails the suite instead of creeping in.
# From the bottom floor up:
#
#   base/               leaf utilities (buffers, 16-bit floats, the log hook)
#   dispatch/           CPU profile, kernel key, tuning        (uses base)
#   jit/                generators and the layouts they read   (uses base, and
#                       the ISA tier and kernel key of dispatch; a generator
#                       never calls the kernel cache, which is runtime's)
#   runtime/threads/    pool, OpenMP backend, work split, the process's CPUs
#                       (uses base only: it knows nothing of kernels)
#   runtime/formats/    checkpoint formats -> canonical weights
#   runtime/w4a16/,     one kernel family each: parameters, packing, the
#   runtime/da8w4/      kernel that runs the JIT code over the threads; a
#                       family never reaches into the other one, nor up
#                       into the layer core
#   runtime/*           (files directly in runtime/) the layer core and what
#                       every job shares: the canonical weights, the kernel
#                       interface, the kernel cache (runs jit generators),
#                       validation, the reference, scale storage;
#                       it reaches the families only through the factory
#                       declarations in runtime/jit_kernels.h
#   runtime/moe/        the fused mixture-of-experts layer over Layer's parts
#   runtime/c_api/      the C entry points, over everything below
#
# The public headers ("w4jit/...") and third-party ones may be included
# anywhere. One static library per module would let the linker enforce
# this, but the installed shared library is built from one object set.
#
# An allowed entry is a folder prefix ("base/"), a folder's own files only
# ("runtime/*": runtime/layer.h but not runtime/moe/routing.h), or a single
# header ("dispatch/kernel_key.h").
#
# cmake -DSOURCE_DIR=<tree> -P layering_check.cmake
cmake_minimum_required(VERSION 3.22)

# Project folders; an include that starts with none of them is external.
set(project_dirs base check dispatch fuzz jit perf runtime tests tools torch)

# The modules, most specific first: a source belongs to the first whose
# pattern matches its path.
set(modules base dispatch jit threads w4a16 da8w4 formats moe c_api runtime)
set(pattern_base "^base/")
set(pattern_dispatch "^dispatch/")
set(pattern_jit "^jit/")
set(pattern_threads "^runtime/threads/")
set(pattern_w4a16 "^runtime/w4a16/")
set(pattern_da8w4 "^runtime/da8w4/")
set(pattern_formats "^runtime/formats/")
set(pattern_moe "^runtime/moe/")
set(pattern_c_api "^runtime/c_api/")
set(pattern_runtime "^runtime/[^/]+$")

# The runtime headers a kernel family shares with the layer core.
set(family_shared runtime/canonical_weights.h runtime/linear_kernel.h
                  runtime/jit_kernels.h runtime/scale_storage.h
                  runtime/gate_up_interleave.h runtime/kernel_cache.h)

set(allowed_base base/)
set(allowed_dispatch base/ dispatch/)
set(allowed_jit base/ jit/ dispatch/cpu_profile.h dispatch/isa_traits.h
                dispatch/kernel_key.h dispatch/config_key.h)
set(allowed_threads base/ runtime/threads/)
set(allowed_w4a16 base/ dispatch/ jit/ runtime/threads/ runtime/w4a16/
                  ${family_shared})
set(allowed_da8w4 base/ dispatch/ jit/ runtime/threads/ runtime/da8w4/
                  ${family_shared})
set(allowed_formats base/ runtime/formats/ runtime/canonical_weights.h
                    runtime/validate.h)
set(allowed_runtime base/ dispatch/ jit/ runtime/threads/ runtime/formats/
                    runtime/*)
set(allowed_moe ${allowed_runtime} runtime/moe/)
set(allowed_c_api base/ dispatch/ runtime/)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

set(violations "")
set(checked 0)
file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/base/*.h" "${SOURCE_DIR}/base/*.cc"
     "${SOURCE_DIR}/dispatch/*.h" "${SOURCE_DIR}/dispatch/*.cc"
     "${SOURCE_DIR}/jit/*.h" "${SOURCE_DIR}/jit/*.cc"
     "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cc")
foreach(source ${sources})
  set(module "")
  foreach(candidate ${modules})
    if(source MATCHES "${pattern_${candidate}}")
      set(module ${candidate})
      break()
    endif()
  endforeach()
  if(NOT module)
    string(APPEND violations
           "  ${source} is in no module (a new runtime/ folder needs a rule)\n")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  set(allowed ${allowed_${module}})
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
      if(entry MATCHES "^(.*/)\\*$")
        # A folder's own files: the prefix, then no further folder.
        string(LENGTH "${CMAKE_MATCH_1}" n)
        string(SUBSTRING "${header}" 0 ${n} head)
        string(SUBSTRING "${header}" ${n} -1 rest)
        if(head STREQUAL CMAKE_MATCH_1 AND NOT rest MATCHES "/")
          set(ok TRUE)
        endif()
      elseif(entry MATCHES "/$")
        string(LENGTH "${entry}" n)
        string(SUBSTRING "${header}" 0 ${n} head)
        if(head STREQUAL entry)
          set(ok TRUE)
        endif()
      elseif(header STREQUAL entry)
        set(ok TRUE)
      endif()
      if(ok)
        break()
      endif()
    endforeach()
    if(NOT ok)
      string(REPLACE ";" " " may_use "${allowed}")
      string(APPEND violations
             "  ${source} (${module}) includes ${header} (may use: ${may_use})\n")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layering: no sources under ${SOURCE_DIR}")
endif()
if(violations)
  message(FATAL_ERROR "layering: back-edges between modules:\n${violations}")
endif()
message(STATUS "layering: ${checked} files follow base < dispatch < jit < "
               "runtime/threads < runtime families < runtime < moe < c_api")
