// Benchmark: c = a @ b in hidet (Hidet Script kernels) against cuBLAS, measured in the same run.
//
// f32 rows run hidet's FMA kernel (include/hidet/ops/templates/matmul_f32.hpp) against
// cublasSgemm with CUBLAS_DEFAULT_MATH and NVIDIA_TF32_OVERRIDE=0 (plain f32, no TF32). f16 and
// bf16 rows run hidet's tensor-core kernels (mma.sync + ldmatrix + cp.async pipeline,
// include/hidet/ops/templates/matmul_f16.hpp, and on Hopper TMA + wgmma with warp
// specialization, matmul_wgmma.hpp; f32 accumulation, f16/bf16 output) against
// cublasGemmEx with CUDA_R_16F / CUDA_R_16BF operands and CUBLAS_COMPUTE_32F; each shape tries a
// few tilings (all printed) and reports the best. cuBLAS
// is loaded with dlopen (libcublas.so.13/.12 from the toolkit, or PyTorch's bundled copy; set
// HIDET_CUBLAS to a path to choose one); when it cannot be loaded the table says so and
// benchmarks/bench_matmul_torch.py measures torch.matmul instead. Every shape is checked before
// it is timed: against cuBLAS (relative Frobenius error) and, on 256 sampled elements, against a
// double-precision host reference. Times: CUDA events around batches of launches after warm-up,
// the median of the batches. TFLOP/s = 2 m n k / time.
//
// Usage: bench_matmul [--sweep] [m n k]...   (--sweep also times alternative tilings; the
// default shapes are those of the issue). Needs a GPU; on the emulator it says so and exits 0.
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
#include <hidet/ops/templates/matmul_f16.hpp>
#include <hidet/ops/templates/matmul_f32.hpp>
#include <hidet/ops/templates/matmul_wgmma.hpp>

using hidet::ops::templates::MatmulF16;
using hidet::ops::templates::MatmulF16Config;
using hidet::ops::templates::MatmulF32;
using hidet::ops::templates::MatmulF32Config;
using hidet::ops::templates::MatmulWgmma;
using hidet::ops::templates::MatmulWgmmaConfig;

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

