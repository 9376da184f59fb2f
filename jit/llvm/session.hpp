// jit/llvm/session.hpp -- the process's one LLVM ORC LLJIT: modules in, function pointers out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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

/// The optimization a module gets: Loops for scalar loops the loop vectorizer widens (rotate,
/// hoist, vectorize), Straight for code already written in vectors (inline and clean up only).
enum class Passes : uint8_t { Loops, Straight };

/// A fresh context and an empty module set up for the host (triple, data layout).
struct ModuleBuilder {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  Passes passes = Passes::Loops;
  /// Generate machine code at optimization level None (fast instruction selection and register
  /// allocation): for large bodies already written in vectors (see session.cpp).
  bool fast_codegen = false;
};
ModuleBuilder new_module(const std::string& name);

/// Mark a function as built for the host CPU (so the vectorizer uses its widest registers).
void set_host_attributes(llvm::Module& module);

/// Compile a module and load its code; LLVM errors become rlx::Error (ErrorKind::Runtime).
/// Thread safe.
///
/// The module is content-addressed: the key is a digest of the unoptimized IR (with the names
/// of its defined globals replaced by placeholders) and of the target, CPU, features, rlx and
/// LLVM versions, and its exported functions are renamed after it, so any module with the
/// same code gets the same machine code in this process and in others. The
/// code comes from, in order: a loaded module with the same key (shared), the disk cache
/// (jit/disk_cache.hpp), or the pass pipeline and the TargetMachine (then written to the disk
/// cache). CompiledCode::symbol takes the names the module was built with.
std::shared_ptr<const CompiledCode> add_module(ModuleBuilder mb);

/// Where the code of an add_module call came from.
enum class CodeOrigin : uint8_t { Compiled, Disk, Memory };
const char* origin_name(CodeOrigin origin);

/// What the calling thread's last add_module did (for RLX_LOG=compile).
struct CompileRecord {
  CodeOrigin origin = CodeOrigin::Compiled;
  std::string symbol; ///< the content-addressed name of the module's first function
};
CompileRecord last_compile();
/// Lowered kernels by their emission key: a text holding everything a lowering reads that its
/// module depends on (the kernel's ops, attributes, dtypes, operand layouts, the host's vector
/// width), so equal keys mean equal modules and the same loaded code. A lowering that finds its
/// key here skips the emission (see lower_elementwise). Entries hold the code weakly: they go
/// when the code is unloaded.
struct LoweredKernel {
  std::shared_ptr<const CompiledCode> code;
  void* fn = nullptr; ///< the entry point
  CompileRecord record;
};
std::optional<LoweredKernel> find_lowered(const std::string& key);
void remember_lowered(const std::string& key, const LoweredKernel& kernel);

/// A kernel whose lowering was skipped (its code was loaded by an earlier lowering that made
/// `record`): counted as KernelCounters::reused and reported by last_compile() as from memory.
void note_reused(const CompileRecord& record);

/// Process-wide kernel counters (never reset).
struct KernelCounters {
  int64_t compiled = 0;      ///< modules optimized and compiled to machine code
  int64_t memory_hits = 0;   ///< modules whose code was already loaded in this process
  int64_t disk_hits = 0;     ///< modules loaded from the disk cache
  int64_t disk_misses = 0;   ///< modules not found on disk (then compiled and written)
  int64_t disk_rejected = 0; ///< disk entries found corrupt, truncated or foreign
  int64_t disk_write_errors = 0;
  int64_t reused = 0;      ///< kernels whose lowering was skipped (an equal one is loaded)
  int64_t generic = 0;     ///< element-wise kernels lowered with a run-time length
  int64_t specialized = 0; ///< element-wise kernels lowered for fixed sizes
};

/// Count an element-wise kernel's lowering (KernelCounters::generic / specialized).
void count_extents(bool generic);
KernelCounters kernel_counters();

/// Host CPU name and the features LLVM sees (for cache keys and dumps).
std::string host_cpu();
std::string host_features();

/// The host's widest vector register in f32 lanes (16 with AVX-512, 8 with AVX, else 4): the
/// width of the explicitly vectorized element-wise kernels.
unsigned host_f32_lanes();

} // namespace rlx::jit
