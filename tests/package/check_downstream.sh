#!/usr/bin/env bash
# tandem as an installed package, as another project uses it: `cmake --install` this build
# into a temporary prefix, then build tests/package/downstream against it twice, with
# find_package(tandem CONFIG) and with pkg-config, and run both; the installed CLI must find
# its installed hardware profiles. Any failure fails the test.
# Usage: check_downstream.sh BUILD_DIR CMAKE CXX [EXTRA_FLAGS] (EXTRA_FLAGS: the build's
# sanitizer flags, which a program linking its libtandem.a needs too).
set -euo pipefail
BUILD=$1
CMAKE=$2
CXX=$3
EXTRA_FLAGS=${4:-}
SRC="$(cd "$(dirname "$0")" && pwd)/downstream"
WORK=$(mktemp -d /tmp/tandem_package_test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix

echo "== cmake --install $BUILD --prefix $PREFIX"
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" > "$WORK/install.log" ||
  { cat "$WORK/install.log"; exit 1; }
for f in bin/tandem include/tandem/tandem.h share/tandem/profiles/pcie3-4gpu.json; do
  [ -e "$PREFIX/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done

echo "== find_package(tandem CONFIG)"
"$CMAKE" -S "$SRC" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_CXX_FLAGS="$EXTRA_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$EXTRA_FLAGS"
"$CMAKE" --build "$WORK/build"
"$WORK/build/downstream"

echo "== pkg-config tandem"
PC=$(find "$PREFIX" -name tandem.pc)
[ -n "$PC" ] || { echo "FAIL: tandem.pc not installed"; exit 1; }
FLAGS=$(PKG_CONFIG_PATH=$(dirname "$PC") pkg-config --cflags --libs tandem)
echo "$FLAGS"
# shellcheck disable=SC2086 # the flags are words
"$CXX" -std=c++20 -O1 $EXTRA_FLAGS "$SRC/main.cpp" -o "$WORK/downstream_pc" $FLAGS
"$WORK/downstream_pc"

echo "== installed CLI reads the installed profiles"
# A profile only the installed copy has: found means the CLI looked there.
cp "$PREFIX/share/tandem/profiles/pcie3-4gpu.json" "$PREFIX/share/tandem/profiles/installed-only.json"
(unset TANDEM_PROFILES_DIR; "$PREFIX/bin/tandem" advise --list-hardware) > "$WORK/list.txt"
grep -q '^installed-only ' "$WORK/list.txt" ||
  { echo "FAIL: installed tandem does not list its installed profiles:"; cat "$WORK/list.txt"; exit 1; }
echo "OK"
