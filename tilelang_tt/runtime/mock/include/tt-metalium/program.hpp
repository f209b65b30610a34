// tilelang-tt mock TT-Metalium: a Program bundles kernels, circular buffers and semaphores.
// Like the SDK's, it is move-only and holds its state in detail::ProgramImpl (the library's).
#pragma once
#include <memory>

namespace tt::tt_metal {

namespace detail {
class ProgramImpl;
}  // namespace detail

class Program {
public:
    Program();
    Program(const Program& other) = delete;
    Program& operator=(const Program& other) = delete;
    Program(Program&& other) noexcept;
    Program& operator=(Program&& other) noexcept;
    ~Program() noexcept;

    detail::ProgramImpl& impl() { return *internal_; }
    const detail::ProgramImpl& impl() const { return *internal_; }

private:
    std::shared_ptr<detail::ProgramImpl> internal_;
};

}  // namespace tt::tt_metal
