// Definitions for hidet/backend/nvrtc.hpp.
#pragma once

#include "hidet/backend/nvrtc.hpp"
#include "hidet/backend/nvrtc_workers.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "hidet/error.hpp"
#include "hidet/util/dynlib.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/hash.hpp"

#include "hidet/util/cold_begin.hpp"

#ifndef HIDET_DEFAULT_CUDA_HOME
#define HIDET_DEFAULT_CUDA_HOME "/usr/local/cuda"
#endif

namespace hidet::backend {

HIDET_INLINE std::string cuda_home() {
  return util::env_string_or("CUDA_HOME", std::string(HIDET_DEFAULT_CUDA_HOME).empty()
                                              ? std::string("/usr/local/cuda")
                                              : std::string(HIDET_DEFAULT_CUDA_HOME));
}

HIDET_INLINE std::string default_cuda_arch() {
  return util::env_string_or("HIDET_CUDA_ARCH", "sm_90a");
}

namespace detail {

/// The NVRTC entry points hidet uses.
struct NvrtcApi {
  util::DynamicLibrary lib;
  decltype(&nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&nvrtcVersion) Version = nullptr;
  decltype(&nvrtcGetNumSupportedArchs) GetNumSupportedArchs = nullptr;
  decltype(&nvrtcGetSupportedArchs) GetSupportedArchs = nullptr;
  decltype(&nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&nvrtcGetPTX) GetPTX = nullptr;
  decltype(&nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&nvrtcGetCUBIN) GetCUBIN = nullptr;
  decltype(&nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&nvrtcGetProgramLog) GetProgramLog = nullptr;
  int major = 0, minor = 0;
  std::vector<int> archs;
};

HIDET_INLINE std::vector<std::string> nvrtc_search_paths() {
  std::vector<std::string> paths;
  if (auto p = util::env_string("HIDET_NVRTC_PATH"); p && !p->empty())
    paths.push_back(*p);
  for (const char *n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    paths.push_back(n);
  std::filesystem::path lib = std::filesystem::path(cuda_home()) / "lib64";
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(lib, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("libnvrtc.so", 0) == 0)
      found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  if (found.empty())
    found.push_back((lib / "libnvrtc.so").string());
  paths.insert(paths.end(), found.begin(), found.end());
  return paths;
}

/// The process-wide NVRTC, loaded on first use; throws CudaError when it cannot be loaded.
HIDET_INLINE const NvrtcApi &nvrtc_api() {
  static std::mutex mu;
  static std::unique_ptr<NvrtcApi> api;
  std::lock_guard<std::mutex> lock(mu);
  if (api)
    return *api;
  auto a = std::make_unique<NvrtcApi>();
  a->lib = util::DynamicLibrary::open_or_throw<CudaError>(
      nvrtc_search_paths(), "NVRTC (libnvrtc)",
      "Install the CUDA toolkit's NVRTC, or set HIDET_NVRTC_PATH to libnvrtc.so or CUDA_HOME to "
      "the toolkit root.");
#define HIDET_NVRTC_SYM(name)                                                                      \
  a->name = a->lib.require<decltype(&nvrtc##name), CudaError>("nvrtc" #name)
  HIDET_NVRTC_SYM(GetErrorString);
  HIDET_NVRTC_SYM(Version);
  HIDET_NVRTC_SYM(GetNumSupportedArchs);
  HIDET_NVRTC_SYM(GetSupportedArchs);
  HIDET_NVRTC_SYM(CreateProgram);
  HIDET_NVRTC_SYM(DestroyProgram);
  HIDET_NVRTC_SYM(CompileProgram);
  HIDET_NVRTC_SYM(GetPTXSize);
  HIDET_NVRTC_SYM(GetPTX);
  HIDET_NVRTC_SYM(GetCUBINSize);
  HIDET_NVRTC_SYM(GetCUBIN);
  HIDET_NVRTC_SYM(GetProgramLogSize);
  HIDET_NVRTC_SYM(GetProgramLog);
#undef HIDET_NVRTC_SYM
  a->Version(&a->major, &a->minor);
  int n = 0;
  if (a->GetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    a->archs.resize(n);
    a->GetSupportedArchs(a->archs.data());
  }
  api = std::move(a);
  return *api;
}

/// Throws CudaError naming `what` when `r` is not NVRTC_SUCCESS.
HIDET_INLINE void nvrtc_check(const NvrtcApi &api, nvrtcResult r, const char *what) {
  if (r != NVRTC_SUCCESS)
    throw CudaError(str_cat("NVRTC ", what, " failed: ", api.GetErrorString(r)));
}

/// Writes `text` to `path` (creating the directory); returns false on any I/O failure.
HIDET_INLINE bool write_text_file(const std::filesystem::path &path, const std::string &text) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::binary);
  if (!f)
    return false;
  f.write(text.data(), std::streamsize(text.size()));
  return bool(f);
}

/// A file-name-safe version of a kernel name.
HIDET_INLINE std::string file_stem(const std::string &name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return s.empty() ? "kernel" : s.substr(0, 80);
}

} // namespace detail

HIDET_INLINE int nvrtc_version() {
  const auto &api = detail::nvrtc_api();
  return api.major * 1000 + api.minor * 10;
}

HIDET_INLINE std::vector<int> nvrtc_supported_archs() { return detail::nvrtc_api().archs; }

HIDET_INLINE int parse_sm_arch(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    return -1;
  std::size_t i = 3;
  int n = 0;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    n = n * 10 + (arch[i++] - '0');
  if (i == 3)
    return -1;
  if (i < arch.size() && (arch[i] == 'a' || arch[i] == 'f'))
    ++i;
  return i == arch.size() ? n : -1;
}

HIDET_INLINE std::vector<std::string> nvrtc_options(const CompileOptions &opts) {
  std::vector<std::string> o;
  o.push_back("-arch=" + (opts.arch.empty() ? default_cuda_arch() : opts.arch));
  o.push_back("-std=c++17");
  o.push_back("-I" + cuda_home() + "/include");
  if (opts.lineinfo)
    o.push_back("-lineinfo");
  if (opts.fast_math)
    o.push_back("--use_fast_math");
  o.insert(o.end(), opts.extra.begin(), opts.extra.end());
  return o;
}

namespace detail {
HIDET_INLINE std::atomic<std::int64_t> &nvrtc_total_us() {
  static std::atomic<std::int64_t> us{0};
  return us;
}
} // namespace detail

HIDET_INLINE double nvrtc_seconds_total() { return double(detail::nvrtc_total_us().load()) * 1e-6; }

HIDET_INLINE NvrtcRun nvrtc_run_here(const std::string &source, const std::string &file_name,
                                     const std::vector<std::string> &options) {
  const auto &api = detail::nvrtc_api();
  std::vector<const char *> argv;
  for (auto &o : options)
    argv.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  detail::nvrtc_check(api, api.CreateProgram(&prog, source.c_str(), file_name.c_str(), 0, nullptr, nullptr),
                      "nvrtcCreateProgram");
  struct Guard {
    const detail::NvrtcApi &api;
    nvrtcProgram &p;
    ~Guard() { api.DestroyProgram(&p); }
  } guard{api, prog};
  NvrtcRun out;
  auto t0 = std::chrono::steady_clock::now();
  out.result = api.CompileProgram(prog, int(argv.size()), argv.data());
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::size_t n = 0;
  if (api.GetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    out.log.resize(n);
    api.GetProgramLog(prog, out.log.data());
    out.log.resize(n - 1);
  }
  if (out.result != NVRTC_SUCCESS)
    return out;
  n = 0;
  detail::nvrtc_check(api, api.GetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
  out.cubin.resize(n);
  if (n)
    detail::nvrtc_check(api, api.GetCUBIN(prog, out.cubin.data()), "nvrtcGetCUBIN");
  n = 0;
  if (api.GetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    out.ptx.resize(n);
    detail::nvrtc_check(api, api.GetPTX(prog, out.ptx.data()), "nvrtcGetPTX");
    out.ptx.resize(n - 1);
  }
  return out;
}

HIDET_INLINE CompiledBinary nvrtc_compile(const std::string &source, const std::string &name,
                                          const CompileOptions &opts) {
  namespace fs = std::filesystem;
  const auto &api = detail::nvrtc_api();
  CompiledBinary bin;
  bin.arch = opts.arch.empty() ? default_cuda_arch() : opts.arch;
  int sm = parse_sm_arch(bin.arch);
  if (sm < 0 || std::find(api.archs.begin(), api.archs.end(), sm) == api.archs.end()) {
    std::string list;
    for (int a : api.archs)
      list += str_cat(list.empty() ? "" : ", ", "sm_", a);
    throw CudaError(str_cat("cannot compile '", name, "' for arch '", bin.arch, "': NVRTC ",
                            api.major, ".", api.minor, " supports ", list,
                            " (an 'a' or 'f' suffix selects arch-specific features); pass one of "
                            "these as CompileOptions::arch or HIDET_CUDA_ARCH"));
  }
  std::vector<std::string> options = nvrtc_options(opts);
  std::string stem = detail::file_stem(name);
  auto joined = [&] {
    std::string s;
    for (auto &o : options)
      s += (s.empty() ? "" : " ") + o;
    return s;
  };
  std::string hash = util::Hasher128().add(source).add(joined()).finish().hex().substr(0, 16);
  std::string dump_dir = util::env_string_or("HIDET_DUMP_DIR", "");

  NvrtcRun run = nvrtc_run(source, stem + ".cu", options);
  bin.compile_ms = run.ms;
  detail::nvrtc_total_us().fetch_add(std::int64_t(run.ms * 1000), std::memory_order_relaxed);
  bin.log = std::move(run.log);
  if (run.result != NVRTC_SUCCESS) {
    fs::path dir =
        dump_dir.empty() ? fs::temp_directory_path() / "hidet-failed" : fs::path(dump_dir);
    fs::path cu = dir / (stem + "_" + hash + ".cu");
    bool dumped = detail::write_text_file(cu, source);
    detail::write_text_file(dir / (stem + "_" + hash + ".log"), bin.log);
    throw CudaError(str_cat(
        "NVRTC failed to compile '", name, "' (", api.GetErrorString(nvrtcResult(run.result)), ")\n  options: ", joined(),
        "\n  source: ", dumped ? cu.string() : "(could not write " + cu.string() + ")",
        "\n  log:\n", bin.log));
  }
  bin.cubin = std::move(run.cubin);
  bin.ptx = std::move(run.ptx);
  if (bin.cubin.empty())
    throw CudaError(str_cat("NVRTC produced no CUBIN for '", name, "' with options ", joined(),
                            "; use an sm_XX arch (compute_XX gives PTX only)"));
  if (!dump_dir.empty()) {
    fs::path dir(dump_dir);
    detail::write_text_file(dir / (stem + "_" + hash + ".cu"), source);
    detail::write_text_file(dir / (stem + "_" + hash + ".ptx"), bin.ptx);
    detail::write_text_file(dir / (stem + "_" + hash + ".cubin"), std::string(bin.cubin.begin(), bin.cubin.end()));
    detail::write_text_file(dir / (stem + "_" + hash + ".log"),
                            "options: " + joined() + "\n" + bin.log);
  }
  return bin;
}

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
