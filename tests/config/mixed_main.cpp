// The compiled-mode part of a program that mixes the build modes (see test_config.cpp): it must
// stop at start-up with hidet's explanation, before main runs.
#include <cstdio>

#include "hidet/hidet.hpp"

std::string header_only_unit_message();

int main() {
  std::printf("main ran: %s\n", header_only_unit_message().c_str());
  return 0;
}
