// hidet-nvrtc-worker: compiles CUDA sources with NVRTC for the process that spawned it
// (include/hidet/backend/nvrtc_workers.hpp), which talks to it on the file descriptor given as
// its argument. Header-only: it needs NVRTC's wrapper alone.
#include <cstdio>
#include <cstdlib>

#include "hidet/backend/nvrtc.hpp"
#include "hidet/backend/nvrtc_workers.hpp"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "hidet-nvrtc-worker: started by hidet to run NVRTC (usage: hidet-nvrtc-worker <fd>)\n");
    return 2;
  }
  return hidet::backend::nvrtc_worker_main(std::atoi(argv[1]));
}
