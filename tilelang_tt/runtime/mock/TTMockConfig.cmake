# tilelang-tt mock TT-Metalium: find_package(TTMock PATHS <this dir>) provides TT::Mock, the
# CPU emulator library (built from these sources in the consuming project).
get_filename_component(_TTMOCK_DIR "${CMAKE_CURRENT_LIST_FILE}" PATH)
if(NOT TARGET TT::Mock)
  # fmt: a dependency, as of TT-Metalium (host headers, DPRINT; Debian: libfmt-dev); without it
  # the emulator fills "{}" fields itself (docs/MOCK.md)
  find_package(fmt QUIET)
  file(GLOB _TTMOCK_SOURCES "${_TTMOCK_DIR}/src/*.cpp")
  add_library(ttmock SHARED ${_TTMOCK_SOURCES})
  target_include_directories(ttmock PUBLIC "${_TTMOCK_DIR}/include")
  target_compile_features(ttmock PUBLIC cxx_std_20)
  target_compile_definitions(ttmock PRIVATE
    TTMOCK_INCLUDE_DIR="${_TTMOCK_DIR}/include"
    TTMOCK_CXX="${CMAKE_CXX_COMPILER}")
  target_link_libraries(ttmock PUBLIC ${CMAKE_DL_LIBS})
  if(fmt_FOUND)
    target_link_libraries(ttmock PUBLIC fmt::fmt)
  else()
    target_compile_definitions(ttmock PUBLIC TTMOCK_NO_FMT)
  endif()
  add_library(TT::Mock ALIAS ttmock)
endif()
set(TTMock_FOUND TRUE)
