// jit/disk_cache.cpp -- the on-disk kernel cache: entry layout, checks, atomic writes.
#include "disk_cache.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RLX_VERSION
#error "RLX_VERSION must be defined by the build (meson.project_version())"
#endif

namespace rlx::jit::disk {

namespace {

constexpr char kMagic[8] = {'R', 'L', 'X', 'K', 'O', 'B', 'J', '\n'};
/// Larger files are not read (no kernel comes near this).
constexpr std::size_t kMaxEntrySize = std::size_t(1) << 30;

struct Config {
  std::mutex mu;
  std::optional<std::string> root; ///< unset until first used
  std::string checked;             ///< the last directory found safe or unsafe (below)
  bool checked_safe = false;
  std::set<std::string> warned; ///< unsafe directories already reported
};

Config& config() {
  static Config c;
  return c;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string root_from_environment() {
  std::string dir = env("RLX_CACHE_DIR");
  if (dir == "off") return "";
  if (!dir.empty()) return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/rlx";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/rlx";
  return "";
}

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = char(uint8_t(v >> (8 * i)));
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = char(uint8_t(v >> (8 * i)));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

/// Read exactly n bytes at the file's position; false on an error or a short file.
bool read_exactly(int fd, char* p, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= std::size_t(r);
  }
  return true;
}

/// Read an entry file; nullopt when it does not exist, an empty reason string on success. Only
/// a regular file (not a symbolic link, FIFO or device: opening one neither follows it nor
/// waits) whose size is the one its header gives is read: nothing else is read past the header.
std::optional<std::vector<char>> read_file(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP)
      error = "a symbolic link, not an entry";
    else if (errno != ENOENT)
      error = std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<char> data;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
  } else if (std::size_t(st.st_size) < kHeaderSize) {
    error = "shorter than the header";
  } else if (std::size_t(st.st_size) > kMaxEntrySize) {
    error = "larger than any entry";
  } else {
    data.resize(kHeaderSize);
    if (!read_exactly(fd, data.data(), kHeaderSize)) {
      error = "cannot read the header";
    } else if (get_u64(data.data() + 48) != uint64_t(st.st_size) - kHeaderSize) {
      error = "truncated or padded payload";
    } else {
      data.resize(std::size_t(st.st_size));
      if (!read_exactly(fd, data.data() + kHeaderSize, data.size() - kHeaderSize))
        error = "cannot read the payload";
    }
  }
  ::close(fd);
  return data;
}

/// Why the directory holding entries is unsafe to load code from, or "" when it is not: it
/// must belong to this user and be writable by nobody else (as ccache and Python's __pycache__
/// expect), since whoever can write an entry chooses the code rlx runs. A directory that does
/// not exist (and could not be made) is not unsafe: writes to it fail and are counted.
std::string unsafe_reason(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "";
  if (!S_ISDIR(st.st_mode)) return "";
  if (st.st_uid != ::geteuid())
    return "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return std::string("others may write to it (mode ") + mode + ")";
  }
  return "";
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

/// A name no other writer uses: the process id, a per-process counter and random bits.
std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = [] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  char s[80];
  std::snprintf(s, sizeof s, ".tmp.%ld.%llu.%llx", long(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(salt));
  return s;
}

} // namespace

std::string root() {
  Config& c = config();
  std::lock_guard lock(c.mu);
  if (!c.root) c.root = root_from_environment();
  return *c.root;
}

void set_root(const std::string& dir) {
  Config& c = config();
  std::lock_guard lock(c.mu);
  c.root = dir == "off" ? std::string() : dir;
}

std::string directory() {
  std::string r = root();
  if (r.empty()) return r;
  std::string dir = r + "/" + RLX_VERSION;
  Config& c = config();
  std::lock_guard lock(c.mu);
  if (c.checked == dir) return c.checked_safe ? dir : std::string();
  // Made private to this user when rlx makes it (its parents as usual).
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(r).parent_path(), ec);
  ::mkdir(r.c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  std::string why = unsafe_reason(r);
  std::string where = r;
  if (why.empty()) why = unsafe_reason(dir), where = dir;
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0) { // a verdict to keep (else checked again next time)
    c.checked = dir;
    c.checked_safe = why.empty();
  }
  if (why.empty()) return dir;
  if (c.warned.insert(where).second)
    std::fprintf(stderr,
                 "rlx: warning: the kernel cache directory '%s' is not safe: %s. Its entries "
                 "are code rlx runs, so the disk cache is off; make it yours and private "
                 "(chmod 700) or set RLX_CACHE_DIR to another directory.\n",
                 where.c_str(), why.c_str());
  return std::string();
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::string entry_path(const std::string& dir, const Key& key) {
  return dir + "/" + to_hex(key) + ".o";
}

uint64_t fnv1a64(std::span<const char> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

std::vector<char> encode(const Key& key, std::span<const char> payload) {
  std::vector<char> out(kHeaderSize + payload.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_u32(out.data() + 8, kFormatVersion);
  put_u32(out.data() + 12, uint32_t(kHeaderSize));
  std::memcpy(out.data() + 16, key.data(), key.size());
  put_u64(out.data() + 48, payload.size());
  put_u64(out.data() + 56, fnv1a64(payload));
  if (!payload.empty()) std::memcpy(out.data() + kHeaderSize, payload.data(), payload.size());
  return out;
}

Loaded load(const std::string& dir, const Key& key) {
  Loaded out;
  std::string error;
  std::optional<std::vector<char>> file = read_file(entry_path(dir, key), error);
  auto reject = [&](std::string why) {
    out.status = Loaded::Status::Rejected;
    out.reason = std::move(why);
    return out;
  };
  if (!file) {
    if (!error.empty()) return reject(error);
    return out; // Miss
  }
  if (!error.empty()) return reject(error);
  const std::vector<char>& f = *file;
  if (f.size() < kHeaderSize) return reject("shorter than the header");
  if (std::memcmp(f.data(), kMagic, sizeof kMagic) != 0) return reject("not an rlx kernel entry");
  if (get_u32(f.data() + 8) != kFormatVersion) return reject("another format version");
  if (get_u32(f.data() + 12) != kHeaderSize) return reject("another header size");
  if (std::memcmp(f.data() + 16, key.data(), key.size()) != 0) return reject("another key");
  uint64_t size = get_u64(f.data() + 48);
  if (size != f.size() - kHeaderSize) return reject("truncated or padded payload");
  std::span<const char> payload(f.data() + kHeaderSize, std::size_t(size));
  if (fnv1a64(payload) != get_u64(f.data() + 56)) return reject("checksum mismatch");
  out.status = Loaded::Status::Hit;
  out.payload.assign(payload.begin(), payload.end());
  return out;
}

bool store(const std::string& dir, const Key& key, std::span<const char> payload) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  std::string path = entry_path(dir, key);
  std::string tmp = path + temp_suffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  std::vector<char> bytes = encode(key, payload);
  bool ok = write_all(fd, bytes.data(), bytes.size());
  ok = ::close(fd) == 0 && ok;
  // rename() replaces the name atomically: readers see the old file or the new one, whole.
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

} // namespace rlx::jit::disk
