// tools/repl/engine.cpp -- the only translation unit of rlx-repl that includes clang and LLVM:
// the interpreter, and clang building the prelude's PCH (prelude_pch.cpp decides when).
#include "engine.hpp"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Basic/Version.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Driver/Tool.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Interpreter/Interpreter.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Sema/CodeCompleteConsumer.h>
#include <clang/Sema/Sema.h>
#include <clang/Sema/SemaCodeCompletion.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace rlx::repl {

namespace {

/// Prints clang's diagnostics as `<cell 3>:1:5: error: message`, then the line and a caret.
/// (clang's own printer would add "In file included from <<< inputs >>>" to each.) Notes after
/// an error are capped, so a failed overload does not list every candidate of rlx's API.
class Diagnostics final : public clang::DiagnosticConsumer {
public:
  bool quiet = false;
  static constexpr int kMaxNotes = 4;

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    if (quiet || level == clang::DiagnosticsEngine::Ignored) return;
    if (level == clang::DiagnosticsEngine::Note) {
      if (++notes_ > kMaxNotes) {
        ++hidden_notes_;
        return;
      }
    } else {
      flush_hidden();
      notes_ = 0;
    }
    llvm::SmallString<256> message;
    info.FormatDiagnostic(message);
    std::string out;
    std::string snippet;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::SourceManager& sm = info.getSourceManager();
      clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
      clang::PresumedLoc p = sm.getPresumedLoc(loc);
      if (p.isValid())
        out += std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ":" +
               std::to_string(p.getColumn()) + ": ";
      auto [file, offset] = sm.getDecomposedLoc(loc);
      // The source line only for cells (memory buffers), not for notes inside headers.
      if (!sm.getFileEntryRefForID(file)) snippet = source_line(sm, file, offset);
    }
    out += level_name(level);
    out += ": ";
    out += message.str();
    out += '\n';
    out += snippet;
    std::fflush(stdout);
    std::fputs(out.c_str(), stderr);
  }

  /// Report the notes left out after the last error.
  void flush_hidden() {
    if (hidden_notes_ > 0) std::fprintf(stderr, "(%d more notes)\n", hidden_notes_);
    hidden_notes_ = 0;
  }

private:
  static const char* level_name(clang::DiagnosticsEngine::Level level) {
    switch (level) {
    case clang::DiagnosticsEngine::Note:
      return "note";
    case clang::DiagnosticsEngine::Remark:
      return "remark";
    case clang::DiagnosticsEngine::Warning:
      return "warning";
    case clang::DiagnosticsEngine::Error:
      return "error";
    case clang::DiagnosticsEngine::Fatal:
      return "fatal error";
    default:
      return "diagnostic";
    }
  }

  /// "    <the line>\n    <spaces>^\n" for the character at `offset` of `file`.
  static std::string source_line(const clang::SourceManager& sm, clang::FileID file,
                                 unsigned offset) {
    bool invalid = false;
    llvm::StringRef buffer = sm.getBufferData(file, &invalid);
    if (invalid || offset > buffer.size()) return "";
    std::size_t begin = buffer.rfind('\n', offset == 0 ? 0 : offset - 1);
    begin = (begin == llvm::StringRef::npos || offset == 0) ? 0 : begin + 1;
    if (offset > 0 && buffer[offset - 1] == '\n') begin = offset;
    std::size_t end = buffer.find('\n', offset);
    if (end == llvm::StringRef::npos) end = buffer.size();
    std::string line = buffer.slice(begin, end).str();
    std::string caret;
    for (std::size_t i = begin; i < offset; ++i) caret += buffer[i] == '\t' ? '\t' : ' ';
    return "    " + line + "\n    " + caret + "^\n";
  }

  int notes_ = 0;
  int hidden_notes_ = 0;
};

std::string take_message(llvm::Error err) { return llvm::toString(std::move(err)); }

/// Whether `name` is defined by an earlier input or the process.
bool defined(clang::Interpreter& interpreter, llvm::StringRef name) {
  auto address = interpreter.getSymbolAddress(name);
  if (address) return true;
  llvm::consumeError(address.takeError());
  return false;
}

/// The global values whose code or initializer refers to `v` (through constant expressions).
void referrers(const llvm::Value* v, std::vector<const llvm::GlobalValue*>& out, int depth = 0) {
  for (const llvm::User* u : v->users()) {
    if (const auto* inst = llvm::dyn_cast<llvm::Instruction>(u))
      out.push_back(inst->getFunction());
    else if (const auto* gv = llvm::dyn_cast<llvm::GlobalValue>(u))
      out.push_back(gv);
    else if (depth < 8)
      referrers(u, out, depth + 1);
  }
}

