// jit/llvm/session.cpp -- one LLJIT per process; content-addressed modules, a lean pass
// pipeline, the disk cache.
#include "llvm/session.hpp"

#include "debug.hpp"
#include "disk_cache.hpp"

#include "rlx/error.hpp"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace rlx::jit {

namespace {

std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

/// Unwrap an llvm::Expected or throw rlx::Error naming what failed.
template <class T> T check(llvm::Expected<T> v, const char* what) {
  if (!v) fail(ErrorKind::Runtime, "jit: ", what, ": ", to_string(v.takeError()));
  return std::move(*v);
}

struct Loaded;

class Session {
public:
  Session() {
    // One vector loop plus a scalar remainder: an extra narrower vector loop for the remainder
    // (epilogue vectorization) costs ~25% more compile time and gains nothing measurable here.
    const char* args[] = {"rlx", "-enable-epilogue-vectorization=false"};
    llvm::cl::ParseCommandLineOptions(2, args);
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    cpu_ = llvm::sys::getHostCPUName().str();
    for (const auto& f : llvm::sys::getHostCPUFeatures())
      features_ +=
          (features_.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
    auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detect host");
    jtmb.setCPU(cpu_);
    jtmb.getFeatures().addFeaturesVector(split(features_));
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    // What LLJIT picks for JITLink on x86-64 ELF; set here too, so the objects this session
    // compiles itself (and caches on disk) are what JITLink links.
    jtmb.setRelocationModel(llvm::Reloc::PIC_);
    jtmb.setCodeModel(llvm::CodeModel::Small);
    tm_ = check(jtmb.createTargetMachine(), "create target machine");
    jit_ =
        check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "create LLJIT");
    // Generated code calls libm (exp, tanh, erf, ...) and rlx's runtime kernels.
    jit_->getMainJITDylib().addGenerator(
        check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                  jit_->getDataLayout().getGlobalPrefix()),
              "process symbols"));
  }

  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < s.size()) {
      std::size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      out.push_back(s.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }

  /// The passes our kernels need, not O2's hundred: inline the body into the entry point,
  /// clean up, rotate loops and hoist invariants (so the vectorizer sees canonical loops),
  /// vectorize, clean up. A third to half of O2's optimization time, the same machine code on
  /// the kernels measured (bench/), part of every cache key. Code written in vectors needs only
  /// the inlining and the clean-up; not early CSE: instruction selection merges equal nodes of a
  /// block anyway (bench/'s 16-op kernel: the same machine code, 2.9% fewer instructions to
  /// compile it).
  static const char* pipeline(Passes passes) {
    if (passes == Passes::Straight)
      return "always-inline,function(instcombine<no-verify-fixpoint>,simplifycfg)";
    return "always-inline,function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"
           "loop-mssa(loop-rotate,licm),loop(indvars),loop-vectorize,"
           "instcombine<no-verify-fixpoint>,simplifycfg)";
  }

  void optimize(llvm::Module& m, Passes passes) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm_.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (llvm::Error e = pb.parsePassPipeline(mpm, pipeline(passes)))
      throw InternalError("jit: the pass pipeline does not parse: " + to_string(std::move(e)));
    mpm.run(m, mam);
  }

  /// The code generator's optimization level. Large kernels already written in vectors are
  /// what the machine should run: the fast instruction selection and register allocation of
  /// level None compile bench/'s 16-op kernel 2.4x faster (3.5 vs 8.4 ms) for 5% slower code.
  /// Small loops keep the full code generator: level None keeps the loop counter in memory, a
  /// store-to-load dependency of ~5 cycles per iteration that a short body cannot hide (x*1.5+1
  /// ran 28% slower), and they compile quickly anyway.
  static llvm::CodeGenOptLevel codegen_level(bool fast) {
    return fast ? llvm::CodeGenOptLevel::None : llvm::CodeGenOptLevel::Aggressive;
  }

  /// Machine code for an optimized module: an object file or assembly text. Locked (the
  /// TargetMachine is not shared between threads).
  std::string emit(llvm::Module& m, llvm::CodeGenFileType type, bool fast_codegen) {
    llvm::SmallVector<char, 0> out;
    llvm::raw_svector_ostream os(out);
    llvm::legacy::PassManager pm;
    tm_->setOptLevel(codegen_level(fast_codegen));
    if (tm_->addPassesToEmitFile(pm, os, nullptr, type))
      fail(ErrorKind::Runtime, "jit: the target machine cannot emit this file type");
    pm.run(m);
    return std::string(out.data(), out.size());
  }

  /// Everything besides the IR that decides the machine code; part of every key.
  std::string key_prefix(Passes passes, bool fast_codegen) const {
    return "rlx kernel cache " + std::to_string(disk::kFormatVersion) +
           "\nrlx " RLX_VERSION "\nllvm " LLVM_VERSION_STRING "\n" + tm_->getTargetTriple().str() +
           "\n" + cpu_ + "\n" + features_ + "\n" + pipeline(passes) + "\ncodegen " +
           std::to_string(int(codegen_level(fast_codegen))) +
           "\nno-epilogue-vectorization pic small\n";
  }

  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_;
  std::mutex mu_;
  /// Loaded code by key (hex), so a module is in the JITDylib once; an entry goes when its
  /// code is removed (cv_ tells waiters).
  std::map<std::string, std::weak_ptr<Loaded>> loaded_;
  std::condition_variable cv_;
};

