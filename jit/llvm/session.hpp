// jit/llvm/session.hpp -- the process's one LLVM ORC LLJIT: modules in, function pointers out.
#pragma once

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace rlx::jit {

/// Native code added to the session; removed from it when the last handle goes.
class CompiledCode {
public:
  virtual ~CompiledCode() = default;
  /// The address of a function defined by the module.
  virtual void* symbol(const std::string& name) const = 0;
};

/// A fresh context and an empty module set up for the host (triple, data layout).
struct ModuleBuilder {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
};
ModuleBuilder new_module(const std::string& name);

/// Mark a function as built for the host CPU (so the vectorizer uses its widest registers).
void set_host_attributes(llvm::Module& module);

/// Optimize (O2) and compile a module; LLVM errors become rlx::Error (ErrorKind::Runtime).
/// Thread safe.
std::shared_ptr<const CompiledCode> add_module(ModuleBuilder mb);

/// Host CPU name and the features LLVM sees (for cache keys and dumps).
std::string host_cpu();
std::string host_features();

} // namespace rlx::jit
