// <fmt/base.h> for programs written against the fmt that TT-Metalium 0.81.1 builds with (fmt 11,
// where <fmt/base.h> holds fmt::print and the format-string core). An older fmt (Debian 12 ships
// 9.1) has the same API in <fmt/core.h>: this header forwards to fmt's own base.h when the
// installed fmt has one, otherwise to its core.h. It declares nothing itself.
#pragma once

#if __has_include_next(<fmt/base.h>)
#include_next <fmt/base.h>
#else
#include <fmt/core.h>
#endif
