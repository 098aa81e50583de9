// Build modes: one source for header-only and compiled use (the Asio/fmt pattern).
//
//  * Header-only (the default): `#include <hidet/hidet.hpp>` and go. Every definition is in the
//    headers; each translation unit compiles what it uses.
//  * Compiled: define HIDET_SEPARATE_COMPILATION (Meson's `dependency('hidet')` and `hidet.pc`
//    do) and link libhidet. The headers then hold declarations, templates and small inline
//    functions only; the rest is compiled once into libhidet.
//
// Definitions live in `impl/*.ipp` files beside their headers. A header includes its .ipp only
// in header-only mode; libhidet's sources (`src/`) include each .ipp exactly once. Functions in
// an .ipp are marked HIDET_INLINE: `inline` in header-only mode, ordinary external definitions
// in libhidet.
//
// One program must use one mode: translation units of both kinds linked into one program (a
// header-only one with libhidet) would carry two definitions of every function. Each
// translation unit registers its mode when the program starts; the first mismatch stops the
// program with a message saying what to change, instead of an ODR crash later.
#pragma once

#if defined(HIDET_SEPARATE_COMPILATION)
#if defined(HIDET_HEADER_ONLY) && HIDET_HEADER_ONLY
#error "hidet: HIDET_HEADER_ONLY=1 and HIDET_SEPARATE_COMPILATION are both defined; choose one"
#endif
#undef HIDET_HEADER_ONLY
/// 1 when every definition is in the headers, 0 when they come from libhidet.
#define HIDET_HEADER_ONLY 0
/// Marks a definition in an .ipp file: empty in libhidet (one external definition).
#define HIDET_INLINE
#else
#undef HIDET_HEADER_ONLY
#define HIDET_HEADER_ONLY 1
/// Marks a definition in an .ipp file: `inline` in header-only mode.
#define HIDET_INLINE inline
#endif

// Cold code: the definitions that build kernels rather than run them (the DSL front end, the IR
// and its printer, lowering passes, codegen, NVRTC's loader, the emulator's compiler, operator
// templates and schedulers, graph passes) sit between hidet/util/cold_begin.hpp and
// hidet/util/cold_end.hpp. They run once per kernel or operator build, and briefly (the graph of
// tutorial 07 compiles in 0.07 s at -O2, 0.12 s at -O0), yet a header-only program compiles every
// one it reaches, and optimizing them was most of its compile time. With HIDET_COLD_CODE_O0 (by
// default: header-only mode, GCC, an optimizing build other than -Os) they are compiled without
// optimization; what runs kernels (the emulator's nodes, tensors, launches, compiled graphs) and
// the program's own code keep the program's level, and libhidet keeps its own everywhere. Define
// HIDET_COLD_CODE_O0 to 0 to compile everything at the program's level. docs/build_modes.md has
// the figures.
#ifndef HIDET_COLD_CODE_O0
#if HIDET_HEADER_ONLY && defined(__GNUC__) && !defined(__clang__) &&                               \
    !defined(__INTEL_COMPILER) && defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
#define HIDET_COLD_CODE_O0 1
#else
#define HIDET_COLD_CODE_O0 0
#endif
#endif

#include <cstdio>
#include <cstdlib>

namespace hidet::detail {

/// The build modes seen so far (bit 0: header-only, bit 1: compiled). An inline variable is one
/// object per process (a unique symbol shared by the program and libhidet), whichever mode the
/// translation units that touch it were compiled in.
inline int build_modes_seen = 0;

/// Records that a translation unit of `mode` (0: header-only, 1: compiled) is part of the
/// program; stops the program with an explanation when both modes are present.
inline int register_build_mode(int mode) {
  build_modes_seen |= 1 << mode;
  if (build_modes_seen == 3) {
    std::fputs("hidet: this program mixes header-only translation units with libhidet (compiled "
               "mode).\n"
               "  Every translation unit that includes hidet must use the same mode: either compile "
               "all of them with -DHIDET_SEPARATE_COMPILATION and link libhidet (what Meson's "
               "dependency('hidet') and pkg-config's hidet.pc give), or compile none of them with "
               "it and do not link libhidet (header-only: dependency('hidet-header-only')).\n",
               stderr);
    std::abort();
  }
  return mode;
}

#if HIDET_HEADER_ONLY
inline const int header_only_mode_registered = register_build_mode(0);
#else
inline const int compiled_mode_registered = register_build_mode(1);
#endif

} // namespace hidet::detail
