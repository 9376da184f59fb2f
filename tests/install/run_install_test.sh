#!/usr/bin/env bash
# tests/install/run_install_test.sh BUILD_DIR SOURCE_DIR -- installs the build into a temporary
# staging tree (meson install --destdir) and builds and runs the user project in app/ from
# outside the tree three ways: meson with dependency('rlx') (pkg-config), plain
# `c++ $(pkg-config --cflags --libs rlx)`, and CMake's find_package(rlx CONFIG). Any failing
# step fails the test.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step() { echo "== $*"; }

step "meson install --destdir $tmp/stage"
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/stage" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions |
  /usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(meson introspect "$build" --buildoptions |
  /usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
root=$tmp/stage$prefix
lib=$root/$libdir
for f in "$root/include/rlx/rlx.hpp" "$lib/pkgconfig/rlx.pc" "$lib/pkgconfig/rlx-onnx.pc" \
         "$lib/cmake/rlx/rlxConfig.cmake" "$lib/cmake/rlx/rlxConfigVersion.cmake" \
         "$root/share/doc/rlx/README.md"; do
  [ -f "$f" ] || { echo "missing after install: $f"; exit 1; }
done
compgen -G "$lib/librlx.so.*" >/dev/null || [ -f "$lib/librlx.a" ] || { echo "no librlx in $lib"; exit 1; }

cp -r "$src/tests/install/app" "$tmp/app"
# The staged .pc files name the final prefix; pkg-config prepends the staging root to -I and -L.
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$tmp/stage
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RLX_CACHE_DIR=$tmp/cache
# A user's compile line carries no LLVM, asmjit or FFTW flags.
cflags=$(pkg-config --cflags rlx rlx-onnx)
if grep -qiE 'llvm|asmjit|fftw' <<<"$cflags"; then
  echo "pkg-config --cflags rlx leaks: $cflags"; exit 1
fi

step "meson: dependency('rlx')"
(cd "$tmp/app" && meson setup "$tmp/meson-build" >"$tmp/meson.log" 2>&1 &&
  meson compile -C "$tmp/meson-build" >>"$tmp/meson.log" 2>&1) || { cat "$tmp/meson.log"; exit 1; }
"$tmp/meson-build/app"

step "c++ -std=c++20 app.cpp \$(pkg-config --cflags --libs rlx)"
# shellcheck disable=SC2046
c++ -std=c++20 "$tmp/app/app.cpp" -o "$tmp/app-pc" $(pkg-config --cflags --libs rlx)
"$tmp/app-pc"

step "cmake: find_package(rlx CONFIG)"
cmake -S "$tmp/app" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$root" >"$tmp/cmake.log" 2>&1 &&
  cmake --build "$tmp/cmake-build" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
"$tmp/cmake-build/app"
echo "all three user builds ran"
