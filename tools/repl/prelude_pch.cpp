// tools/repl/prelude_pch.cpp -- the precompiled prelude: the build tree's, or an installed
// rlx-repl's, built once into rlx's cache directory by clang (Engine::build_pch) in a forked
// copy of the process.
#include "prelude_pch.hpp"

#include "disk_cache.hpp"
#include "engine.hpp"
#include "sandbox.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RLX_VERSION
#error "RLX_VERSION must be defined by the build"
#endif
#ifndef RLX_REPL_PCH_FLAGS
#error "RLX_REPL_PCH_FLAGS (the flags the prelude's PCH is built with) must be defined by the build"
#endif
#ifndef RLX_REPL_RESOURCE_DIR
#error "RLX_REPL_RESOURCE_DIR (clang's resource directory) must be defined by the build"
#endif

namespace rlx::repl {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds a PCH build may take before it is abandoned (it takes 5-10 s).
constexpr double kBuildTimeout = 600;

std::string hex16(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

/// What the PCH depends on, hashed: rlx's and clang's versions, the arguments that build it,
/// and each file of rlx's headers and of the prelude's folder by path, size and modification
/// time (what clang itself checks when it loads a PCH).
std::string cache_key(const std::vector<std::string>& args) {
  std::string id = std::string(RLX_VERSION) + "\n" + Engine::clang_full_version() + "\n";
  for (const std::string& a : args) id += a + "\n";
  std::vector<std::string> files;
  for (const std::string& dir : {layout().headers, layout().prelude_dir}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code fe;
      if (!it->is_regular_file(fe)) continue;
      auto size = it->file_size(fe);
      auto mtime = it->last_write_time(fe).time_since_epoch().count();
      files.push_back(it->path().string() + " " + std::to_string(size) + " " +
                      std::to_string(mtime));
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) id += f + "\n";
  return hex16(Engine::hash(id));
}

/// The checksum of a file's contents, or nullopt when it cannot be read.
std::optional<uint64_t> file_checksum(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::optional<uint64_t> sum;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::size_t size = std::size_t(st.st_size);
    void* data = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (size == 0) {
      sum = Engine::hash({});
    } else if (data != MAP_FAILED) {
      sum = Engine::hash(std::string_view(static_cast<const char*>(data), size));
      ::munmap(data, size);
    }
  }
  ::close(fd);
  return sum;
}

/// Files named `<prefix>...` in `dir` that a crashed or killed build left behind (older than
/// an hour: a racing session may still be writing a younger one).
void remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code fe;
    if (name.starts_with(prefix) && it->last_write_time(fe) < hour_ago && !fe)
      fs::remove(it->path(), fe);
  }
}

struct Cache {
  std::string dir;
  std::string key;
  std::string link() const { return dir + "/repl-prelude-" + key + ".pch"; }
  std::string file(uint64_t checksum) const {
    return dir + "/repl-prelude-" + key + "-" + hex16(checksum) + ".pch";
  }
};

/// The file the link names when it is there and its contents match the checksum in its name;
/// else nullopt, with `why` saying what is wrong ("" when there is no link).
std::optional<std::string> valid_file(const Cache& cache, std::string& why) {
  std::error_code ec;
  fs::path target = fs::read_symlink(cache.link(), ec);
  if (ec) {
    why = fs::exists(fs::symlink_status(cache.link(), ec)) ? "not a link" : "";
    return std::nullopt;
  }
  std::string name = target.filename().string();
  std::string start = "repl-prelude-" + cache.key + "-";
  if (target.has_parent_path() || !name.starts_with(start) || !name.ends_with(".pch") ||
      name.size() != start.size() + 16 + 4) {
    why = "the link names '" + target.string() + "'";
    return std::nullopt;
  }
  uint64_t expected = std::strtoull(name.substr(start.size(), 16).c_str(), nullptr, 16);
  std::string path = cache.dir + "/" + name;
  std::optional<uint64_t> sum = file_checksum(path);
  if (!sum) {
    why = "it cannot be read";
    return std::nullopt;
  }
  if (*sum != expected) {
    why = "its contents do not match their checksum";
    return std::nullopt;
  }
  return path;
}

/// A new empty file in the cache for the build to write, or nullopt with `why` set.
std::optional<std::string> temporary_file(const Cache& cache, std::string& why) {
  std::string temp = cache.dir + "/repl-prelude-" + cache.key + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    why = "cannot write in " + cache.dir + " (" + std::strerror(errno) + ")";
    return std::nullopt;
  }
  ::close(fd);
  return temp;
}

