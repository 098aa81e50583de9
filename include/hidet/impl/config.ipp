// Definitions for hidet/config.hpp.
#include <cstdio>
#include <cstdlib>

#include "hidet/config.hpp"

namespace hidet::detail {

HIDET_INLINE int register_build_mode(int mode) {
  // One definition per program: the header-only copies and libhidet's merge at link time, so
  // this state is shared by every translation unit, whichever mode it was compiled in.
  static int seen = 0;
  seen |= 1 << mode;
  if (seen == 3) {
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

} // namespace hidet::detail
