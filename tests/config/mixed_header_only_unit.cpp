// A translation unit compiled header-only, linked (wrongly) into a program that uses libhidet:
// see test_config.cpp. It includes a real hidet header, as a user's file would.
#include "hidet/error.hpp"

std::string header_only_unit_message() { return hidet::str_cat("header-only unit ", 1); }
