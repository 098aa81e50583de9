// Benchmark: conv2d templates (include/hidet/ops/templates/conv2d.hpp) over every distinct
// convolution of ResNet-50 (224 x 224 input: the 7x7 stem and the 1x1 / 3x3 layers of the four
// stages, strides as in torchvision), batch 1 and 16, in three modes: f32 NCHW (FMA implicit
// GEMM), f16 NCHW (tensor cores, with the NCHW -> NHWC repack of x and the weight repack timed
// in) and f16 NHWC (tensor cores, no repack). Configs: the heuristic default (search space 0);
// then f16 NHWC tuned per layer at search space 1 (tuning::pick), and one layer tuned at search
// space 2 with the tuning time reported. HIDET_BENCH_TUNE_F32=<space> also tunes f32 NCHW at
// batch 16 per layer. A last table times ResNeXt-50 32x4d's grouped 3x3 layers (f16 NHWC): the
// default, the direct kernel, the tensor-core GEMM and the best of search space 1
// (`bench_conv2d --grouped` runs this table alone). `bench_conv2d --depthwise` runs only a table
// of depthwise layers (ConvNeXt's 7x7, MobileNet's and EfficientNet's 3x3 and 5x5, f16 NHWC, batch
// 1 and 16) on the direct kernel with one channel per thread, its default (4 channels read as one
// vector), 8 channels, and the best of search space 1, with the bytes moved over the default's
// time (not in the full run, which scripts/gpu-check times within its per-benchmark limit).
// `bench_conv2d --wide` runs only a table of the dense layers of ResNeXt-50 32x4d and Wide
// ResNet-50-2 at batch 16 (the default, mma.sync and wgmma forced, the best of search space 1);
// `--effnet` the same for EfficientNetV2-S's layers, with the best of search space 2 too.
// benchmarks/bench_conv2d_torch.py prints cuDNN's times on the same layers in the same table
// format. Each layer is checked on 64 sampled outputs against a double-precision host reference
// before it is timed. Times: CUDA events around batches of launches after warm-up, the median
// of 7 batches. "sum" is over the distinct layers, "net" weights each layer by its count in
// ResNet-50. Needs a GPU; on the emulator it says so and exits 0.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops.hpp>
#include <hidet/ops/templates/conv2d.hpp>
#include <hidet/runtime/timing.hpp>

namespace t = hidet::ops::templates;

struct Layer {
  const char *name;
  int c, h, o, k, s, p, count;
};

// Every distinct conv layer of ResNet-50 (in channels, input size, out channels, kernel, stride,
// padding, occurrences).
const std::vector<Layer> kLayers{
    {"stem 7x7 3-64 s2", 3, 224, 64, 7, 2, 3, 1},
    {"s1 1x1 64-64", 64, 56, 64, 1, 1, 0, 1},
    {"s1 3x3 64-64", 64, 56, 64, 3, 1, 1, 3},
    {"s1 1x1 64-256", 64, 56, 256, 1, 1, 0, 4},
    {"s1 1x1 256-64", 256, 56, 64, 1, 1, 0, 2},
    {"s2 1x1 256-128", 256, 56, 128, 1, 1, 0, 1},
    {"s2 3x3 128-128 s2", 128, 56, 128, 3, 2, 1, 1},
    {"s2 1x1 128-512", 128, 28, 512, 1, 1, 0, 4},
    {"s2 ds 1x1 256-512 s2", 256, 56, 512, 1, 2, 0, 1},
    {"s2 1x1 512-128", 512, 28, 128, 1, 1, 0, 3},
    {"s2 3x3 128-128", 128, 28, 128, 3, 1, 1, 3},
    {"s3 1x1 512-256", 512, 28, 256, 1, 1, 0, 1},
    {"s3 3x3 256-256 s2", 256, 28, 256, 3, 2, 1, 1},
    {"s3 1x1 256-1024", 256, 14, 1024, 1, 1, 0, 6},
    {"s3 ds 1x1 512-1024 s2", 512, 28, 1024, 1, 2, 0, 1},
    {"s3 1x1 1024-256", 1024, 14, 256, 1, 1, 0, 5},
    {"s3 3x3 256-256", 256, 14, 256, 3, 1, 1, 5},
    {"s4 1x1 1024-512", 1024, 14, 512, 1, 1, 0, 1},
    {"s4 3x3 512-512 s2", 512, 14, 512, 3, 2, 1, 1},
    {"s4 1x1 512-2048", 512, 7, 2048, 1, 1, 0, 3},
    {"s4 ds 1x1 1024-2048 s2", 1024, 14, 2048, 1, 2, 0, 1},
    {"s4 1x1 2048-512", 2048, 7, 512, 1, 1, 0, 2},
    {"s4 3x3 512-512", 512, 7, 512, 3, 1, 1, 2},
};