std::vector<std::string> candidates() {
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

Lib load() {
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
int sgemm_row_major(const Lib &l, int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b,
                    const hidet::Tensor &c) {
  float one = 1.0f, zero = 0.0f;
  return l.sgemm(l.handle, OP_N, OP_N, n, m, k, &one, static_cast<const float *>(b.data_ptr()), n,
                 static_cast<const float *>(a.data_ptr()), k, &zero, static_cast<float *>(c.data_ptr()), n);
}

// The same for f16 / bf16 operands and output with f32 accumulation (cublasGemmEx).
int gemm_ex_row_major(const Lib &l, int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b,
                      const hidet::Tensor &c) {
  float one = 1.0f, zero = 0.0f;
  int t = a.dtype() == hidet::bf16 ? R_16BF : R_16F;
  return l.gemm_ex(l.handle, OP_N, OP_N, n, m, k, &one, b.data_ptr(), t, n, a.data_ptr(), t, k, &zero, c.data_ptr(), t,
                   n, COMPUTE_32F, GEMM_DEFAULT);
}
} // namespace cublas

// ---- timing --------------------------------------------------------------------------------------
// Median milliseconds per call of `fn`: warm-up, then batches sized to about 2 ms each.
double time_ms(const std::function<void()> &fn) {
  for (int i = 0; i < 3; ++i) fn();
  hidet::synchronize();
  hidet::Event s, e;
  s.record();
  fn();
  e.record();
  double one = std::max(1e-3, double(e.elapsed_ms_since(s)));
  int per_batch = std::clamp(int(2.0 / one), 1, 200);
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    s.record();
    for (int i = 0; i < per_batch; ++i) fn();
    e.record();
    t.push_back(double(e.elapsed_ms_since(s)) / per_batch);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Check {
  double rel_vs_cublas = -1; // -1: cuBLAS not loaded
  double worst_sample = 0;   // max |got - ref| / bound over the sampled elements (<= 1 passes)
  bool ok = false;
};

Check check(int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b, const hidet::Tensor &c,
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
Check check_half(int m, int n, int k, const hidet::Tensor &a, const hidet::Tensor &b, const hidet::Tensor &c,
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

struct Shape {
  int m, n, k;
  const char *kind;
};

int main(int argc, char **argv) {
  if (hidet::cuda_emulated()) {
    std::printf("bench_matmul needs a CUDA GPU (the 'cuda' device is the CPU emulator here); nothing measured.\n");
    return 0;
  }
  bool sweep = false;
  std::vector<Shape> shapes;
  std::vector<int> nums;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--sweep") sweep = true;
    else nums.push_back(std::atoi(argv[i]));
  }
  for (std::size_t i = 0; i + 2 < nums.size(); i += 3) shapes.push_back({nums[i], nums[i + 1], nums[i + 2], "custom"});
  if (shapes.empty())
    shapes = {{1024, 1024, 1024, "square"},   {2048, 2048, 2048, "square"},     {4096, 4096, 4096, "square"},
              {8192, 8192, 8192, "square"},   {333, 444, 555, "odd"},           {4095, 4097, 1023, "odd"},
              {128, 768, 3072, "transformer"}, {2048, 4096, 4096, "transformer"}};

  const auto &dev = hidet::runtime::device_info(0);
  auto cb = cublas::load();
  std::printf("device: %s, %d SMs\n", dev.name.c_str(), dev.sm_count);
  if (cb.ok()) std::printf("cuBLAS: %s (cublasSgemm_v2, CUBLAS_DEFAULT_MATH, NVIDIA_TF32_OVERRIDE=0: no TF32)\n", cb.path.c_str());
  else std::printf("cuBLAS: NOT LOADED (%s); run benchmarks/bench_matmul_torch.py for the torch numbers\n", cb.why.c_str());

  std::mt19937 rng(std::random_device{}());
  struct Row {
    const char *dtype;
    Shape s;
    std::string tiling;
    double ms, tflops, cublas_tflops;
    Check chk;
  };
  std::vector<Row> rows;
  int failures = 0;
  // f16 and bf16 on the tensor cores: a few tilings per shape, the best one reported.
  for (auto dt : {hidet::DataType(hidet::f16), hidet::DataType(hidet::bf16)}) {
    const char *dname = dt == hidet::f16 ? "f16" : "bf16";
    for (auto &s : shapes) {
      double flop = 2.0 * s.m * s.n * s.k;
      hidet::manual_seed(rng());
      auto a = hidet::randn({s.m, s.k}, dt, "cuda");
      auto b = hidet::randn({s.k, s.n}, dt, "cuda");
      auto c = hidet::empty({s.m, s.n}, dt, "cuda");
      hidet::Tensor cref;
      double cublas_ms = -1;
      if (cb.ok() && cb.gemm_ex) {
        cref = hidet::empty({s.m, s.n}, dt, "cuda");
        if (int st = cublas::gemm_ex_row_major(cb, s.m, s.n, s.k, a, b, cref); st != 0) {
          std::printf("cublasGemmEx %s %dx%dx%d: status %d\n", dname, s.m, s.n, s.k, st);
          cref = hidet::Tensor();
        } else {
          cublas_ms = time_ms([&] { cublas::gemm_ex_row_major(cb, s.m, s.n, s.k, a, b, cref); });
        }
      }
      // Candidates: the heuristic's tiling, 128x128 (4 warps of 64x64), and 128x256 (8 warps) for
      // shapes with many tiles or 64x64 (4 warps of 32x32) for the others; more in --sweep.
      std::vector<MatmulF16Config> configs{hidet::ops::templates::matmul_f16_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
      auto add = [&](MatmulF16Config c) {
        for (auto &x : configs)
          if (x.str() == c.str()) return;
        configs.push_back(c);
      };
      std::int64_t big_tiles = std::int64_t(hidet::lang::ceil_div(s.m, 128)) * hidet::lang::ceil_div(s.n, 128);
      add(MatmulF16Config{});
      if (big_tiles >= dev.sm_count) add(MatmulF16Config{2, 4, 64, 64, 32, 3, 1});
      else add(MatmulF16Config{2, 2, 32, 32, 32, 3, 1});
      if (sweep) {
        add(MatmulF16Config{2, 2, 64, 64, 32, 4, 1});
        add(MatmulF16Config{2, 4, 64, 64, 32, 4, 1});
        add(MatmulF16Config{4, 2, 64, 64, 32, 3, 1});
        add(MatmulF16Config{2, 2, 64, 64, 64, 3, 1});
      }
      Row best{dname, s, "", 1e30, 0, 0, {}};
      // Checks, times and prints one candidate kernel; keeps the fastest correct one.
      auto try_kernel = [&](const std::string &tiling, const std::function<void(const hidet::Tensor &)> &mm) {
        auto poison = hidet::full({s.m, s.n}, std::nan(""), dt, "cuda");
        mm(poison);
        auto chk = check_half(s.m, s.n, s.k, a, b, poison, cref.defined() ? &cref : nullptr, rng);
        double ms = chk.ok ? time_ms([&] { mm(c); }) : 1e30;
        std::printf("  %-4s %5dx%5dx%5d %-55s %s %8.3f ms %7.2f TFLOP/s (vs cuBLAS %.2g, sample %.2g)\n", dname, s.m,
                    s.n, s.k, tiling.c_str(), chk.ok ? "ok " : "BAD", chk.ok ? ms : 0.0,
                    chk.ok ? flop / ms * 1e-9 : 0.0, chk.rel_vs_cublas, chk.worst_sample);
        std::fflush(stdout);
        if (!chk.ok || ms < best.ms) {
          if (!chk.ok && best.chk.ok) return;
          best = {dname, s, tiling, ms, flop / ms * 1e-9, cublas_ms > 0 ? flop / cublas_ms * 1e-9 : 0, chk};
        }
      };
      for (auto &cfg : configs) {
        MatmulF16 mm(s.m, s.n, s.k, dt, cfg);
        try_kernel("mma.sync " + cfg.str(), [&](const hidet::Tensor &out) { mm(a, b, out); });
      }
      // The Hopper kernel (TMA + wgmma + warp specialization), on sm_90a GPUs.
      if (dev.arch() == "sm_90a") {
        std::vector<MatmulWgmmaConfig> wconfigs{
            hidet::ops::templates::matmul_wgmma_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
        auto wadd = [&](MatmulWgmmaConfig c) {
          for (auto &x : wconfigs)
            if (x.str() == c.str()) return;
          wconfigs.push_back(c);
        };
        wadd(MatmulWgmmaConfig{});
        wadd(MatmulWgmmaConfig{2, 128, 6});
        MatmulWgmmaConfig one_tile_per_block;
        one_tile_per_block.persistent = false;
        wadd(one_tile_per_block);
        if (sweep) {
          wadd(MatmulWgmmaConfig{2, 256, 3});
          wadd(MatmulWgmmaConfig{1, 256, 5});
          wadd(MatmulWgmmaConfig{1, 128, 6});
          wadd(MatmulWgmmaConfig{2, 192, 4});
        }
        for (auto &cfg : wconfigs) {
          try {
            MatmulWgmma mm(s.m, s.n, s.k, dt, cfg);
            try_kernel("wgmma " + cfg.str(), [&](const hidet::Tensor &out) { mm(a, b, out); });
          } catch (const hidet::Error &e) {
            std::printf("  %-4s %5dx%5dx%5d wgmma %s: %s\n", dname, s.m, s.n, s.k, cfg.str().c_str(), e.what());
          }
        }
      }
      if (!best.chk.ok) ++failures;
      rows.push_back(best);
    }
  }

  // f32 on the FMA units.
  for (auto &s : shapes) {
    double flop = 2.0 * s.m * s.n * s.k;
    hidet::manual_seed(rng());
    auto a = hidet::randn({s.m, s.k}, hidet::f32, "cuda");
    auto b = hidet::randn({s.k, s.n}, hidet::f32, "cuda");
    auto c = hidet::empty({s.m, s.n}, hidet::f32, "cuda");
    double cublas_ms = -1;
    if (cb.ok()) {
      auto cref = hidet::empty({s.m, s.n}, hidet::f32, "cuda");
      cublas_ms = time_ms([&] { cublas::sgemm_row_major(cb, s.m, s.n, s.k, a, b, cref); });
    }
    std::vector<MatmulF32Config> configs{hidet::ops::templates::matmul_f32_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
    if (sweep) {
      auto base = configs[0];
      auto v = base;
      v.block_k = 16;
      configs.push_back(v);
      v = base;
      v.min_blocks = 1;
      configs.push_back(v);
      for (int sk : {1, 2, 4})
        if (sk != base.split_k) {
          v = base;
          v.split_k = sk;
          configs.push_back(v);
        }
      // 64 x 64 tiles of 128 threads (8 x 4 accumulators each), for shapes with few 128 x 128 tiles
      MatmulF32Config small{2, 2, 2, 1, 4, 8, 4, 4, 8, 4, 1};
      for (int sk : {1, 2, 4, 8})
        for (int bk : {8, 16}) {
          v = small;
          v.split_k = sk, v.block_k = bk;
          if (s.k / sk >= 64) configs.push_back(v);
        }
    }
    Row best{"f32", s, "", 1e30, 0, 0, {}};
    for (auto &cfg : configs) {
      MatmulF32 mm(s.m, s.n, s.k, cfg);
      auto poison = hidet::full({s.m, s.n}, std::nan(""), hidet::f32, "cuda");
      mm(a, b, poison);
      auto chk = check(s.m, s.n, s.k, a, b, poison, cb, rng);
      double ms = chk.ok ? time_ms([&] { mm(a, b, c); }) : 1e30;
      if (sweep)
        std::printf("  %5dx%5dx%5d %-60s %s %8.3f ms %6.2f TFLOP/s\n", s.m, s.n, s.k, cfg.str().c_str(),
                    chk.ok ? "ok " : "BAD", chk.ok ? ms : 0.0, chk.ok ? flop / ms * 1e-9 : 0.0);
      if (!chk.ok || ms < best.ms) {
        if (!chk.ok && best.chk.ok) continue;
        best = {"f32", s, cfg.str(), ms, flop / ms * 1e-9, cublas_ms > 0 ? flop / cublas_ms * 1e-9 : 0, chk};
      }
    }
    if (!best.chk.ok) ++failures;
    rows.push_back(best);
    std::fflush(stdout);
  }

  std::printf("\nmatmul, hidet vs cuBLAS (f32: FMA kernel vs cuBLAS f32 without TF32; f16/bf16: best of the mma.sync and wgmma kernels vs "
              "cublasGemmEx, f32 accumulation), %s\n",
              dev.name.c_str());
  std::printf("%-6s %-11s %-17s %9s %9s %9s %7s  %-9s %s\n", "dtype", "kind", "m x n x k", "ms", "TFLOP/s",
              "cuBLAS", "ratio", "check", "tiling");
  for (auto &r : rows) {
    char ratio[32] = "n/a", cbs[32] = "n/a";
    if (r.cublas_tflops > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2f", r.tflops / r.cublas_tflops);
      std::snprintf(cbs, sizeof cbs, "%.2f", r.cublas_tflops);
    }
    std::string shape = hidet::str_cat(r.s.m, "x", r.s.n, "x", r.s.k);
    std::printf("%-6s %-11s %-17s %9.3f %9.2f %9s %7s  %-9s %s\n", r.dtype, r.s.kind, shape.c_str(),
                r.chk.ok ? r.ms : 0.0, r.chk.ok ? r.tflops : 0.0, cbs, ratio, r.chk.ok ? "ok" : "FAILED",
                r.tiling.c_str());
  }
  if (!cb.ok()) std::printf("cuBLAS could not be loaded: ratios are n/a; see benchmarks/bench_matmul_torch.py\n");
  return failures ? 1 : 0;
}
