# FindMetalium.cmake - locate an installed TT-Metalium SDK for real-mode builds.
#
# Provides the target TT::Metalium. Looks, in order, for
#   1. the SDK's CMake package (find_package(TT-Metalium CONFIG)), searched under TT_METAL_HOME
#      and the default prefixes;
#   2. a tt-metal checkout built in place at $ENV{TT_METAL_HOME} (build/lib/libtt_metal.so and
#      the tt_metal/api headers).
# Fails with a message naming TT_METAL_HOME when neither exists. Sets Metalium_VERSION to the
# SDK's release (the CMake package's version; for a checkout, its `git describe` tag), or leaves
# it empty when that cannot be told.

set(_tt_home "$ENV{TT_METAL_HOME}")

find_package(TT-Metalium CONFIG QUIET
  HINTS "${_tt_home}" "${_tt_home}/build" "${_tt_home}/build_Release" "${_tt_home}/build/lib/cmake")
if(TARGET TT::Metalium)
  set(Metalium_FOUND TRUE)
  set(Metalium_VERSION "${TT-Metalium_VERSION}")
  return()
endif()

if(_tt_home)
  find_library(METALIUM_LIBRARY NAMES tt_metal
    PATHS "${_tt_home}/build/lib" "${_tt_home}/build_Release/lib" "${_tt_home}/build/tt_metal"
    NO_DEFAULT_PATH)
  find_path(METALIUM_INCLUDE_DIR tt-metalium/host_api.hpp
    PATHS "${_tt_home}/tt_metal/api" "${_tt_home}/build/include" NO_DEFAULT_PATH)
endif()

set(Metalium_VERSION "")
if(_tt_home AND EXISTS "${_tt_home}/.git")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${_tt_home}" describe --tags --abbrev=0
      OUTPUT_VARIABLE _tt_tag OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" Metalium_VERSION "${_tt_tag}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Metalium
  REQUIRED_VARS METALIUM_LIBRARY METALIUM_INCLUDE_DIR
  FAIL_MESSAGE "No TT-Metalium SDK found. Set TT_METAL_HOME to a tt-metal checkout built with build_metal.sh (or install the TT-Metalium CMake package), or configure without -DTT_METAL_REAL=ON and without TT_METAL_HOME to build against the tilelang-tt emulator (mock mode)")

if(Metalium_FOUND AND NOT TARGET TT::Metalium)
  add_library(TT::Metalium UNKNOWN IMPORTED)
  set_target_properties(TT::Metalium PROPERTIES
    IMPORTED_LOCATION "${METALIUM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES
      "${METALIUM_INCLUDE_DIR};${_tt_home};${_tt_home}/tt_metal;${_tt_home}/tt_stl;${_tt_home}/tt_metal/hostdevcommon/api")
endif()
