// Definitions for hidet/runtime/nccl.hpp.
#pragma once

#include "hidet/runtime/nccl.hpp"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "hidet/runtime/distributed.hpp"
#include "hidet/util/dynlib.hpp"
#include "hidet/util/env.hpp"

namespace hidet::nccl {

namespace detail {

/// The Python site-packages folders to look for NCCL's wheel in (see the top of nccl.hpp).
HIDET_INLINE std::vector<std::string> site_packages_dirs() {
  std::vector<std::string> out, patterns;
  auto split = [](const std::string &s) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string p;
    while (std::getline(ss, p, ':'))
      if (!p.empty()) parts.push_back(p);
    return parts;
  };
  for (const auto &p : split(util::env_string_or("HIDET_NCCL_SEARCH_PATH", "")))
    out.push_back(p);
  auto prefix = [&](const std::string &root) {
    if (root.empty()) return;
    patterns.push_back(root + "/lib/python3*/site-packages");
    patterns.push_back(root + "/lib/python3*/dist-packages");
    patterns.push_back(root + "/local/lib/python3*/dist-packages");
  };
  prefix(util::env_string_or("VIRTUAL_ENV", ""));
  prefix(util::env_string_or("CONDA_PREFIX", ""));
  for (const auto &dir : split(util::env_string_or("PATH", ""))) {
    std::string py = dir + "/python3";
    if (::access(py.c_str(), X_OK) != 0) continue;
    std::string up = dir.substr(0, dir.find_last_of('/')); // <prefix>/bin -> <prefix>
    if (!up.empty()) prefix(up);
  }
  std::string home = util::env_string_or("HOME", "");
  if (!home.empty()) patterns.push_back(home + "/.local/lib/python3*/site-packages");
  patterns.push_back("/usr/local/lib/python3*/dist-packages");
  patterns.push_back("/usr/lib/python3/dist-packages");
  for (const auto &pattern : patterns) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        out.push_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  std::vector<std::string> unique;
  for (auto &d : out)
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  return unique;
}

HIDET_INLINE Library load() {
  std::string tried;
  util::DynamicLibrary lib;
  std::optional<std::string> forced = util::env_string("HIDET_NCCL_LIBRARY");
  if (forced && !forced->empty()) {
    lib = util::DynamicLibrary::open_first({*forced}, &tried);
  } else {
    // torch (or another library) may have loaded NCCL already: use that one.
    if (void *h = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)) {
      ::dlclose(h);
      lib = util::DynamicLibrary::open_first({"libnccl.so.2"}, &tried);
    }
    if (!lib.loaded()) lib = util::DynamicLibrary::open_first(library_candidates(), &tried);
  }
  if (!lib.loaded())
    throw distributed::DistributedError(str_cat(
        "could not load NCCL (libnccl.so.2), which hidet's communicators use on a GPU; tried:\n",
        tried,
        "install NCCL (pip install nvidia-nccl-cu12 or -cu13, which PyTorch's CUDA wheels bring) "
        "or set HIDET_NCCL_LIBRARY to the path of libnccl.so.2; without a GPU, communicators run "
        "on the emulator (HIDET_EMULATE=1) and need no NCCL"));
  Library l;
  l.path = lib.path();
  std::string missing;
#define HIDET_X(name, ret, params)                                                                 \
  l.name = lib.symbol<ret(*) params>(#name);                                                       \
  if (!l.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  HIDET_NCCL_FUNCTIONS(HIDET_X)
#undef HIDET_X
  if (!missing.empty())
    throw distributed::DistributedError(str_cat(
        "the NCCL library '", l.path, "' lacks the entry points ", missing,
        " (hidet needs NCCL 2.14 or later; set HIDET_NCCL_LIBRARY to a newer libnccl.so.2)"));
  if (l.ncclGetVersion(&l.version) != Success) l.version = 0;
  Dl_info info{}; // the file itself, for messages (a library found by name has no path yet)
  if (::dladdr(reinterpret_cast<void *>(l.ncclGetVersion), &info) && info.dli_fname)
    l.path = info.dli_fname;
  return l;
}

/// The library, or the error that loading it raised (kept, so that every call reports it).
struct Loaded {
  std::optional<Library> lib;
  std::string error;
};

HIDET_INLINE const Loaded &loaded() {
  static const Loaded *l = [] {
    auto *r = new Loaded();
    try {
      r->lib = load();
    } catch (const Error &e) {
      r->error = e.what();
    }
    return r;
  }();
  return *l;
}

} // namespace detail

HIDET_INLINE std::string Library::version_str() const {
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z from 2.9 on.
  return str_cat(version / 10000, ".", version / 100 % 100, ".", version % 100);
}

HIDET_INLINE std::vector<std::string> library_candidates() {
  std::vector<std::string> c;
  for (const auto &dir : detail::site_packages_dirs())
    c.push_back(dir + "/nvidia/nccl/lib/libnccl.so.2");
  c.push_back("libnccl.so.2");
  return c;
}

HIDET_INLINE const Library &library() {
  const auto &l = detail::loaded();
  if (!l.lib) throw distributed::DistributedError(l.error);
  return *l.lib;
}

HIDET_INLINE bool available(std::string *why) {
  const auto &l = detail::loaded();
  if (!l.lib && why) *why = l.error;
  return l.lib.has_value();
}

HIDET_INLINE std::string error_text(Result r, Comm comm) {
  static const char *names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                "ncclRemoteError",   "ncclInProgress"};
  std::string s = r >= 0 && r < 8 ? names[r] : str_cat("NCCL error ", int(r));
  const auto &l = detail::loaded();
  if (l.lib) {
    if (const char *d = l.lib->ncclGetErrorString(r)) s += str_cat(" (", d, ")");
    if (comm)
      if (const char *last = l.lib->ncclGetLastError(comm); last && *last) s += str_cat(": ", last);
  }
  return s;
}

} // namespace hidet::nccl
