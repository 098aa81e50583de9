// Shared by the matmul benchmarks: cuBLAS through dlopen (the few declarations needed), event
// timing, and the result checks (against cuBLAS and a sampled double-precision reference).
#pragma once

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/runtime/timing.hpp>

// ---- cuBLAS through dlopen: the few declarations we need --------------------------------------
namespace cublas {
using Handle = void *;
using CreateFn = int (*)(Handle *);
using DestroyFn = int (*)(Handle);
using SetMathModeFn = int (*)(Handle, int);
using SgemmFn = int (*)(Handle, int, int, int, int, int, const float *, const float *, int, const float *, int,
                        const float *, float *, int);
using GemmExFn = int (*)(Handle, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                         const void *, void *, int, int, int, int);
constexpr int OP_N = 0, DEFAULT_MATH = 0;
constexpr int R_16F = 2, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1; // cudaDataType, cublasComputeType

struct Lib {
  void *so = nullptr;
  Handle handle = nullptr;
  SgemmFn sgemm = nullptr;
  GemmExFn gemm_ex = nullptr; ///< null when the library lacks cublasGemmEx
  std::string path, why;
  bool ok() const { return sgemm && handle; }
};

inline std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char *p = std::getenv("HIDET_CUBLAS")) c.push_back(p);
  for (const char *n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) c.push_back(n);
  for (const char *pat : {"/usr/local/cuda/lib64/libcublas.so.1*", "/usr/local/cuda/targets/*/lib/libcublas.so.1*",
                          "/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so.*",
                          "/opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib/libcublas.so.*",
                          "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libcublas.so.*",
                          "/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib/libcublas.so.*",
                          "/usr/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so.*"}) {
    glob_t g{};
    if (glob(pat, 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) c.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  // python3's own site-packages (PyTorch bundles cuBLAS there)
  if (FILE *f = popen("python3 -c \"import site;print(' '.join(site.getsitepackages()))\" 2>/dev/null", "r")) {
    char buf[4096];
    std::string out;
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
    std::size_t s = 0;
    while (s < out.size()) {
      std::size_t e = out.find_first_of(" \n", s);
      if (e == std::string::npos) e = out.size();
      if (e > s)
        for (const char *sub : {"/nvidia/cu13/lib/libcublas.so.*", "/nvidia/cublas/lib/libcublas.so.*"}) {
          glob_t g{};
          if (glob((out.substr(s, e - s) + sub).c_str(), 0, nullptr, &g) == 0)
            for (std::size_t i = 0; i < g.gl_pathc; ++i) c.push_back(g.gl_pathv[i]);
          globfree(&g);
        }
      s = e + 1;
    }
  }
  return c;
}

inline Lib load() {
  Lib l;
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1); // never let the environment turn TF32 on
  for (auto &p : candidates()) {
    if (p.find("Lt") != std::string::npos) continue; // libcublasLt
    void *so = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      l.why += hidet::str_cat(p, ": ", dlerror(), "; ");
      continue;
    }
    auto create = reinterpret_cast<CreateFn>(dlsym(so, "cublasCreate_v2"));
    auto math = reinterpret_cast<SetMathModeFn>(dlsym(so, "cublasSetMathMode"));
    auto sgemm = reinterpret_cast<SgemmFn>(dlsym(so, "cublasSgemm_v2"));
    if (!create || !math || !sgemm) {
      l.why += hidet::str_cat(p, ": missing symbols; ");
      continue;
    }
    hidet::synchronize(); // make sure hidet's context is current before cuBLAS starts
    Handle h = nullptr;
    if (int st = create(&h); st != 0) {
      l.why += hidet::str_cat(p, ": cublasCreate failed with status ", st, "; ");
      continue;
    }
    if (int st = math(h, DEFAULT_MATH); st != 0) l.why += hidet::str_cat("cublasSetMathMode: status ", st, "; ");
    l.so = so, l.handle = h, l.sgemm = sgemm, l.path = p;
    l.gemm_ex = reinterpret_cast<GemmExFn>(dlsym(so, "cublasGemmEx"));
    return l;
  }
  if (l.why.empty()) l.why = "no libcublas found";
  return l;
}

// Row-major c[m][n] = a[m][k] @ b[k][n] is column-major c^T = b^T a^T.
inline int sgemm_row_major(const Lib &l, int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b,
                    const hidet::Tensor &c) {
  float one = 1.0f, zero = 0.0f;
  return l.sgemm(l.handle, OP_N, OP_N, n, m, k, &one, static_cast<const float *>(b.data_ptr()), n,
                 static_cast<const float *>(a.data_ptr()), k, &zero, static_cast<float *>(c.data_ptr()), n);
}

