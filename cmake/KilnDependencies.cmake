# Third-party dependencies: Debian packages (scripts/apt-packages.txt), and for the manylinux
# wheel OpenBLAS from PyPI (KILN_BLAS below).
#
# Provides:
#   Threads::Threads
#   kiln::openblas   OpenBLAS (CBLAS + LAPACK), required
#   kiln::hwy        Google Highway, optional (only when KILN_USE_HIGHWAY=ON)
#   kiln::sleef      SLEEF vector math, optional (only when KILN_USE_SLEEF=ON)
#   kiln::xbyak      Xbyak x86-64 assembler (header-only)
#   kiln::gloo       Gloo collectives, TCP transport (vendored, static; third_party/gloo)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)

# --- OpenBLAS -------------------------------------------------------------------------------------
# KILN_BLAS chooses the library (kernels/blas.h maps the symbol names):
#   system            Debian's libopenblas-dev: openblas.pc (pthread flavour, DYNAMIC_ARCH=1: the
#                     kernel set is picked at run time, so linking it does not tie the plugin to
#                     the build machine's CPU). The CMake development and sanitizer builds use it.
#   scipy-openblas32  PyPI's scipy-openblas32 (OpenBLAS with `scipy_`-prefixed symbols, 32-bit
#                     integers, DYNAMIC_ARCH, gfortran linked in), which the manylinux wheel bundles
#                     (scripts/build_wheel.sh) and the development install links (scripts/common.sh;
#                     newer than Debian's 0.3.21, which runs generic kernels on recent Intel CPUs). Found in KILN_SCIPY_OPENBLAS_DIR, else by asking the
#                     Python interpreter (Python3_EXECUTABLE) where the package is.
set(KILN_BLAS "system" CACHE STRING "OpenBLAS to link: system or scipy-openblas32")
set_property(CACHE KILN_BLAS PROPERTY STRINGS system scipy-openblas32)
if(NOT TARGET kiln::openblas AND KILN_BLAS STREQUAL "scipy-openblas32")
  set(KILN_SCIPY_OPENBLAS_DIR "" CACHE PATH "The scipy_openblas32 package directory")
  if(NOT KILN_SCIPY_OPENBLAS_DIR)
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c
              "import os, scipy_openblas32 as s; print(os.path.dirname(s.__file__))"
      OUTPUT_VARIABLE KILN_SCIPY_OPENBLAS_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _kiln_sob_result ERROR_QUIET)
    if(NOT _kiln_sob_result EQUAL 0)
      message(FATAL_ERROR "KILN_BLAS=scipy-openblas32 but ${Python3_EXECUTABLE} cannot import "
                          "scipy_openblas32 (pip install scipy-openblas32, or set "
                          "KILN_SCIPY_OPENBLAS_DIR)")
    endif()
  endif()
  set(_kiln_sob_lib "${KILN_SCIPY_OPENBLAS_DIR}/lib/libscipy_openblas.so")
  if(NOT EXISTS "${_kiln_sob_lib}" OR NOT EXISTS "${KILN_SCIPY_OPENBLAS_DIR}/include/cblas.h")
    message(FATAL_ERROR "${KILN_SCIPY_OPENBLAS_DIR} is not a scipy_openblas32 package "
                        "(no lib/libscipy_openblas.so or include/cblas.h)")
  endif()
  add_library(kiln_openblas_imported SHARED IMPORTED)
  set_target_properties(kiln_openblas_imported PROPERTIES
    IMPORTED_LOCATION "${_kiln_sob_lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${KILN_SCIPY_OPENBLAS_DIR}/include"
    INTERFACE_COMPILE_DEFINITIONS KILN_BLAS_SYMBOL_PREFIX_SCIPY=1)
  add_library(kiln::openblas ALIAS kiln_openblas_imported)
  message(STATUS "Kiln: OpenBLAS from scipy-openblas32 in ${KILN_SCIPY_OPENBLAS_DIR}")
elseif(NOT TARGET kiln::openblas AND NOT KILN_BLAS STREQUAL "system")
  message(FATAL_ERROR "KILN_BLAS must be system or scipy-openblas32, not '${KILN_BLAS}'")
