#!/usr/bin/env bash
# tools/dev.sh -- the README's two commands. On a fresh Debian 12 machine (as root) each installs
# what is missing with apt, configures with clang-19 + lld-19, builds, and then:
#   tools/dev.sh demo   runs the main demo (examples/numpy_like: Tensor code, lazily computed, and
#                       rlx::jit with a dynamic batch)
#   tools/dev.sh test   runs every test: the plain build (incl. the bounded fuzz runs and the
#                       install suite) and the ASan+UBSan build, builds the library and the
#                       examples with g++ (warnings are errors), then prints "N passed, ..."
#   tools/dev.sh deb    builds a Debian package of the library, headers and tools (build-deb/)
#   tools/dev.sh bench  runs the benchmarks (bench/run: build-bench/, tables as markdown)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config cmake ccache python3 llvm-19-dev clang-19 lld-19 g++
          libasmjit-dev libboost-dev libfftw3-dev liblapacke-dev doctest-dev libzstd-dev zlib1g-dev
          clang-format-19
          libopenmpi-dev openmpi-bin   # rlx::dist on MPI and its dist suite (mpirun)
          libclang-cpp19-dev libclang-19-dev libedit-dev tmux   # rlx-repl and its tests
          xeus-dev cppzmq-dev libpng-dev python3-nbclient python3-jupyter-client  # rlx-kernel, splat_fit
          libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler)  # ONNX import, node tests

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}"
}

configure() { # configure DIR [meson options...]
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    local native=(--native-file native/clang19.ini)
    command -v ccache >/dev/null && native+=(--native-file native/ccache.ini)
    meson setup "$dir" "${native[@]}" "$@"
  fi
}

configure_gcc() { # build-gcc: the library and examples with Debian's g++, users' default compiler
  if [ ! -f build-gcc/build.ninja ]; then
    local cxx=g++
    command -v ccache >/dev/null && cxx="ccache g++"
    CXX="$cxx" meson setup build-gcc -Dwerror=true -Dtests=disabled -Dtools=disabled \
      -Dexamples=enabled -Dfuzz=disabled -Drepl=disabled
  fi
}

check_deb() { # check_deb FILE.deb LIBDIR: its control and contents, then extracted into a
  # scratch root (dpkg -x: the system's own packages untouched): a user's program built there
  # with pkg-config, and the packaged rlx-repl running a cell.
  local deb=$1 libdir=$2 root missing=() f
  root=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$root'" RETURN
  dpkg-deb -I "$deb"
  local contents
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
  for f in usr/include/rlx/rlx.hpp "$libdir/librlx.so.0.1" "$libdir/librlx.so" \
           "$libdir/librlx-onnx.so" "$libdir/pkgconfig/rlx.pc" "$libdir/pkgconfig/rlx-onnx.pc" \
           "$libdir/cmake/rlx/rlxConfig.cmake" usr/bin/rlx usr/bin/rlx-repl usr/bin/rlx-kernel \
           usr/share/rlx/repl/rlx_repl_prelude.hpp usr/share/jupyter/kernels/rlx/kernel.json \
           usr/share/doc/rlx/README.md; do
    grep -qxF "./$f" <<<"$contents" || missing+=("$f")
  done
  [ ${#missing[@]} -eq 0 ] || { echo "== $deb lacks: ${missing[*]}" >&2; return 1; }
  dpkg -x "$deb" "$root"
  local soname
  soname=$(objdump -p "$root/$libdir/librlx.so.0.1" | awk '$1 == "SONAME" {print $2}')
  [ "$soname" = librlx.so.0.1 ] || { echo "== librlx's soname is '$soname'" >&2; return 1; }
  grep -qF '"/usr/bin/rlx-kernel"' "$root/usr/share/jupyter/kernels/rlx/kernel.json" ||
    { echo "== the kernelspec does not name /usr/bin/rlx-kernel" >&2; return 1; }
  echo "== in a scratch root: c++ -std=c++20 app.cpp \$(pkg-config --cflags --libs rlx)"
  # The .pc files name /usr; pkg-config puts the scratch root before their -I and -L (which it
  # would otherwise drop as the system's own directories).
  local flags
  flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root/$libdir/pkgconfig \
          PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
          pkg-config --cflags --libs rlx)
  # shellcheck disable=SC2086
  c++ -std=c++20 tests/install/app/app.cpp -o "$root/app" $flags
  LD_LIBRARY_PATH=$root/$libdir "$root/app"
  echo "== the packaged rlx-repl (its precompiled prelude built into a scratch cache)"
  printf 'Tensor t = arange(0, 6, 1);\nt.sum()\n' |
    RLX_CACHE_DIR=$root/cache "$root/usr/bin/rlx-repl" --verbose - | tee "$root/repl.out"
  grep -qxF 'tensor(15., f32[])' "$root/repl.out" ||
    { echo "== the packaged rlx-repl did not print the cell's value" >&2; return 1; }
  "$root/usr/bin/rlx-kernel" --version
  echo "== $deb: contents, soname, kernelspec, a pkg-config build and rlx-repl checked"
}

summary() { # summary TESTLOG.json... -> the closing line CI reads
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
res = []
for path in sys.argv[1:]:
    try:
        res += [json.loads(l)["result"] for l in open(path) if l.strip()]
    except FileNotFoundError:
        pass
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
print(f"{ok} passed, {len(res) - ok - skip} failed, {skip} skipped")
PY
}

cmd=${1:-}
case "$cmd" in
demo)
  install_missing
  configure build
  meson compile -C build numpy_like
  ./build/examples/numpy_like
  ;;