/// Never destroyed: executables held by other statics release their code at exit, after any
/// function-local static here would be gone.
Session& session() {
  static Session* s = new Session;
  return *s;
}

struct Counters {
  std::atomic<int64_t> compiled{0}, memory_hits{0}, disk_hits{0}, disk_misses{0}, disk_rejected{0},
      disk_write_errors{0}, reused{0}, generic{0}, specialized{0}, recompiled{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

thread_local CompileRecord t_last_compile;

/// Code in the JITDylib under one ResourceTracker, shared by every module with its key.
struct Loaded {
  std::string key;
  llvm::orc::ResourceTrackerSP rt;
  std::vector<void*> addresses; ///< of the module's defined functions, in module order

  ~Loaded() {
    Session& s = session();
    std::lock_guard lock(s.mu_);
    llvm::consumeError(rt->remove());
    if (auto it = s.loaded_.find(key); it != s.loaded_.end() && it->second.expired())
      s.loaded_.erase(it);
    s.cv_.notify_all();
  }
};

/// One add_module's view of shared code: the names its module used.
class Code final : public CompiledCode {
public:
  Code(std::shared_ptr<const Loaded> loaded, std::vector<std::string> names, bool fast)
      : loaded_(std::move(loaded)), names_(std::move(names)), fast_(fast) {}
  bool fast_codegen() const override { return fast_; }
  void* symbol(const std::string& name) const override {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return loaded_->addresses[i];
    throw InternalError("jit: the module defines no function " + name);
  }

private:
  std::shared_ptr<const Loaded> loaded_;
  std::vector<std::string> names_;
  bool fast_ = false;
};

/// Locked: add an object file and resolve `symbols` (which links it). On failure the object
/// is removed again and `error` says why.
std::optional<std::vector<void*>> link(Session& s, const llvm::orc::ResourceTrackerSP& rt,
                                       const std::string& object,
                                       const std::vector<std::string>& symbols,
                                       std::string& error) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, symbols.empty() ? "" : symbols[0]);
  if (llvm::Error e = s.jit_->addObjectFile(rt, std::move(buffer))) {
    error = to_string(std::move(e));
    llvm::consumeError(rt->remove());
    return std::nullopt;
  }
  std::vector<void*> addresses;
  for (const std::string& name : symbols) {
    auto addr = s.jit_->lookup(name);
    if (!addr) {
      error = to_string(addr.takeError());
      llvm::consumeError(rt->remove());
      return std::nullopt;
    }
    addresses.push_back(addr->toPtr<void*>());
  }
  return addresses;
}

std::string print(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return os.str();
}

} // namespace

ModuleBuilder new_module(const std::string& name) {
  Session& s = session();
  ModuleBuilder mb;
  mb.context = std::make_unique<llvm::LLVMContext>();
  mb.module = std::make_unique<llvm::Module>(name, *mb.context);
  mb.module->setDataLayout(s.jit_->getDataLayout());
  mb.module->setTargetTriple(s.tm_->getTargetTriple().str());
  return mb;
}

void set_host_attributes(llvm::Module& module) {
  Session& s = session();
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", s.cpu_);
    f.addFnAttr("target-features", s.features_);
  }
}

