// jit/llvm/session.cpp -- one LLJIT per process with the host target; O2 pipeline; trackers.
#include "llvm/session.hpp"

#include "rlx/error.hpp"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

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
void check(llvm::Error e, const char* what) {
  if (e) fail(ErrorKind::Runtime, "jit: ", what, ": ", to_string(std::move(e)));
}

class Session {
public:
  Session() {
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

  void optimize(llvm::Module& m) {
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
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(m, mam);
  }

  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_;
  std::mutex mu_;
};

/// Never destroyed: executables held by other statics release their code at exit, after any
/// function-local static here would be gone.
Session& session() {
  static Session* s = new Session;
  return *s;
}

class Code final : public CompiledCode {
public:
  Code(llvm::orc::ResourceTrackerSP rt) : rt_(std::move(rt)) {}
  ~Code() override {
    std::lock_guard lock(session().mu_);
    llvm::consumeError(rt_->remove());
  }
  void* symbol(const std::string& name) const override {
    Session& s = session();
    std::lock_guard lock(s.mu_);
    auto addr = check(s.jit_->lookup(name), "look up a kernel");
    return addr.toPtr<void*>();
  }

private:
  llvm::orc::ResourceTrackerSP rt_;
};

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
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*mb.module, &es))
    throw InternalError("jit: generated an invalid LLVM module: " + es.str());
  set_host_attributes(*mb.module);
  {
    // The pass pipeline is not shared between threads; one module at a time.
    std::lock_guard lock(s.mu_);
    s.optimize(*mb.module);
  }
  std::lock_guard lock(s.mu_);
  auto rt = s.jit_->getMainJITDylib().createResourceTracker();
  check(s.jit_->addIRModule(
            rt, llvm::orc::ThreadSafeModule(std::move(mb.module), std::move(mb.context))),
        "add a module");
  return std::make_shared<Code>(std::move(rt));
}

std::string host_cpu() { return session().cpu_; }
std::string host_features() { return session().features_; }

} // namespace rlx::jit