test)
  install_missing
  configure build
  configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=disabled
  rc=0
  meson compile -C build || rc=$?
  meson compile -C build-asan || rc=$?
  configure_gcc
  gcc_rc=0
  meson compile -C build-gcc || gcc_rc=$?
  [ $gcc_rc -eq 0 ] || echo "== the g++ build of the library and examples FAILED" >&2
  if [ $rc -eq 0 ]; then
    meson test -C build --print-errorlogs || rc=$?
    meson test -C build-asan --setup=asan --print-errorlogs || rc=$?
  fi
  summary build/meson-logs/testlog.json build-asan/meson-logs/testlog-asan.json
  [ $gcc_rc -eq 0 ] || rc=$gcc_rc
  exit $rc
  ;;
bench)
  exec bench/run "${@:2}"
  ;;
deb)
  # build-deb/rlx_<version>_<arch>.deb: librlx, librlx-onnx, headers, rlx.pc, the CMake package,
  # the tools and the docs under /usr; Depends names the Debian packages of the libraries the
  # installed binaries load (and, for rlx-repl, clang's headers and libstdc++'s).
  install_missing
  configure build-deb --prefix=/usr -Dbuildtype=release -Dtests=disabled -Dexamples=disabled
  meson compile -C build-deb
  stage=build-deb/stage
  rm -rf "$stage"
  meson install -C build-deb --no-rebuild --quiet --destdir stage
  version=$(meson introspect build-deb --projectinfo |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
  arch=$(dpkg --print-architecture)
  libdir=$(dirname "$(find "$stage" -name 'librlx.so.*' | head -1)")
  libdir_rel=${libdir#"$stage"/}  # usr/lib/<multiarch>
  deps=$(find "$stage" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c \
           'head -c 4 "$1" | grep -q ELF && LD_LIBRARY_PATH="$2" ldd "$1"' _ {} "$libdir" \; |
         awk '$3 ~ /^\// {print $3}' | sort -u |
         while read -r so; do
           dpkg -S "$so" 2>/dev/null || dpkg -S "$(realpath "$so")" 2>/dev/null ||
             echo "== no Debian package holds $so: not in Depends" >&2
         done |
         cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')
  mkdir -p "$stage/DEBIAN"
  cat >"$stage/DEBIAN/control" <<EOF
Package: rlx
Version: $version
Architecture: $arch
Maintainer: rlx developers <rlx@localhost>
Section: libdevel
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $deps, libclang-common-19-dev, libstdc++-12-dev
Description: numpy-like C++ that compiles lazily (LLVM ORC JIT)
 librlx and librlx-onnx with their headers, pkg-config files and CMake package, the rlx and
 rlx-repl tools, and rlx-kernel, a Jupyter kernel, with its kernelspec.
EOF
  echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"
  deb=build-deb/rlx_${version}_${arch}.deb
  dpkg-deb --root-owner-group --build "$stage" "$deb"
  check_deb "$deb" "$libdir_rel"
  ;;
*)
  echo "usage: tools/dev.sh demo|test|bench|deb" >&2
  exit 2
  ;;
esac