std::shared_ptr<const CompiledCode> add_module(ModuleBuilder mb) {
  Session& s = session();
  Counters& count = counters();
  llvm::Module& m = *mb.module;
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(m, &es))
    throw InternalError("jit: generated an invalid LLVM module: " + es.str());
  set_host_attributes(m);
  const std::string module_name = m.getModuleIdentifier();
  DebugState debug = debug_state();
  if (debug.dump_llvm) write_dump(debug, module_name + ".ll", print(m));

  // Content addressing: the key is taken over the IR with placeholder names for every defined
  // global (lowerings name helpers after the kernel), then the exported ones are renamed after
  // the key, the same in every process that builds this code; internal ones keep their suffix.
  std::vector<llvm::GlobalValue*> defined, local;
  for (llvm::GlobalValue& gv : m.global_values())
    if (!gv.isDeclaration()) (gv.hasLocalLinkage() ? local : defined).push_back(&gv);
  std::vector<std::string> names, local_names;
  for (std::size_t i = 0; i < defined.size(); ++i) {
    names.push_back(defined[i]->getName().str());
    defined[i]->setName("__rlx_placeholder_" + std::to_string(i));
  }
  for (std::size_t i = 0; i < local.size(); ++i) {
    local_names.push_back(local[i]->getName().str());
    local[i]->setName("__rlx_local_" + std::to_string(i));
  }
  m.setModuleIdentifier("rlx");
  m.setSourceFileName("rlx");
  // The bitcode: a complete serialization, several times faster to make than the text.
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(m, os);
  }
  auto key_of = [&](bool fast) {
    llvm::BLAKE3 hasher;
    hasher.update(s.key_prefix(mb.passes, fast));
    hasher.update(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(bitcode.data()), bitcode.size()));
    return hasher.final<32>();
  };
  auto symbols_of = [&](const std::string& base) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < defined.size(); ++i)
      out.push_back(base + (i == 0 ? "" : "_" + std::to_string(i)));
    return out;
  };
  disk::Key key = key_of(mb.fast_codegen);
  const std::string hex = disk::to_hex(key);
  const std::string base = "rlx_" + hex.substr(0, 32);
  std::vector<std::string> symbols = symbols_of(base);
  for (std::size_t i = 0; i < defined.size(); ++i) {
    defined[i]->setName(symbols[i]);
    if (defined[i]->getName() != symbols[i])
      throw InternalError("jit: cannot name a kernel " + symbols[i]);
  }
  for (std::size_t i = 0; i < local.size(); ++i) {
    const std::string& n = local_names[i];
    bool derived = n.size() > module_name.size() && n.starts_with(module_name);
    local[i]->setName(base + (derived ? n.substr(module_name.size()) : ".l" + std::to_string(i)));
  }

  bool fast = mb.fast_codegen; // false once the full tier's code is found (below)
  /// Optimized IR and assembly for RLX_DUMP (also for code that was not compiled here).
  auto dump_compiled = [&](llvm::Module& opt) {
    if (debug.dump_llvm) write_dump(debug, module_name + ".opt.ll", print(opt));
    if (debug.dump_asm) {
      std::unique_ptr<llvm::Module> copy = llvm::CloneModule(opt);
      write_dump(debug, module_name + ".s",
                 s.emit(*copy, llvm::CodeGenFileType::AssemblyFile, fast));
    }
  };

  std::shared_ptr<Loaded> loaded; // declared before the lock: released after it
  CodeOrigin origin = CodeOrigin::Compiled;
  std::unique_lock lock(s.mu_);
  // The same code already loaded: share it. An entry whose code is being removed is waited for
  // (its symbols must leave the JITDylib before they are defined again).
  auto find_loaded = [&](const std::string& h) {
    for (;;) {
      auto it = s.loaded_.find(h);
      if (it == s.loaded_.end()) return false;
      if ((loaded = it->second.lock())) {
        origin = CodeOrigin::Memory;
        ++count.memory_hits;
        return true;
      }
      s.cv_.wait(lock);
    }
  };
  auto load_as = [&](const std::string& object, const std::string& as,
                     const std::vector<std::string>& syms, std::string& error) {
    auto rt = s.jit_->getMainJITDylib().createResourceTracker();
    std::optional<std::vector<void*>> addresses = link(s, rt, object, syms, error);
    if (!addresses) return false;
    loaded = std::make_shared<Loaded>();
    loaded->key = as;
    loaded->rt = std::move(rt);
    loaded->addresses = std::move(*addresses);
    s.loaded_[as] = loaded;
    return true;
  };
  // The tiers (jit/steps.cpp): a module for the fast code generator whose full code exists,
  // loaded here or stored on disk by an earlier process that found the kernel hot, gets that
  // code instead. The full object has its own key (the codegen level is in the prefix) and
  // names its functions after it; the functions come in the same order. The first tier's code
  // already loaded here comes before the full code on disk: a kernel lowered twice in one
  // process gets the same code both times (what RLX_CHECK_PLAN asserts), and its step compiles
  // the full code when it turns hot.
  if (fast) {
    const disk::Key full_key = key_of(false);
    const std::string full_hex = disk::to_hex(full_key);
    std::vector<std::string> full_symbols = symbols_of("rlx_" + full_hex.substr(0, 32));
    if (!find_loaded(full_hex)) find_loaded(hex);
    const std::string full_dir = loaded ? std::string() : disk::directory();
    if (!full_dir.empty()) {
      // Only a hit counts: a miss is the usual case, the first tier's own key is looked up next.
      disk::Loaded entry = disk::load(full_dir, full_key);
      std::string error;
      if (entry.status == disk::Loaded::Status::Rejected ||
          (entry.status == disk::Loaded::Status::Hit &&
           !load_as(std::string(entry.payload.data(), entry.payload.size()), full_hex, full_symbols,
                    error))) {
        ++count.disk_rejected;
      } else if (entry.status == disk::Loaded::Status::Hit) {
        origin = CodeOrigin::Disk;
        ++count.disk_hits;
      }
    }
    if (loaded && loaded->key == full_hex) {
      fast = false;
      symbols = std::move(full_symbols);
    }
  }
  if (!loaded) find_loaded(hex);
  const std::string dir = loaded ? std::string() : disk::directory();
  auto load = [&](const std::string& object, std::string& error) {
    return load_as(object, hex, symbols, error);
  };
  if (!loaded && !dir.empty()) {
    disk::Loaded entry = disk::load(dir, key);
    std::string error;
    if (entry.status == disk::Loaded::Status::Miss) {
      ++count.disk_misses;
    } else if (entry.status == disk::Loaded::Status::Rejected ||
               !load(std::string(entry.payload.data(), entry.payload.size()), error)) {
      ++count.disk_rejected;
    } else {
      origin = CodeOrigin::Disk;
      ++count.disk_hits;
    }
  }
  if (loaded) {
    if (debug.dump_llvm || debug.dump_asm) {
      s.optimize(m, mb.passes);
      dump_compiled(m);
    }
  } else {
    s.optimize(m, mb.passes);
    dump_compiled(m);
    std::string object = s.emit(m, llvm::CodeGenFileType::ObjectFile, mb.fast_codegen);
    ++count.compiled;
    if (!dir.empty() && !disk::store(dir, key, object)) ++count.disk_write_errors;
    std::string error;
    if (!load(object, error)) fail(ErrorKind::Runtime, "jit: load compiled code: ", error);
  }
  lock.unlock();
  t_last_compile = CompileRecord{origin, symbols.empty() ? base : symbols[0]};
  return std::make_shared<Code>(std::move(loaded), std::move(names), fast);
}