struct Mode {
  const char *name;
  hidet::DataType dt;
  t::Conv2dLayout layout;
  enum Kernel {
    Default,
    Mma,
    Wgmma
  } kernel = Default; ///< the last two: f16 NHWC forced to one kernel
};
// The last two columns show the two tensor-core kernels apart (the default picks between them on
// a Hopper GPU): mma.sync everywhere, and the wgmma kernel wherever it serves the layer.
const std::vector<Mode> kModes{{"f32 NCHW", hidet::f32, t::Conv2dLayout::NCHW},
                               {"f16 NCHW", hidet::f16, t::Conv2dLayout::NCHW},
                               {"f16 NHWC", hidet::f16, t::Conv2dLayout::NHWC},
                               {"NHWC mma", hidet::f16, t::Conv2dLayout::NHWC, Mode::Mma},
                               {"NHWC wgmma", hidet::f16, t::Conv2dLayout::NHWC, Mode::Wgmma}};

t::Conv2dShape shape_of(const Layer &l, int batch) {
  return t::Conv2dShape{batch, l.c, l.h, l.h, l.o, l.k, l.k, l.s, l.s, l.p, l.p, 1, 1, 1};
}

/// The problem's tensors on the device, plus host copies of x and w (NCHW order for the check).
struct Problem {
  hidet::Tensor x, w, b, y;
  std::vector<double> xh, wh, bh; // NCHW / OIHW
};

Problem make_problem(const t::Conv2dShape &s, const Mode &m, std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Problem p;
  auto fill = [&](std::size_t n) {
    std::vector<double> v(n);
    for (auto &e : v)
      e = std::round(u(rng) * 8) / 8; // exact in f16
    return v;
  };
  p.xh = fill(std::size_t(s.n) * s.c * s.h * s.w);
  p.wh = fill(std::size_t(s.o) * s.cg() * s.kh * s.kw);
  p.bh = fill(std::size_t(s.o));
  bool nhwc = m.layout == t::Conv2dLayout::NHWC;
  auto perm = [&](const std::vector<double> &v, std::int64_t a, std::int64_t b, std::int64_t c,
                  std::int64_t d) {
    if (!nhwc) return v;
    std::vector<double> r(v.size());
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < b; ++j)
        for (std::int64_t k = 0; k < c; ++k)
          for (std::int64_t l = 0; l < d; ++l)
            r[((i * c + k) * d + l) * b + j] = v[((i * b + j) * c + k) * d + l];
    return r;
  };
  std::vector<std::int64_t> xs = nhwc ? std::vector<std::int64_t>{s.n, s.h, s.w, s.c}
                                      : std::vector<std::int64_t>{s.n, s.c, s.h, s.w};
  std::vector<std::int64_t> ws = nhwc ? std::vector<std::int64_t>{s.o, s.kh, s.kw, s.cg()}
                                      : std::vector<std::int64_t>{s.o, s.cg(), s.kh, s.kw};
  std::vector<std::int64_t> ys = nhwc ? std::vector<std::int64_t>{s.n, s.oh(), s.ow(), s.o}
                                      : std::vector<std::int64_t>{s.n, s.o, s.oh(), s.ow()};
  p.x = hidet::asarray(perm(p.xh, s.n, s.c, s.h, s.w), xs, m.dt).to("cuda");
  p.w = hidet::asarray(perm(p.wh, s.o, s.cg(), s.kh, s.kw), ws, m.dt).to("cuda");
  p.b = hidet::asarray(p.bh, {s.o}, m.dt).to("cuda");
  p.y = hidet::empty(ys, m.dt, "cuda");
  return p;
}

