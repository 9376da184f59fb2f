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

/// Read a whole file; nullopt when it does not exist, an empty reason string on success.
std::optional<std::vector<char>> read_file(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) error = std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<char> data;
  struct stat st{};
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && std::size_t(st.st_size) <= kMaxEntrySize)
    data.reserve(std::size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read: ") + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    data.insert(data.end(), buf, buf + n);
    if (data.size() > kMaxEntrySize) {
      error = "larger than any entry";
      break;
    }
  }
  ::close(fd);
  return data;
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
  return r.empty() ? r : r + "/" + RLX_VERSION;
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
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
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
