# Third-party dependencies, all from Debian packages (see scripts/common.sh for the apt list).
#
# Provides:
#   Threads::Threads
#   kiln::openblas   OpenBLAS (CBLAS + LAPACK), required
#   kiln::hwy        Google Highway, optional (only when KILN_USE_HIGHWAY=ON)
#   kiln::sleef      SLEEF vector math, optional (only when KILN_USE_SLEEF=ON)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)

# --- OpenBLAS -------------------------------------------------------------------------------------
# Debian's libopenblas-dev ships openblas.pc (pthread flavour, DYNAMIC_ARCH=1: the kernel set is
# picked at run time, so linking it does not tie the plugin to the build machine's CPU).
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