/// Largest relative error over 64 sampled outputs (against a double host reference).
double check(const t::Conv2dShape &s, const Mode &m, const Problem &p, std::mt19937_64 &rng) {
  auto y = p.y.to_double_vector();
  bool nhwc = m.layout == t::Conv2dLayout::NHWC;
  double worst = 0;
  for (int smp = 0; smp < 64; ++smp) {
    int n = int(rng() % s.n), o = int(rng() % s.o), i = int(rng() % s.oh()),
        j = int(rng() % s.ow());
    double want = p.bh[o], mag = std::abs(p.bh[o]);
    const int c0 = o / s.og() * s.cg(); // the group's first input channel
    for (int c = 0; c < s.cg(); ++c)
      for (int a = 0; a < s.kh; ++a)
        for (int b = 0; b < s.kw; ++b) {
          int h = i * s.sh - s.ph + a, w = j * s.sw - s.pw + b;
          if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
          double v = p.xh[((std::size_t(n) * s.c + c0 + c) * s.h + h) * s.w + w] *
                     p.wh[((std::size_t(o) * s.cg() + c) * s.kh + a) * s.kw + b];
          want += v, mag += std::abs(v);
        }
    std::size_t idx = nhwc ? ((std::size_t(n) * s.oh() + i) * s.ow() + j) * s.o + o
                           : ((std::size_t(n) * s.o + o) * s.oh() + i) * s.ow() + j;
    worst = std::max(worst, std::abs(y[idx] - want) / (1 + mag));
  }
  return worst;
}

double time_ms(const std::function<void()> &f) { return hidet::median_ms(f, 7); }

