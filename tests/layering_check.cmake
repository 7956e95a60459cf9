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
#                       validation, the reference, scale storage, the
#                       families' regime table (runtime/regime.h), the
#                       reuse of what a kernel derived from x
#                       (runtime/x_reuse.h);
#                       it reaches the families only through the factory
#                       declarations in runtime/jit_kernels.h
#   runtime/moe/        the fused mixture-of-experts layer over Layer's parts
#   runtime/c_api/      the C entry points, over everything below
#
# Over the library, the programs and libraries built on it (none of them
# is part of libw4jit, and the library never includes them):
#
#   cli/                the command line's flags library (CLI11); uses
#                       nothing of the project, so that tools/ and perf/
#                       both reach it from below
#   check/              checking layers against the references (the tests,
#                       `w4jit selftest`, the bench): uses base/, dispatch/
#                       and all of runtime/ (the references, the canonical
#                       weights, the formats' export, the MoE experts);
#                       never jit/ (it drives kernels through Layer) nor
#                       anything above it
#   perf/               the bench harness and microbenchmarks: may measure
#                       any floor of the library (base/, dispatch/, jit/ for
#                       the peak and read loops, all of runtime/), checks
#                       what it times with check/, parses its options with
#                       cli/; never tools/, the command that runs it
#   tools/              the `w4jit` command: its subcommands over cli/,
#                       check/ and perf/, and the layer core's own files
#                       (runtime/*: the kernel cache for `info`), base/ and
#                       dispatch/; never a kernel family, jit/ or torch/
#   torch/              the PyTorch op library, a host of the public API;
#                       three internal headers, each for a reason:
#                       dispatch/cpuid_features.h (int4pack_ops picks the
#                       tinygemm blocking from w4jit's own CPUID read),
#                       runtime/formats/tinygemm_int4pack.h (the op unpacks
#                       that format) and dispatch/kernel_key.h (zentorch_ops
#                       keys its layer cache by EpilogueCode, the one
#                       encoding of an epilogue, shared with kernel names;
#                       to go when the key's epilogue part reaches the
#                       public surface)
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
set(project_dirs base check cli dispatch fuzz jit perf runtime tests tools
                 torch)

# The modules, most specific first: a source belongs to the first whose
# pattern matches its path.
set(modules base dispatch jit threads w4a16 da8w4 formats moe c_api runtime
            cli check perf tools torch)
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
set(pattern_cli "^cli/")
set(pattern_check "^check/")
set(pattern_perf "^perf/")
set(pattern_tools "^tools/")
set(pattern_torch "^torch/")

# The runtime headers a kernel family shares with the layer core.
set(family_shared runtime/canonical_weights.h runtime/linear_kernel.h
                  runtime/jit_kernels.h runtime/scale_storage.h
                  runtime/gate_up_interleave.h runtime/kernel_cache.h
                  runtime/regime.h runtime/x_reuse.h)

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
set(allowed_cli cli/)
set(allowed_check base/ dispatch/ runtime/ check/)
set(allowed_perf base/ dispatch/ jit/ runtime/ check/ cli/ perf/)
set(allowed_tools base/ dispatch/ runtime/* check/ cli/ perf/ tools/)
set(allowed_torch torch/ dispatch/cpuid_features.h dispatch/kernel_key.h
                  runtime/formats/tinygemm_int4pack.h)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

set(violations "")
set(checked 0)
file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/base/*.h" "${SOURCE_DIR}/base/*.cc"
     "${SOURCE_DIR}/dispatch/*.h" "${SOURCE_DIR}/dispatch/*.cc"
     "${SOURCE_DIR}/jit/*.h" "${SOURCE_DIR}/jit/*.cc"
     "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cc"
     "${SOURCE_DIR}/cli/*.h" "${SOURCE_DIR}/cli/*.cc"
     "${SOURCE_DIR}/check/*.h" "${SOURCE_DIR}/check/*.cc"
     "${SOURCE_DIR}/perf/*.h" "${SOURCE_DIR}/perf/*.cc"
     "${SOURCE_DIR}/tools/*.h" "${SOURCE_DIR}/tools/*.cc"
     "${SOURCE_DIR}/torch/*.h" "${SOURCE_DIR}/torch/*.cc")
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
           "  ${source} is in no module (a new folder needs a rule)\n")
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
               "runtime/threads < runtime families < runtime < moe < c_api; "
               "cli, check < perf < tools; torch over the public API")
