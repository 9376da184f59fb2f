// src/runtime/backends.cpp -- the registry of compiling backends (src/runtime/backend.hpp).
#include "runtime/backend.hpp"

#include <array>
#include <atomic>

namespace rlx::runtime {

namespace {

std::array<std::atomic<const CompilingBackend*>, 2>& registry() {
  static std::array<std::atomic<const CompilingBackend*>, 2> r{};
  return r;
}

} // namespace

bool register_backend(const CompilingBackend& backend) {
  registry().at(std::size_t(backend.kind())).store(&backend, std::memory_order_release);
  return true;
}

const CompilingBackend* find_backend(Backend kind) {
  return registry().at(std::size_t(kind)).load(std::memory_order_acquire);
}

} // namespace rlx::runtime
