// tilelang-tt mock TT-Metalium: ttsl::Span. In TT-Metalium 0.81.1 it is std::span (the library
// exports e.g. SetRuntimeArgs(..., std::span<unsigned int const>)); tt::stl names the same namespace.
#pragma once
#include <cstddef>
#include <span>

namespace ttsl {
template <class T, std::size_t Extent = std::dynamic_extent>
using Span = std::span<T, Extent>;
}  // namespace ttsl

namespace tt {
namespace stl = ::ttsl;
}  // namespace tt
