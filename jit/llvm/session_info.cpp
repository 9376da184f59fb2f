// jit/llvm/session_info.cpp -- LLVM version and host CPU (LLVM headers stay inside jit/llvm).
#include "probes.hpp"

#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

namespace rlx::jit {

std::string llvm_version() { return LLVM_VERSION_STRING; }

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }

} // namespace rlx::jit