// The same for f16 / bf16 operands and output with f32 accumulation (cublasGemmEx).
inline int gemm_ex_row_major(const Lib &l, int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b,
                      const hidet::Tensor &c) {
  float one = 1.0f, zero = 0.0f;
  int t = a.dtype() == hidet::bf16 ? R_16BF : R_16F;
  return l.gemm_ex(l.handle, OP_N, OP_N, n, m, k, &one, b.data_ptr(), t, n, a.data_ptr(), t, k, &zero, c.data_ptr(), t,
                   n, COMPUTE_32F, GEMM_DEFAULT);
}
} // namespace cublas

// ---- timing --------------------------------------------------------------------------------------
// Median milliseconds per call of `fn`: warm-up, then batches sized to about 2 ms each.
inline double time_ms(const std::function<void()> &fn) { return hidet::median_ms(fn); }

struct Check {
  double rel_vs_cublas = -1; // -1: cuBLAS not loaded
  double worst_sample = 0;   // max |got - ref| / bound over the sampled elements (<= 1 passes)
  bool ok = false;
};

inline Check check(int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b, const hidet::Tensor &c,
            const cublas::Lib &cb, std::mt19937 &rng) {
  Check r;
  auto hc = c.to_vector<float>();
  bool finite = std::all_of(hc.begin(), hc.end(), [](float x) { return std::isfinite(x); });
  if (cb.ok()) {
    auto ref = hidet::empty({m, n}, hidet::f32, "cuda");
    if (cublas::sgemm_row_major(cb, m, n, k, a, b, ref) != 0) return r;
    auto hr = ref.to_vector<float>();
    double e2 = 0, r2 = 0;
    for (std::size_t i = 0; i < hr.size(); ++i) e2 += (double(hc[i]) - hr[i]) * (double(hc[i]) - hr[i]), r2 += double(hr[i]) * hr[i];
    r.rel_vs_cublas = r2 > 0 ? std::sqrt(e2 / r2) : INFINITY;
  }
  // Sampled double-precision reference: rows of a and columns of b copied to the host.
  auto ha = a.to_vector<float>(), hb = b.to_vector<float>();
  std::uniform_int_distribution<int> ri(0, m - 1), rj(0, n - 1);
  for (int s = 0; s < 256; ++s) {
    int i = s == 0 ? m - 1 : ri(rng), j = s == 0 ? n - 1 : rj(rng); // always include the last corner
    double ref = 0, mag = 0;
    for (int kk = 0; kk < k; ++kk) {
      double p = double(ha[std::size_t(i) * k + kk]) * hb[std::size_t(kk) * n + j];
      ref += p, mag += std::abs(p);
    }
    double bound = 1e-6 * std::sqrt(double(k)) * 8 * mag + 1e-6;
    r.worst_sample = std::max(r.worst_sample, std::abs(hc[std::size_t(i) * n + j] - ref) / bound);
    if (!std::isfinite(hc[std::size_t(i) * n + j])) r.worst_sample = INFINITY;
  }
  r.ok = finite && r.worst_sample <= 1 && (r.rel_vs_cublas < 0 || r.rel_vs_cublas < 1e-5);
  return r;
}

// The same checks for f16 / bf16: against cuBLAS GemmEx and a sampled double reference, with the
// output rounding of the dtype (2^-11 relative for f16, 2^-8 for bf16) in the tolerance.
inline Check check_half(int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b, const hidet::Tensor &c,
                 const hidet::Tensor *cublas_ref, std::mt19937 &rng) {
  Check r;
  const double out_eps = c.dtype() == hidet::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  auto hc = c.to_double_vector();
  bool finite = std::all_of(hc.begin(), hc.end(), [](double x) { return std::isfinite(x); });
  if (cublas_ref) {
    auto hr = cublas_ref->to_double_vector();
    double e2 = 0, r2 = 0;
    for (std::size_t i = 0; i < hr.size(); ++i) e2 += (hc[i] - hr[i]) * (hc[i] - hr[i]), r2 += hr[i] * hr[i];
    r.rel_vs_cublas = r2 > 0 ? std::sqrt(e2 / r2) : INFINITY;
  }
  auto ha = a.to_double_vector(), hb = b.to_double_vector();
  std::uniform_int_distribution<int> ri(0, m - 1), rj(0, n - 1);
  for (int s = 0; s < 256; ++s) {
    int i = s == 0 ? m - 1 : ri(rng), j = s == 0 ? n - 1 : rj(rng);
    double ref = 0, mag = 0;
    for (int kk = 0; kk < k; ++kk) {
      double p = ha[std::size_t(i) * k + kk] * hb[std::size_t(kk) * n + j];
      ref += p, mag += std::abs(p);
    }
    double bound = 1.01 * out_eps * std::abs(ref) + 1e-6 * k * mag + 1e-6;
    double got = hc[std::size_t(i) * n + j];
    r.worst_sample = std::max(r.worst_sample, std::isfinite(got) ? std::abs(got - ref) / bound : INFINITY);
  }
  r.ok = finite && r.worst_sample <= 1 && (r.rel_vs_cublas < 0 || r.rel_vs_cublas < 4 * out_eps);
  return r;
}

