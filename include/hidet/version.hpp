// The library version; part of every compiled-kernel cache key.
#pragma once

/// "major.minor.patch" of hidet for C++.
#define HIDET_VERSION_STRING "0.1.0"