/// The symbols `m` needs that neither an earlier input nor the process defines. A module that
/// fails to link in clang 19's JIT leaves its symbols failed (the exception personality's
/// among them) and its initializers pending, so every later input would fail: such a module
/// must never be added. A reference counts only from code that will be kept: the JIT drops a
/// weak (inline, template) definition that an earlier input or the process already has, and
/// clang re-emits many of those in every input.
std::vector<std::string> undefined_symbols(clang::Interpreter& interpreter, llvm::Module& m) {
  std::vector<std::string> missing;
  auto check = [&](const llvm::GlobalValue& gv) {
    if (!gv.isDeclaration() || gv.use_empty() || gv.hasExternalWeakLinkage() || !gv.hasName())
      return;
    if (const auto* f = llvm::dyn_cast<llvm::Function>(&gv); f && f->isIntrinsic()) return;
    // clang's JIT emulates TLS: a thread_local is reached through its __emutls_v. control
    // variable, which the process's own thread_locals (libstdc++'s call_once state, without
    // the PCH) do not have.
    if (gv.isThreadLocal() ? defined(interpreter, "__emutls_v." + gv.getName().str())
                           : defined(interpreter, gv.getName()))
      return;
    std::vector<const llvm::GlobalValue*> users;
    referrers(&gv, users);
    for (const llvm::GlobalValue* user : users) {
      if (user != nullptr && user->getName().starts_with("llvm.")) continue; // llvm.used lists
      bool dropped = user != nullptr && user->isWeakForLinker() && user->hasName() &&
                     defined(interpreter, user->getName());
      if (!dropped) {
        missing.push_back(gv.getName().str());
        return;
      }
    }
  };
  for (const llvm::Function& f : m.functions()) check(f);
  for (const llvm::GlobalVariable& g : m.globals()) check(g);
  return missing;
}

/// Collects the names clang's code completion offers: declarations and keywords.
class Completions final : public clang::CodeCompleteConsumer {
public:
  Completions() : clang::CodeCompleteConsumer(options()), info_(allocator_) {}

  std::vector<std::string> names;
  std::string filter; ///< the part of the name typed before the cursor

  void ProcessCodeCompleteResults(clang::Sema& sema, clang::CodeCompletionContext,
                                  clang::CodeCompletionResult* results, unsigned count) override {
    filter = sema.getPreprocessor().getCodeCompletionFilter().str();
    for (unsigned i = 0; i < count; ++i) {
      const clang::CodeCompletionResult& r = results[i];
      if (r.Kind == clang::CodeCompletionResult::RK_Keyword) {
        names.emplace_back(r.Keyword);
      } else if (r.Kind == clang::CodeCompletionResult::RK_Declaration && r.Declaration) {
        const clang::IdentifierInfo* id = r.Declaration->getDeclName().getAsIdentifierInfo();
        if (id != nullptr && !id->getName().starts_with("__")) names.push_back(id->getName().str());
      }
    }
  }
  clang::CodeCompletionAllocator& getAllocator() override { return *allocator_; }
  clang::CodeCompletionTUInfo& getCodeCompletionTUInfo() override { return info_; }

private:
  static clang::CodeCompleteOptions options() {
    clang::CodeCompleteOptions o;
    o.IncludeMacros = false;
    o.IncludeCodePatterns = false;
    o.IncludeGlobals = true;
    o.IncludeBriefComments = false;
    o.LoadExternal = true;
    return o;
  }
  std::shared_ptr<clang::GlobalCodeCompletionAllocator> allocator_ =
      std::make_shared<clang::GlobalCodeCompletionAllocator>();
  clang::CodeCompletionTUInfo info_;
};

} // namespace

struct Engine::Impl {
  Diagnostics diagnostics;
  std::unique_ptr<clang::Interpreter> interpreter;
  clang::PartialTranslationUnit* pending = nullptr;
};

Engine::Engine(const std::vector<std::string>& args) : impl_(std::make_unique<Impl>()) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  clang::IncrementalCompilerBuilder builder;
  builder.SetCompilerArgs(argv);
  auto ci = builder.CreateCpp();
  if (!ci) throw std::runtime_error("clang: " + take_message(ci.takeError()));
  auto interpreter = clang::Interpreter::create(std::move(*ci));
  if (!interpreter) throw std::runtime_error("clang: " + take_message(interpreter.takeError()));
  impl_->interpreter = std::move(*interpreter);
  impl_->interpreter->getCompilerInstance()->getDiagnostics().setClient(&impl_->diagnostics,
                                                                        /*ShouldOwnClient=*/false);
}

// The interpreter goes first: its shutdown runs the destructors of the cells' globals, which
// may still print through our diagnostics' streams.
Engine::~Engine() { impl_->interpreter.reset(); }

bool Engine::parse(std::string_view code, bool quiet) {
  impl_->pending = nullptr;
  impl_->diagnostics.quiet = quiet;
  auto ptu = impl_->interpreter->Parse(llvm::StringRef(code.data(), code.size()));
  impl_->diagnostics.quiet = false;
  if (!quiet) impl_->diagnostics.flush_hidden();
  if (!ptu) {
    llvm::consumeError(ptu.takeError()); // "Parsing failed."; the diagnostics said why
    return false;
  }
  impl_->pending = &*ptu;
  return true;
}

