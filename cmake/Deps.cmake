# Optional dependencies: LLVM 19 (CPU code generation), OpenBLAS (CPU baseline),
# SQLite (tuning database).  CUDA pieces (driver, NVRTC, cuBLAS) are never linked:
# runtime/ loads them with dlopen so one binary serves machines with and without a GPU.
set(PERFC_DEP_LIBS "")

set(PERFC_HAVE_LLVM OFF)
if(PERFC_WITH_LLVM)
  find_program(LLVM_CONFIG NAMES llvm-config-19 llvm-config)
  if(LLVM_CONFIG)
    execute_process(COMMAND ${LLVM_CONFIG} --version OUTPUT_VARIABLE LLVM_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(LLVM_VERSION MATCHES "^19\\.")
      execute_process(COMMAND ${LLVM_CONFIG} --includedir OUTPUT_VARIABLE LLVM_INCLUDE OUTPUT_STRIP_TRAILING_WHITESPACE)
      set(LLVM_COMPONENTS core orcjit native passes x86 aarch64 riscv ipo)
      if(PERFC_LLVM_STATIC)
        execute_process(COMMAND ${LLVM_CONFIG} --link-static --libfiles ${LLVM_COMPONENTS}
                        OUTPUT_VARIABLE LLVM_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
        execute_process(COMMAND ${LLVM_CONFIG} --link-static --system-libs ${LLVM_COMPONENTS}
                        OUTPUT_VARIABLE LLVM_SYSLIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
        separate_arguments(LLVM_LIBS)
        separate_arguments(LLVM_SYSLIBS)
        # A portable binary depends on glibc alone.  llvm-config lists the system
        # libraries of the whole LLVM build: zlib and zstd (compressed sections) are
        # linked from their static archives; Z3 and libxml2 (the static analyser,
        # Windows manifests) are never referenced by these components and dropped.
        set(LLVM_SYSLIBS_STATIC "")
        foreach(l ${LLVM_SYSLIBS})
          if(l MATCHES "z3|xml2")
            continue()
          elseif(l MATCHES "^-l(z|zstd|tinfo|ncurses|edit|ffi)$")
            find_library(PERFC_STATIC_${CMAKE_MATCH_1} NAMES lib${CMAKE_MATCH_1}.a)
            if(NOT PERFC_STATIC_${CMAKE_MATCH_1})
              message(FATAL_ERROR "perfc: PERFC_LLVM_STATIC needs lib${CMAKE_MATCH_1}.a (the -dev package of ${CMAKE_MATCH_1})")
            endif()
            list(APPEND LLVM_SYSLIBS_STATIC ${PERFC_STATIC_${CMAKE_MATCH_1}})
          else()
            list(APPEND LLVM_SYSLIBS_STATIC ${l}) # -lrt -ldl -lm -lpthread: glibc itself
          endif()
        endforeach()
        # libstdc++ from its archive: -static-libstdc++ only affects the g++ driver,
        # and perfc is linked by the C driver.
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.a
                        OUTPUT_VARIABLE LIBSTDCXX_A OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT IS_ABSOLUTE "${LIBSTDCXX_A}" OR NOT EXISTS "${LIBSTDCXX_A}")
          message(FATAL_ERROR "perfc: PERFC_LLVM_STATIC needs libstdc++.a (${CMAKE_CXX_COMPILER} -print-file-name gave '${LIBSTDCXX_A}')")
        endif()
        list(APPEND PERFC_DEP_LIBS ${LLVM_LIBS} ${LLVM_SYSLIBS_STATIC} ${LIBSTDCXX_A} -static-libgcc pthread)
      else()
        execute_process(COMMAND ${LLVM_CONFIG} --libfiles OUTPUT_VARIABLE LLVM_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
        separate_arguments(LLVM_LIBS)
        list(APPEND PERFC_DEP_LIBS ${LLVM_LIBS})
      endif()
      include_directories(SYSTEM ${LLVM_INCLUDE})
      set(PERFC_HAVE_LLVM ON)
      message(STATUS "perfc: LLVM ${LLVM_VERSION} at ${LLVM_CONFIG} (static: ${PERFC_LLVM_STATIC})")
    else()
      message(WARNING "perfc: ${LLVM_CONFIG} is LLVM ${LLVM_VERSION}, not 19: CPU code generation disabled")
    endif()
  else()
    message(WARNING "perfc: llvm-config-19 not found: CPU code generation disabled (apt-get install llvm-19-dev)")
  endif()
endif()

# OpenBLAS: the CPU baseline of --compare openblas and the f64 dgemm reference for
# large GEMMs.  Optional: without it perfc builds, `--compare openblas` says so
# (status 1) and large GEMMs are checked against the f64 JIT of the unscheduled
# kernel instead.  -DPERFC_WITH_OPENBLAS=OFF builds that configuration on purpose.
option(PERFC_WITH_OPENBLAS "Use OpenBLAS (CPU baseline, large-GEMM reference)" ON)
set(PERFC_HAVE_OPENBLAS OFF)
if(PERFC_WITH_OPENBLAS)
  # the pthread build first: its cblas.h matches the libopenblas.so Debian links to
  find_path(OPENBLAS_INCLUDE cblas.h
            PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
                  /usr/include/riscv64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include)
  if(PERFC_LLVM_STATIC)
    # The portable binary carries OpenBLAS inside it too: the GPU machines have none.
    find_library(OPENBLAS_STATIC_LIB NAMES libopenblas.a)
    set(OPENBLAS_LIB ${OPENBLAS_STATIC_LIB})
  else()
    find_library(OPENBLAS_LIB NAMES openblas)
  endif()
endif()
if(PERFC_WITH_OPENBLAS AND OPENBLAS_INCLUDE AND OPENBLAS_LIB)
  set(PERFC_HAVE_OPENBLAS ON)
  include_directories(SYSTEM ${OPENBLAS_INCLUDE})
  list(APPEND PERFC_DEP_LIBS ${OPENBLAS_LIB})
  message(STATUS "perfc: OpenBLAS ${OPENBLAS_LIB}")
else()
  message(STATUS "perfc: no OpenBLAS (PERFC_WITH_OPENBLAS=${PERFC_WITH_OPENBLAS}): --compare openblas will say so")
endif()

if(PERFC_LLVM_STATIC)
  find_library(SQLITE3_STATIC_LIB NAMES libsqlite3.a)
  set(SQLITE3_LIB ${SQLITE3_STATIC_LIB})
else()
  find_library(SQLITE3_LIB NAMES sqlite3)
endif()
if(SQLITE3_LIB)
  list(APPEND PERFC_DEP_LIBS ${SQLITE3_LIB})
  set(PERFC_HAVE_SQLITE ON)
endif()
