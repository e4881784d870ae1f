# Cross-compiling for AArch64 Linux with Debian's toolchain
# (g++-aarch64-linux-gnu) against Debian's multiarch arm64 libraries
# (dpkg --add-architecture arm64; libssl-dev:arm64, libgtest-dev:arm64, ...,
# installed under /usr/lib/aarch64-linux-gnu). scripts/test-arm64.sh uses
# it; test binaries run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Programs (objdump excepted, which CMake takes from the toolchain) come
# from the build machine; libraries, headers and CMake packages from the
# arm64 multiarch directories, which Debian's cross compiler searches
# itself. Header-only packages (CLI11, nlohmann_json) live in
# /usr/share/cmake, shared by all architectures.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config (PCRE2 for the tokenizer) must read the arm64 .pc files.
set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Run test binaries (ctest, gtest discovery) under qemu-user; the arm64
# loader and libraries are the multiarch ones in /lib/aarch64-linux-gnu.
find_program(LOCKSTEP_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(LOCKSTEP_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${LOCKSTEP_QEMU_AARCH64};-L;/")
endif()