int main(int argc, char **argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  const bool depthwise_only = only == "--depthwise", wide_only = only == "--wide",
             effnet_only = only == "--effnet";
  if (hidet::runtime::cuda_emulated()) {
    std::printf("bench_conv2d: no GPU (the emulator serves 'cuda'); nothing to time\n");
    return 0;
  }
  const auto &dev = hidet::runtime::device_info(0);
  const bool hopper = t::wgmma_available(); // the wgmma kernel joins the defaults and the spaces
  std::printf(
      "bench_conv2d on %s (%d SMs): hidet conv2d templates, heuristic configs (search space 0)\n",
      dev.name.c_str(), dev.sm_count);
  std::mt19937_64 rng(1);
  if (only.empty()) {
    // Build every runner first, on a thread pool (NVRTC compiles in parallel).
    struct Job {
      int batch;
      std::size_t layer, mode;
      t::Conv2dShape s;
      t::Conv2dConfig cfg;
      std::shared_ptr<t::Conv2d> runner;
      std::string error;
    };
    std::vector<Job> jobs;
    for (int batch : {1, 16})
      for (std::size_t l = 0; l < kLayers.size(); ++l)
        for (std::size_t m = 0; m < kModes.size(); ++m) {
          auto s = shape_of(kLayers[l], batch);
          auto cfg = t::conv2d_heuristic_config(s, kModes[m].dt, dev.sm_count,
                                                hopper && kModes[m].kernel != Mode::Mma);
          if (kModes[m].kernel == Mode::Wgmma && hopper &&
              t::conv2d_wgmma_supports(s, kModes[m].dt))
            cfg.kind = t::Conv2dConfig::Kind::Wgmma,
            cfg.wgmma = t::conv2d_wgmma_heuristic_config(s, dev.sm_count);
          jobs.push_back({batch, l, m, s, cfg, nullptr, ""});
        }
    auto t0 = std::chrono::steady_clock::now();
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      hidet::ensure_context(0);
      for (std::size_t i; (i = next++) < jobs.size();) {
        auto &j = jobs[i];
        try {
          j.runner = std::make_shared<t::Conv2d>(j.s, kModes[j.mode].dt, kModes[j.mode].layout,
                                                 true, j.cfg);
        } catch (const std::exception &e) {
          j.error = e.what();
        }
      }
    };
    std::vector<std::thread> pool;
    unsigned workers = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned w = 1; w < workers; ++w)
      pool.emplace_back(work);
    work();
    for (auto &th : pool)
      th.join();
    std::printf("built %zu runners in %.1f s\n", jobs.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

    for (int batch : {1, 16}) {
      std::printf("\nbatch %d (ms per conv, bias fused)\n%-26s", batch, "layer");
      for (auto &m : kModes)
        std::printf(" %10s", m.name);
      std::printf("   config (f16 NHWC)\n");
      std::vector<double> sum(kModes.size()), net(kModes.size());
      for (std::size_t l = 0; l < kLayers.size(); ++l) {
        std::printf("%-26s", kLayers[l].name);
        std::string cfg;
        for (std::size_t m = 0; m < kModes.size(); ++m) {
          auto &j = *std::find_if(jobs.begin(), jobs.end(), [&](const Job &j) {
            return j.batch == batch && j.layer == l && j.mode == m;
          });
          if (!j.runner) {
            std::printf(" %10s", "ERROR");
            std::fprintf(stderr, "%s %s: %s\n", kLayers[l].name, kModes[m].name, j.error.c_str());
            continue;
          }
          auto p = make_problem(j.s, kModes[m], rng);
          (*j.runner)(p.x, p.w, &p.b, p.y);
          double err = check(j.s, kModes[m], p, rng);
          double tol = kModes[m].dt == hidet::f32 ? 1e-5 : 1e-2;
          if (!(err <= tol))
            std::fprintf(stderr, "%s %s batch %d: WRONG (max rel err %.3g)\n", kLayers[l].name,
                         kModes[m].name, batch, err);
          double ms = time_ms([&] { (*j.runner)(p.x, p.w, &p.b, p.y); });
          sum[m] += ms, net[m] += ms * kLayers[l].count;
          std::printf(" %10.4f", ms);
          if (m == 2) cfg = j.cfg.str();
        }
        std::printf("   %s\n", cfg.c_str());
      }
      std::printf("%-26s", "sum (distinct layers)");
      for (double v : sum)
        std::printf(" %10.4f", v);
      std::printf("\n%-26s", "net (x occurrences)");
      for (double v : net)
        std::printf(" %10.4f", v);
      std::printf("\n");
    }

  } // the full run

  // f16 NHWC tuned per layer at search space 1.
  auto tune = [&](const t::Conv2dShape &s, const Mode &m, const Problem &p, int space,
                  std::size_t &n) {
    auto cands = t::conv2d_candidates(s, m.dt, space, dev.sm_count, hopper);
    std::vector<hidet::ops::tuning::Candidate> tc;
    for (auto &c : cands)
      tc.push_back({c.str(), [=]() -> hidet::ops::tuning::Launch {
                      auto r = std::make_shared<t::Conv2d>(s, m.dt, m.layout, true, c);
                      return [=] { (*r)(p.x, p.w, &p.b, p.y); };
                    }});
    n = cands.size();
    std::string key = hidet::ops::tuning::make_key(
        "conv2d bench", hidet::str_cat(s.str(), " ", m.name, " bias space ", space));
    return cands[hidet::ops::tuning::pick("conv2d", key, tc)];
  };
  // One configuration of a table's row: runs it, checks 64 sampled outputs against the host
  // reference (a WRONG line on stderr), and returns its time.
  auto checked_ms = [&](const char *name, const t::Conv2dShape &s, const Mode &m, const Problem &p,
                        const t::Conv2dConfig &cfg) {
    t::Conv2d r(s, m.dt, m.layout, true, cfg);
    r(p.x, p.w, &p.b, p.y);
    double err = check(s, m, p, rng);
    if (!(err <= (m.dt == hidet::f32 ? 1e-5 : 1e-2)))
      std::fprintf(stderr, "%s %s batch %d: WRONG (max rel err %.3g)\n", name, cfg.str().c_str(),
                   int(s.n), err);
    return time_ms([&] { r(p.x, p.w, &p.b, p.y); });
  };
  // ResNeXt-50 32x4d's grouped 3x3 convolutions (32 groups of 4 to 32 channels), f16 NHWC: the
  // default, the direct kernel, the tensor-core GEMM (the first GEMM candidate), and the best of
  // search space 1.
  if (!depthwise_only && !wide_only && !effnet_only) {
    struct Grouped {
      const char *name;
      int c, h, s, count;
    };
    const std::vector<Grouped> grouped{
        {"s1 3x3 128 g32", 128, 56, 1, 3}, {"s2 3x3 256 g32 s2", 256, 56, 2, 1},
        {"s2 3x3 256 g32", 256, 28, 1, 3}, {"s3 3x3 512 g32 s2", 512, 28, 2, 1},
        {"s3 3x3 512 g32", 512, 14, 1, 5}, {"s4 3x3 1024 g32 s2", 1024, 14, 2, 1},
        {"s4 3x3 1024 g32", 1024, 7, 1, 2}};
    const Mode &m = kModes[2];
    for (int batch : {1, 16}) {
      std::printf("\nResNeXt-50 32x4d grouped layers, batch %d, f16 NHWC (ms per conv, bias "
                  "fused)\n%-22s %10s %10s %10s "
                  "%10s   default / tuned config\n",
                  batch, "layer", "default", "direct", "gemm", "tuned s1");
      double net[4] = {0, 0, 0, 0};
      for (const Grouped &g : grouped) {
        t::Conv2dShape s{batch, g.c, g.h, g.h, g.c, 3, 3, g.s, g.s, 1, 1, 1, 1, 32};
        auto p = make_problem(s, m, rng);
        auto cands = t::conv2d_candidates(s, m.dt, 1, dev.sm_count, hopper);
        t::Conv2dConfig direct;
        direct.kind = t::Conv2dConfig::Kind::Depthwise;
        auto gemm = std::find_if(cands.begin(), cands.end(), [](const t::Conv2dConfig &c) {
          return c.kind != t::Conv2dConfig::Kind::Depthwise;
        });
        std::size_t n = 0;
        std::vector<t::Conv2dConfig> cfgs{cands[0], direct, gemm != cands.end() ? *gemm : cands[0],
                                          tune(s, m, p, 1, n)};
        std::printf("%-22s", g.name);
        for (std::size_t i = 0; i < cfgs.size(); ++i) {
          double ms = checked_ms(g.name, s, m, p, cfgs[i]);
          net[i] += ms * g.count;
          std::printf(" %10.4f", ms);
        }
        std::printf("   %s / %s\n", cfgs[0].str().c_str(), cfgs[3].str().c_str());
      }
      std::printf("%-22s %10.4f %10.4f %10.4f %10.4f\n", "net (x occurrences)", net[0], net[1],
                  net[2], net[3]);
    }
  }

  // Tables of one model family's dense layers at batch 16, f16 NHWC, each layer timed on the
  // default, on each tensor-core kernel forced, and on the best of search spaces 1 and (`effnet`)
  // 2. `--wide`: ResNeXt-50 32x4d's and Wide ResNet-50-2's (the 1x1 layers both models share, and
  // the wide model's 3x3 ones); `--effnet`: EfficientNetV2-S's, whose first stages have 24 to 64
  // channels (C not a multiple of 64: no wgmma), its stem NCHW as in the model.
  // name, in channels, size, out channels, kernel, stride, padding, count: in ResNeXt-50 (the
  // 1x1 layers) or in WRN-50-2 (the 3x3 ones, which ResNeXt runs grouped); in EfficientNetV2-S
  const std::vector<Layer> wide{{"s1 1x1 64-128", 64, 56, 128, 1, 1, 0, 1},
                                {"s1 1x1 256-128", 256, 56, 128, 1, 1, 0, 2},
                                {"s1 1x1 128-256", 128, 56, 256, 1, 1, 0, 3},
                                {"s1 ds 1x1 64-256", 64, 56, 256, 1, 1, 0, 1},
                                {"s2 1x1 256-256", 256, 56, 256, 1, 1, 0, 1},
                                {"s2 1x1 512-256", 512, 28, 256, 1, 1, 0, 3},
                                {"s2 1x1 256-512", 256, 28, 512, 1, 1, 0, 4},
                                {"s2 ds 1x1 256-512 s2", 256, 56, 512, 1, 2, 0, 1},
                                {"s3 1x1 512-512", 512, 28, 512, 1, 1, 0, 1},
                                {"s3 1x1 1024-512", 1024, 14, 512, 1, 1, 0, 5},
                                {"s3 1x1 512-1024", 512, 14, 1024, 1, 1, 0, 6},
                                {"s3 ds 1x1 512-1024 s2", 512, 28, 1024, 1, 2, 0, 1},
                                {"s4 1x1 1024-1024", 1024, 14, 1024, 1, 1, 0, 1},
                                {"s4 1x1 2048-1024", 2048, 7, 1024, 1, 1, 0, 2},
                                {"s4 1x1 1024-2048", 1024, 7, 2048, 1, 1, 0, 3},
                                {"s4 ds 1x1 1024-2048 s2", 1024, 14, 2048, 1, 2, 0, 1},
                                {"wrn s1 3x3 128", 128, 56, 128, 3, 1, 1, 3},
                                {"wrn s2 3x3 256 s2", 256, 56, 256, 3, 2, 1, 1},
                                {"wrn s2 3x3 256", 256, 28, 256, 3, 1, 1, 3},
                                {"wrn s3 3x3 512 s2", 512, 28, 512, 3, 2, 1, 1},
                                {"wrn s3 3x3 512", 512, 14, 512, 3, 1, 1, 5},
                                {"wrn s4 3x3 1024 s2", 1024, 14, 1024, 3, 2, 1, 1},
                                {"wrn s4 3x3 1024", 1024, 7, 1024, 3, 1, 1, 2}};
  const std::vector<Layer> effnet{{"stem 3x3 3-24 s2 (NCHW)", 3, 224, 24, 3, 2, 1, 1},
                                  {"s1 3x3 24-24", 24, 112, 24, 3, 1, 1, 2},
                                  {"s2 3x3 24-96 s2", 24, 112, 96, 3, 2, 1, 1},
                                  {"s2 1x1 96-48", 96, 56, 48, 1, 1, 0, 1},
                                  {"s2 3x3 48-192", 48, 56, 192, 3, 1, 1, 3},
                                  {"s2 1x1 192-48", 192, 56, 48, 1, 1, 0, 3},
                                  {"s3 3x3 48-192 s2", 48, 56, 192, 3, 2, 1, 1},
                                  {"s3 1x1 192-64", 192, 28, 64, 1, 1, 0, 1},
                                  {"s3 3x3 64-256", 64, 28, 256, 3, 1, 1, 3},
                                  {"s3 1x1 256-64", 256, 28, 64, 1, 1, 0, 3},
                                  {"s4 1x1 64-256", 64, 28, 256, 1, 1, 0, 1},
                                  {"s4 1x1 256-128", 256, 14, 128, 1, 1, 0, 1},
                                  {"s4 1x1 128-512", 128, 14, 512, 1, 1, 0, 5},
                                  {"s4 1x1 512-128", 512, 14, 128, 1, 1, 0, 5},
                                  {"s5 1x1 128-768", 128, 14, 768, 1, 1, 0, 1},
                                  {"s5 1x1 768-160", 768, 14, 160, 1, 1, 0, 1},
                                  {"s5 1x1 160-960", 160, 14, 960, 1, 1, 0, 9},
                                  {"s5 1x1 960-160", 960, 14, 160, 1, 1, 0, 8},
                                  {"s6 1x1 960-256", 960, 7, 256, 1, 1, 0, 1},
                                  {"s6 1x1 256-1536", 256, 7, 1536, 1, 1, 0, 14},
                                  {"s6 1x1 1536-256", 1536, 7, 256, 1, 1, 0, 14},
                                  {"head 1x1 256-1280", 256, 7, 1280, 1, 1, 0, 1}};
  if (wide_only || effnet_only) {
    const bool eff = effnet_only;
    const std::vector<Layer> &layers = eff ? effnet : wide;
    const int batch = 16;
    std::printf("\n%s dense layers, batch %d, f16 NHWC (ms per conv, bias fused)\n%-24s %10s %10s "
                "%10s %10s",
                eff ? "EfficientNetV2-S" : "ResNeXt-50 / WRN-50-2", batch, "layer", "default",
                "mma", "wgmma", "tuned s1");
    if (eff) std::printf(" %10s", "tuned s2");
    std::printf("   default / best tuned config\n");
    std::vector<double> net(eff ? 5 : 4);
    for (const Layer &l : layers) {
      const Mode &m = kModes[l.c == 3 ? 1 : 2]; // the stem NCHW, as the model runs it
      auto s = shape_of(l, batch);
      auto p = make_problem(s, m, rng);
      auto deflt = t::conv2d_heuristic_config(s, m.dt, dev.sm_count, hopper);
      auto mma = t::conv2d_heuristic_config(s, m.dt, dev.sm_count, false);
      auto wg = deflt;
      if (hopper && t::conv2d_wgmma_supports(s, m.dt))
        wg.kind = t::Conv2dConfig::Kind::Wgmma,
        wg.wgmma = t::conv2d_wgmma_heuristic_config(s, dev.sm_count);
      else
        wg = mma;
      std::size_t n = 0;
      std::vector<t::Conv2dConfig> cfgs{deflt, mma, wg, tune(s, m, p, 1, n)};
      if (eff) cfgs.push_back(tune(s, m, p, 2, n));
      std::printf("%-24s", l.name);
      for (std::size_t i = 0; i < cfgs.size(); ++i) {
        double ms = checked_ms(l.name, s, m, p, cfgs[i]);
        net[i] += ms * l.count;
        std::printf(" %10.4f", ms);
      }
      std::printf("   %s / %s\n", cfgs[0].str().c_str(), cfgs.back().str().c_str());
    }
    std::printf("%-24s", "net (x count)");
    for (double v : net)
      std::printf(" %10.4f", v);
    std::printf("\n");
    return 0;
  }

  // Depthwise layers, f16 NHWC: one channel per thread, the default, 8 channels, tuned at space 1.
  if (depthwise_only) {
    struct Depthwise {
      const char *name;
      int c, h, k, s;
    };
    const std::vector<Depthwise> layers{
        {"convnext 7x7 96 @56", 96, 56, 7, 1},    {"convnext 7x7 192 @28", 192, 28, 7, 1},
        {"convnext 7x7 384 @14", 384, 14, 7, 1},  {"convnext 7x7 768 @7", 768, 7, 7, 1},
        {"mbv2 3x3 144 @56", 144, 56, 3, 1},      {"mbv2 3x3 144 @56 s2", 144, 56, 3, 2},
        {"mbv2 3x3 576 @14", 576, 14, 3, 1},      {"effnet 5x5 240 @28 s2", 240, 28, 5, 2},
        {"effnet 5x5 672 @14", 672, 14, 5, 1},    {"mbv3 5x5 960 @7", 960, 7, 5, 1}};
    const Mode &m = kModes[2];
    for (int batch : {1, 16}) {
      std::printf("\ndepthwise layers, batch %d, f16 NHWC (ms per conv, bias fused; GB/s: x and y "
                  "bytes over the default's time)\n%-24s %10s %10s %10s %10s %8s   default / tuned config\n",
                  batch, "layer", "1 channel", "default", "8 channels", "tuned s1", "GB/s");
      double total[4] = {0, 0, 0, 0};
      for (const Depthwise &d : layers) {
        t::Conv2dShape s{batch, d.c, d.h, d.h, d.c, d.k, d.k, d.s, d.s, d.k / 2, d.k / 2, 1, 1, d.c};
        auto p = make_problem(s, m, rng);
        t::Conv2dConfig scalar, v8;
        scalar.kind = v8.kind = t::Conv2dConfig::Kind::Depthwise;
        scalar.dw_vector = 1, v8.dw_vector = 8;
        std::size_t n = 0;
        std::vector<t::Conv2dConfig> cfgs{scalar, t::conv2d_heuristic_config(s, m.dt, dev.sm_count, hopper), v8,
                                          tune(s, m, p, 1, n)};
        std::printf("%-24s", d.name);
        double ms_default = 0;
        for (std::size_t i = 0; i < cfgs.size(); ++i) {
          double ms = checked_ms(d.name, s, m, p, cfgs[i]);
          if (i == 1) ms_default = ms;
          total[i] += ms;
          std::printf(" %10.4f", ms);
        }
        const double bytes = 2.0 * batch * d.c * (double(d.h) * d.h + double(s.oh()) * s.ow());
        std::printf(" %8.0f   %s / %s\n", bytes / ms_default / 1e6, cfgs[1].str().c_str(), cfgs[3].str().c_str());
      }
      std::printf("%-24s %10.4f %10.4f %10.4f %10.4f\n", "sum", total[0], total[1], total[2], total[3]);
    }
  }

  if (!only.empty()) return 0;
  auto t2 = std::chrono::steady_clock::now();
  // Every layer tuned in mode `mi` at search space `space`, one table per batch size.
  auto tuned_table = [&](std::size_t mi, int space, const std::vector<int> &batches) {
    const Mode &m = kModes[mi];
    for (int batch : batches) {
      std::printf("\nbatch %d, %s tuned at search space %d (ms per conv, bias fused)\n", batch,
                  m.name, space);
      double sum = 0, net = 0;
      for (const Layer &l : kLayers) {
        auto s = shape_of(l, batch);
        auto p = make_problem(s, m, rng);
        std::size_t n = 0;
        auto cfg = tune(s, m, p, space, n);
        double ms = checked_ms(l.name, s, m, p, cfg);
        sum += ms, net += ms * l.count;
        std::printf("%-26s %10.4f   %s (of %zu)\n", l.name, ms, cfg.str().c_str(), n);
      }
      std::printf("%-26s %10.4f\n%-26s %10.4f\n", "sum (distinct layers)", sum,
                  "net (x occurrences)", net);
    }
  };
  tuned_table(2, 1, {1, 16}); // f16 NHWC at space 1
  // HIDET_BENCH_TUNE_F32=<space>: f32 NCHW at batch 16 tuned too (data for the FMA heuristic).
  if (const char *f32_space = std::getenv("HIDET_BENCH_TUNE_F32"))
    tuned_table(0, std::atoi(f32_space), {16});
  std::printf("(tuning all of them took %.1f s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count());

  // Tuning at search space 2 for one layer: the time it takes and what it finds.
  const Layer &l = kLayers[16]; // s3 3x3 256-256
  auto s = shape_of(l, 16);
  const Mode &m = kModes[2];
  auto p = make_problem(s, m, rng);
  auto t1 = std::chrono::steady_clock::now();
  std::size_t n = 0;
  auto best = tune(s, m, p, 2, n);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  t::Conv2d r(s, m.dt, m.layout, true, best);
  double ms = time_ms([&] { r(p.x, p.w, &p.b, p.y); });
  std::printf("\ntuning %s batch 16 f16 NHWC at search space 2: %zu candidates in %.1f s (0 s when "
              "the disk record "
              "exists); picked %s: %.4f ms\n",
              l.name, n, secs, best.str().c_str(), ms);
  return 0;
}
