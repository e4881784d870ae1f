#!/usr/bin/env bash
# The installed package (docs/library.md), as an embedder meets it:
#  1. `cmake --install` into a fresh prefix inside the build folder;
#  2. every installed header compiles alone against that prefix only
#     (C++20; the C headers also as C99), and every header it pulls in
#     (other than the system's) lies under the prefix;
#  3. examples/installed (find_package(lockstep)) configures and builds:
#     the C++ example on the static archive, the C example on the static
#     archive and on the shared library;
#  4. the C and C++ examples build with pkg-config alone (shared, and
#     static with Libs.private);
#  5. every build prints fixture A's greedy tokens (HF's first eight).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)
work=$build/install-test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work/empty"
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }
inc=$prefix/include/lockstep
pc=$(find "$prefix" -name lockstep.pc)
[ -n "$pc" ] || fail "no lockstep.pc installed"
libdir=$(dirname "$(dirname "$pc")")
[ -f "$libdir/liblockstep.a" ] || fail "no liblockstep.a in $libdir"
[ -f "$prefix/share/lockstep/gpt2/encoder.json" ] || fail "no tokenizer data"
[ -f "$libdir/cmake/lockstep/lockstepConfig.cmake" ] || fail "no lockstepConfig.cmake"
echo "installed: $(cd "$prefix" && find . -type f | wc -l) files"

# 2. Headers, each alone, two at a time.
check_header() {  # $1: path relative to $inc; $2: c or c++
  local h=$1 lang=$2 std deps
  if [ "$lang" = c ]; then std="-std=c99 -pedantic"; cc=${CC:-cc}; else std=-std=c++20; cc=${CXX:-c++}; fi
  # From an empty folder: a quoted include of stdin also searches the
  # current directory (the source tree, when run from there).
  deps=$(cd "$prefix/../empty" && printf '#include "%s"\n' "$h" |
    $cc -x "$lang" $std -Wall -Wextra -Werror -I"$inc" -fsyntax-only -MM -MT x - 2>&1) ||
    { echo "$deps"; echo "install_test: FAIL: $h does not compile alone ($lang)"; return 1; }
  # Every non-system header it reads is under the prefix.
  for d in $(echo "$deps" | tr -d '\\' | tr ' ' '\n' | grep -v '^x:$' | grep -v '^-$' | grep .); do
    case "$d" in "$prefix"/*) ;; *) echo "install_test: FAIL: $h reads $d, outside the prefix"; return 1 ;; esac
  done
}
export -f check_header
export inc prefix
headers=$(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort)
n=$(echo "$headers" | wc -l)
for h in $headers; do
  echo "$h c++"
  case "$h" in lockstep.h|ls_*.h) echo "$h c" ;; esac
done | xargs -P 2 -n 2 bash -c 'check_header "$0" "$1"' ||
  fail "header check"
echo "headers: $n compile alone (C++20; lockstep.h and ls_*.h also C99)"

expect="9243,37324,37324,24520,13450,13450,13450,38854"
fixture=$src/tests/data/hf-gpt2-A
prompt="Once upon a time, in a small village"
data=$prefix/share/lockstep
run_check() {  # $1: label; the rest: the command
  local label=$1 out
  shift
  out=$("$@" 2>&1) || fail "$label: exit $?: $out"
  [ "$(echo "$out" | head -1)" = "$expect" ] ||
    fail "$label printed '$(echo "$out" | head -1)', want '$expect'"
  echo "$label: $expect"
}

# 3. find_package(lockstep).
cmake -S "$src/examples/installed" -B "$work/cmake" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "configure examples/installed"; }
cmake --build "$work/cmake" -j 2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "build examples/installed"; }
# LOCKSTEP_DATA: the tokenizer from the prefix, not the source tree.
run_check "find_package C++ (static)" env LOCKSTEP_DATA="$data" "$work/cmake/embed" "$fixture" "$prompt"
run_check "find_package C (static)" "$work/cmake/embed_c" "$fixture" "$data" "$prompt"
[ -x "$work/cmake/embed_c_shared" ] || fail "no lockstep::lockstep_shared"
# The loader's choice, compared as real paths (the build folder may sit
# under a symbolic link, which the RUNPATH and ldd resolve differently),
# without an inherited LD_LIBRARY_PATH (which outranks RUNPATH).
loaded=$(env -u LD_LIBRARY_PATH ldd "$work/cmake/embed_c_shared" |
  awk '$1 ~ /^liblockstep\.so/ { print $3 }')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/liblockstep.so")" ] ||
  fail "embed_c_shared loads '${loaded:-nothing}', not $libdir/liblockstep.so:
$(env -u LD_LIBRARY_PATH ldd "$work/cmake/embed_c_shared")"
run_check "find_package C (shared)" "$work/cmake/embed_c_shared" "$fixture" "$data" "$prompt"

# 4. pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
cflags=$(pkg-config --cflags lockstep)
libs=$(pkg-config --libs lockstep)
static_libs=$(pkg-config --static --libs lockstep)
static_libs=${static_libs/-llockstep/$libdir/liblockstep.a}
${CC:-cc} -std=c99 -Wall -Wextra -Werror "$src/examples/embed_c.c" $cflags $libs \
  -o "$work/embed_c_pc" || fail "pkg-config C build: $cflags $libs"
${CXX:-c++} -std=c++20 -Wall -Wextra -Werror "$src/examples/embed.cc" $cflags $libs \
  -o "$work/embed_pc" || fail "pkg-config C++ build: $cflags $libs"
${CC:-cc} -std=c99 -Wall -Wextra -Werror "$src/examples/embed_c.c" $cflags $static_libs \
  -o "$work/embed_c_pc_static" || fail "pkg-config static C build: $cflags $static_libs"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
run_check "pkg-config C (shared)" "$work/embed_c_pc" "$fixture" "$data" "$prompt"
run_check "pkg-config C++ (shared)" env LOCKSTEP_DATA="$data" "$work/embed_pc" "$fixture" "$prompt"
run_check "pkg-config C (static)" "$work/embed_c_pc_static" "$fixture" "$data" "$prompt"
echo "install_test: PASS"