/// Build the PCH into `temp`, check that a session starts with it, rename it into the cache
/// and point the link at it. Returns the file, or nullopt with `why` set. The build runs in a
/// forked copy: clang's memory and any crash stay there.
std::optional<std::string> build_into(const Cache& cache, const std::string& temp,
                                      const PchProbe& loads, std::string& why) {
  std::vector<std::string> args =
      pch_build_args(layout().prelude_dir + "/rlx_repl_prelude.hpp", temp);
  std::optional<std::string> result =
      run_in_copy([&] { return "done\n" + Engine::build_pch(args); }, kBuildTimeout);
  std::error_code ec;
  if (!result || !result->starts_with("done\n") || result->size() > 5) {
    fs::remove(temp, ec);
    if (!result)
      why = "clang crashed or took longer than " + std::to_string(int(kBuildTimeout)) + " s";
    else
      why = "clang failed:\n" + result->substr(std::min<std::size_t>(result->size(), 5));
    return std::nullopt;
  }
  std::optional<uint64_t> sum = file_checksum(temp);
  if (!sum) {
    fs::remove(temp, ec);
    why = "clang wrote no PCH";
    return std::nullopt;
  }
  if (!loads(temp)) {
    fs::remove(temp, ec);
    why = "a session does not start with the PCH clang built";
    return std::nullopt;
  }
  std::string file = cache.file(*sum);
  fs::path previous = fs::read_symlink(cache.link(), ec);
  // Racing sessions each rename their own file, then their own link: the link always names a
  // complete file whose name carries its checksum.
  std::string temp_link = temp + ".link";
  if (::rename(temp.c_str(), file.c_str()) != 0 ||
      ::symlink(fs::path(file).filename().c_str(), temp_link.c_str()) != 0 ||
      ::rename(temp_link.c_str(), cache.link().c_str()) != 0) {
    why = "cannot write in " + cache.dir + " (" + std::strerror(errno) + ")";
    fs::remove(temp, ec);
    fs::remove(temp_link, ec);
    return std::nullopt;
  }
  // The file it replaces (damaged); a session may still have it open.
  if (!previous.empty() && previous.filename() != fs::path(file).filename() &&
      !previous.has_parent_path())
    fs::remove(cache.dir + "/" + previous.string(), ec);
  remove_stale_temporaries(cache.dir, "repl-prelude-" + cache.key + ".tmp.");
  return file;
}

void notice(const std::string& text) {
  std::fflush(stdout);
  std::fprintf(stderr, "rlx-repl: %s\n", text.c_str());
  std::fflush(stderr);
}

} // namespace

std::vector<std::string> pch_build_args(const std::string& header, const std::string& output) {
  std::vector<std::string> args;
  std::istringstream flags(RLX_REPL_PCH_FLAGS);
  for (std::string flag; flags >> flag;) args.push_back(flag);
  args.insert(args.end(), {"-resource-dir", RLX_REPL_RESOURCE_DIR, "-I" + layout().prelude_dir});
  if (!layout().rlx_include.empty()) args.push_back("-I" + layout().rlx_include);
  args.insert(args.end(), {"-x", "c++-header", header, "-o", output});
  return args;
}

PreludePch prelude_pch(const Options& options, bool verbose, const PchProbe& loads) {
  if (!pch_fits(options)) return {};
  if (!layout().installed) {
    if (!uses_pch(options)) return {};
    if (verbose) notice(std::string("precompiled prelude ") + RLX_REPL_PCH + " (the build's)");
    return {PreludePch::Origin::BuildTree, RLX_REPL_PCH};
  }
  std::string dir = jit::disk::directory();
  if (dir.empty()) { // RLX_CACHE_DIR=off, or a directory disk::directory() warned about
    if (verbose) notice("no cache directory: parsing rlx's headers");
    return {};
  }
  Cache cache{dir, cache_key(pch_build_args(layout().prelude_dir + "/rlx_repl_prelude.hpp", ""))};
  std::string why;
  if (std::optional<std::string> file = valid_file(cache, why)) {
    if (verbose) notice("precompiled prelude " + *file + " (reused)");
    return {PreludePch::Origin::Reused, *file};
  }
  std::string unwritable;
  std::optional<std::string> temp = temporary_file(cache, unwritable);
  if (!temp) {
    notice("no precompiled prelude: " + unwritable + "; parsing rlx's headers instead");
    return {};
  }
  if (!why.empty())
    notice("the precompiled prelude " + cache.link() + " is not usable (" + why +
           "); building it again");
  else
    notice("precompiling rlx's headers into " + cache.link() +
           " (once for this rlx, clang and set of headers; later starts load it)");
  auto t0 = Clock::now();
  std::optional<std::string> file = build_into(cache, *temp, loads, why);
  if (!file) {
    notice("cannot build the precompiled prelude: " + why + "; parsing rlx's headers instead");
    return {};
  }
  if (verbose) {
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f", s);
    notice("precompiled prelude " + *file + " (built in " + took + " s)");
  }
  return {PreludePch::Origin::Built, *file};
}

} // namespace rlx::repl