bool Engine::execute(std::string& error) {
  clang::PartialTranslationUnit* ptu = impl_->pending;
  impl_->pending = nullptr;
  if (ptu == nullptr || !ptu->TheModule) return true; // nothing to run (declarations only)
  std::vector<std::string> missing = undefined_symbols(*impl_->interpreter, *ptu->TheModule);
  if (!missing.empty()) {
    error = "no definition of";
    for (const std::string& name : missing) error += (error.back() == 'f' ? " " : ", ") + name;
    // Nothing of it ran: drop it, so that what it declared can be declared again.
    if (llvm::Error undo = impl_->interpreter->Undo())
      error += "; " + take_message(std::move(undo));
    return false;
  }
  if (llvm::Error err = impl_->interpreter->Execute(*ptu)) {
    error = take_message(std::move(err));
    // Linking failed, so nothing of this input ran: drop it, or every later input would
    // retry its missing symbols.
    if (llvm::Error undo = impl_->interpreter->Undo())
      error += "; " + take_message(std::move(undo));
    return false;
  }
  return true;
}

bool Engine::discard(std::string& error) {
  clang::PartialTranslationUnit* ptu = impl_->pending;
  impl_->pending = nullptr;
  if (ptu == nullptr) return true;
  if (llvm::Error undo = impl_->interpreter->Undo()) {
    error = take_message(std::move(undo));
    return false;
  }
  return true;
}

std::vector<std::string> Engine::complete(std::string_view code, std::string& prefix) {
  // clang's code completion runs when the lexer reaches a point set in a file: the text goes
  // into a virtual file that the next input includes, and the session's own parser and Sema
  // (which see every declaration of the session: the prelude's, the cells') complete there.
  // This leaves the interpreter unusable for more input, hence the throwaway copy.
  clang::CompilerInstance& ci = *impl_->interpreter->getCompilerInstance();
  const std::string path = "/rlx-repl/completion.cpp";
  std::string content(code);
  content += '\n';
  clang::FileEntryRef file =
      ci.getFileManager().getVirtualFileRef(path, off_t(content.size()), /*ModificationTime=*/0);
  ci.getSourceManager().overrideFileContents(file,
                                             llvm::MemoryBuffer::getMemBufferCopy(content, path));
  llvm::StringRef text(code.data(), code.size());
  std::size_t line_start = text.rfind('\n');
  line_start = line_start == llvm::StringRef::npos ? 0 : line_start + 1;
  unsigned line = unsigned(text.count('\n')) + 1;
  unsigned column = unsigned(text.size() - line_start) + 1;
  clang::Preprocessor& pp = ci.getPreprocessor();
  if (pp.SetCodeCompletionPoint(file, line, column)) return {};
  Completions consumer;
  ci.getSema().CodeCompletion().CodeCompleter = &consumer;
  impl_->diagnostics.quiet = true;
  auto ptu = impl_->interpreter->Parse("#include \"" + path + "\"\n");
  if (!ptu) llvm::consumeError(ptu.takeError()); // parsing stops at the completion point
  prefix = consumer.filter;
  std::vector<std::string> out;
  for (std::string& name : consumer.names)
    if (!name.empty() && llvm::StringRef(name).starts_with(prefix)) out.push_back(std::move(name));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Engine::clang_version() { return CLANG_VERSION_STRING; }

std::string Engine::clang_full_version() { return clang::getClangFullVersion(); }

std::string Engine::build_pch(const std::vector<std::string>& args) {
  // The driver named as clang's incremental interpreter names it: the running executable.
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  std::vector<const char*> argv = {exe.c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::string text;
  llvm::raw_string_ostream out(text);
  auto options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::TextDiagnosticPrinter printer(out, options.get());
  auto diags = clang::CompilerInstance::createDiagnostics(options.get(), &printer,
                                                          /*ShouldOwnClient=*/false);
  // The driver, not clang::createInvocation (which makes every job -fsyntax-only): the one job
  // of `-x c++-header FILE -o OUT` is the -cc1 -emit-pch that clang++ would run.
  clang::driver::Driver driver(exe, llvm::sys::getDefaultTargetTriple(), *diags);
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  if (!compilation || diags->hasErrorOccurred()) return "the driver failed:\n" + text;
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1 || std::string_view(jobs.begin()->getCreator().getName()) != "clang")
    return "the driver did not make one compile job";
  const llvm::opt::ArgStringList& cc1 = jobs.begin()->getArguments();
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, cc1, *diags, argv[0]))
    return "bad -cc1 arguments:\n" + text;
  clang::CompilerInstance ci;
  ci.setInvocation(std::move(invocation));
  ci.createDiagnostics(&printer, /*ShouldOwnClient=*/false);
  clang::GeneratePCHAction action;
  bool ok = ci.ExecuteAction(action) && !ci.getDiagnostics().hasErrorOccurred();
  out.flush();
  if (ok) return "";
  return text.empty() ? "clang failed without a diagnostic" : text;
}

uint64_t Engine::hash(std::string_view bytes) {
  return llvm::xxh3_64bits(llvm::StringRef(bytes.data(), bytes.size()));
}

} // namespace rlx::repl