const char* origin_name(CodeOrigin origin) {
  switch (origin) {
  case CodeOrigin::Compiled:
    return "compiled";
  case CodeOrigin::Disk:
    return "disk";
  case CodeOrigin::Memory:
    return "memory";
  }
  return "?";
}

CompileRecord last_compile() { return t_last_compile; }

namespace {

struct LoweredEntry {
  std::weak_ptr<const CompiledCode> code;
  void* fn = nullptr;
  CompileRecord record;
};

struct LoweredMap {
  std::mutex mu;
  std::unordered_map<std::string, LoweredEntry> entries;
  std::size_t sweep_at = 256; ///< drop expired entries when the map grows past this
};

LoweredMap& lowered_map() {
  static LoweredMap m;
  return m;
}

} // namespace

std::optional<LoweredKernel> find_lowered(const std::string& key) {
  LoweredMap& m = lowered_map();
  std::lock_guard lock(m.mu);
  auto it = m.entries.find(key);
  if (it == m.entries.end()) return std::nullopt;
  std::shared_ptr<const CompiledCode> code = it->second.code.lock();
  if (!code) {
    m.entries.erase(it);
    return std::nullopt;
  }
  return LoweredKernel{std::move(code), it->second.fn, it->second.record};
}

void remember_lowered(const std::string& key, const LoweredKernel& kernel) {
  LoweredMap& m = lowered_map();
  std::lock_guard lock(m.mu);
  m.entries[key] = LoweredEntry{kernel.code, kernel.fn, kernel.record};
  if (m.entries.size() < m.sweep_at) return;
  std::erase_if(m.entries, [](const auto& e) { return e.second.code.expired(); });
  m.sweep_at = std::max<std::size_t>(256, 2 * m.entries.size());
}

void note_reused(const CompileRecord& record) {
  ++counters().reused;
  t_last_compile = CompileRecord{CodeOrigin::Memory, record.symbol};
}

KernelCounters kernel_counters() {
  Counters& c = counters();
  return KernelCounters{c.compiled.load(),    c.memory_hits.load(),   c.disk_hits.load(),
                        c.disk_misses.load(), c.disk_rejected.load(), c.disk_write_errors.load(),
                        c.reused.load(),      c.generic.load(),       c.specialized.load(),
                        c.recompiled.load()};
}

void count_extents(bool generic) { ++(generic ? counters().generic : counters().specialized); }
void count_recompiled() { ++counters().recompiled; }

std::string host_cpu() { return session().cpu_; }
std::string host_features() { return session().features_; }

unsigned host_f32_lanes() {
  const std::string f = "," + session().features_ + ",";
  if (f.find(",+avx512f,") != std::string::npos) return 16;
  if (f.find(",+avx,") != std::string::npos) return 8;
  return 4;
}

} // namespace rlx::jit