endif()
if(NOT TARGET kiln::openblas)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(KILN_OPENBLAS QUIET IMPORTED_TARGET openblas)
  endif()
  if(KILN_OPENBLAS_FOUND)
    add_library(kiln::openblas ALIAS PkgConfig::KILN_OPENBLAS)
    set(_kiln_openblas_how "pkg-config openblas ${KILN_OPENBLAS_VERSION}")
  else()
    find_library(KILN_OPENBLAS_LIBRARY NAMES openblas
                 PATH_SUFFIXES openblas-pthread openblas-openmp openblas-serial)
    find_path(KILN_OPENBLAS_INCLUDE_DIR NAMES cblas.h
              PATH_SUFFIXES openblas-pthread openblas openblas-openmp openblas-serial)
    if(NOT KILN_OPENBLAS_LIBRARY OR NOT KILN_OPENBLAS_INCLUDE_DIR)
      message(FATAL_ERROR
        "OpenBLAS not found (tried pkg-config 'openblas' and find_library(openblas)). "
        "On Debian: apt-get install libopenblas-dev pkg-config")
    endif()
    add_library(kiln_openblas_imported UNKNOWN IMPORTED)
    set_target_properties(kiln_openblas_imported PROPERTIES
      IMPORTED_LOCATION "${KILN_OPENBLAS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${KILN_OPENBLAS_INCLUDE_DIR}")
    add_library(kiln::openblas ALIAS kiln_openblas_imported)
    set(_kiln_openblas_how "${KILN_OPENBLAS_LIBRARY}")
  endif()
  message(STATUS "Kiln: OpenBLAS from ${_kiln_openblas_how}")
endif()

# --- Highway (optional) ---------------------------------------------------------------------------
# Not required yet. Found quietly so the configure summary tells whether it could be enabled.
find_package(hwy CONFIG QUIET)
if(NOT hwy_FOUND AND PKG_CONFIG_FOUND)
  pkg_check_modules(KILN_HWY QUIET IMPORTED_TARGET libhwy)
endif()
if(TARGET hwy::hwy)
  set(KILN_HWY_AVAILABLE ON)
  set(_kiln_hwy_target hwy::hwy)
elseif(KILN_HWY_FOUND)
  set(KILN_HWY_AVAILABLE ON)
  set(_kiln_hwy_target PkgConfig::KILN_HWY)
else()
  set(KILN_HWY_AVAILABLE OFF)
endif()
if(KILN_USE_HIGHWAY)
  if(NOT KILN_HWY_AVAILABLE)
    message(FATAL_ERROR "KILN_USE_HIGHWAY=ON but Highway was not found (apt-get install libhwy-dev)")
  endif()
  add_library(kiln::hwy ALIAS ${_kiln_hwy_target})
endif()

# --- SLEEF (optional) -----------------------------------------------------------------------------
if(PKG_CONFIG_FOUND)
  pkg_check_modules(KILN_SLEEF QUIET IMPORTED_TARGET sleef)
endif()
if(NOT KILN_SLEEF_FOUND)
  find_library(KILN_SLEEF_LIBRARY NAMES sleef)
  find_path(KILN_SLEEF_INCLUDE_DIR NAMES sleef.h)
endif()
if(KILN_SLEEF_FOUND OR (KILN_SLEEF_LIBRARY AND KILN_SLEEF_INCLUDE_DIR))
  set(KILN_SLEEF_AVAILABLE ON)
else()
  set(KILN_SLEEF_AVAILABLE OFF)
endif()
if(KILN_USE_SLEEF)
  if(NOT KILN_SLEEF_AVAILABLE)
    message(FATAL_ERROR "KILN_USE_SLEEF=ON but SLEEF was not found (apt-get install libsleef-dev)")
  endif()
  if(KILN_SLEEF_FOUND)
    add_library(kiln::sleef ALIAS PkgConfig::KILN_SLEEF)
  else()
    add_library(kiln_sleef_imported UNKNOWN IMPORTED)
    set_target_properties(kiln_sleef_imported PROPERTIES
      IMPORTED_LOCATION "${KILN_SLEEF_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${KILN_SLEEF_INCLUDE_DIR}")
    add_library(kiln::sleef ALIAS kiln_sleef_imported)
  endif()
endif()

# --- Xbyak (required, header-only) ----------------------------------------------------------------
# The x86-64 assembler codegen/native_loop.cc generates loop code with (libxbyak-dev,
# BSD-3-Clause). Header-only: nothing to link or bundle.
find_path(KILN_XBYAK_INCLUDE_DIR NAMES xbyak/xbyak.h)
if(NOT KILN_XBYAK_INCLUDE_DIR)
  message(FATAL_ERROR "Xbyak was not found (apt-get install libxbyak-dev)")
endif()
add_library(kiln_xbyak INTERFACE)
target_include_directories(kiln_xbyak SYSTEM INTERFACE "${KILN_XBYAK_INCLUDE_DIR}")
add_library(kiln::xbyak ALIAS kiln_xbyak)

# --- Gloo (vendored, static) ----------------------------------------------------------------------
# Cross-process collectives for distributed/ (BSD-3-Clause): built from third_party/gloo with only
# the TCP transport; Debian's libgloo0 needs glibc 2.34, libibverbs and libhiredis, which the
# manylinux wheel cannot carry.
add_subdirectory("${PROJECT_SOURCE_DIR}/third_party/gloo" "${PROJECT_BINARY_DIR}/third_party/gloo")
