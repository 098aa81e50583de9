// Benchmark: a model file served from a fresh C++ process (docs/deploying.md, "Performance").
// Prints one line of JSON with
//   init_ms    the CUDA driver and context (the process's first hidet call), before the load
//   load_ms    Model::load: file read and checked, modules loaded, weights uploaded, one
//              workspace made and its CUDA graphs captured
//   first_ms   the first run (inputs ready on the device; synchronized)
//   steady_ms  later runs: hidet::median_ms (CUDA events around back-to-back batches, the median
//              batch), the method of benchmarks/torch_timing.py for the Python path
//   single_ms  one synchronized run, the median of 20 (the first run's measure, at steady state)
//   threads    runs of four threads on four streams at once: outputs equal to a single-threaded
//              run's (max_rel_diff), their throughput (runs per second) and the workspaces made
// bench_deploy.py runs it for ResNet-50 and BERT-base and compares with the torch.compile path.
//
//   bench_deploy MODEL_FILE [NAME=VALUE ...]   (a value for each varying extent, e.g. batch=1
//   seq=128;
//                                               default 1)
#include <hidet/graph/model.hpp>
#include <hidet/runtime/timing.hpp>
#include <hidet/util/float16.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Inputs of the compiled shapes: floats in [-1, 1), integers in [0, 1000) (token ids).
std::vector<hidet::Tensor> make_inputs(const hidet::Model &model,
                                       const std::map<std::string, std::int64_t> &sizes,
                                       unsigned seed) {
  std::vector<hidet::Tensor> xs;
  for (const auto &in : model.inputs()) {
    std::vector<std::int64_t> shape = in.shape;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) shape[d] = sizes.count(in.dims[d]) ? sizes.at(in.dims[d]) : 1;
    hidet::Tensor x = hidet::empty(shape, in.dtype, "cuda");
    std::vector<unsigned char> bytes(x.nbytes());
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      unsigned r = (unsigned(i) * 2654435761u) ^ (seed * 40503u);
      double f = double(r % 2000) / 1000.0 - 1.0;
      auto *p = bytes.data() + std::size_t(i) * in.dtype.nbytes();
      if (in.dtype == hidet::dtypes::f16)
        *reinterpret_cast<std::uint16_t *>(p) = hidet::float_to_half_bits(float(f));
      else if (in.dtype == hidet::dtypes::f32)
        *reinterpret_cast<float *>(p) = float(f);
      else if (in.dtype == hidet::dtypes::i64)
        *reinterpret_cast<std::int64_t *>(p) = r % 1000;
      else if (in.dtype == hidet::dtypes::i32)
        *reinterpret_cast<std::int32_t *>(p) = std::int32_t(r % 1000);
      else
        *p = 1; // booleans (masks) and bytes
    }
    x.copy_from_host(bytes.data());
    xs.push_back(x);
  }
  return xs;
}

double max_rel_diff(const std::vector<hidet::Tensor> &a, const std::vector<hidet::Tensor> &b) {
  double worst = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    auto x = a[j].to_double_vector(), y = b[j].to_double_vector();
    double scale = 1e-6;
    for (double v : x)
      scale = std::max(scale, std::abs(v));
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::abs(x[i] - y[i]) / scale);
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_FILE [NAME=VALUE ...]\n", argv[0]);
    return 2;
  }
  std::map<std::string, std::int64_t> sizes;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "bench_deploy: '%s' is not NAME=VALUE\n", argv[i]);
      return 2;
    }
    sizes[a.substr(0, eq)] = std::stoll(a.substr(eq + 1));
  }
  try {
    auto t0 = Clock::now();
    bool emulated = hidet::runtime::cuda_emulated(); // loads the driver, makes the context current
    if (!emulated) hidet::ensure_some_context();
    double init_ms = ms_since(t0);

    t0 = Clock::now();
    hidet::Model model = hidet::Model::load(argv[1]);
    double load_ms = ms_since(t0);

    std::vector<hidet::Tensor> xs = make_inputs(model, sizes, 1);
    hidet::Stream stream = hidet::current_stream();
    stream.synchronize();
    t0 = Clock::now();
    std::vector<hidet::Tensor> ref = model.run(xs, stream);
    stream.synchronize();
    double first_ms = ms_since(t0);

    std::vector<double> singles;
    for (int i = 0; i < 20; ++i) {
      t0 = Clock::now();
      model.run(xs, stream);
      stream.synchronize();
      singles.push_back(ms_since(t0));
    }
    std::sort(singles.begin(), singles.end());
    double steady_ms = hidet::median_ms([&] { model.run(xs, stream); });

    // Four threads on four streams, each on its own inputs, against single-threaded runs.
    constexpr int threads = 4, runs = 25;
    std::vector<std::vector<hidet::Tensor>> ins, want(threads);
    for (int t = 0; t < threads; ++t) {
      ins.push_back(make_inputs(model, sizes, unsigned(t + 2)));
      want[std::size_t(t)] = model.run(ins.back(), stream);
    }
    stream.synchronize();
    std::vector<std::vector<hidet::Tensor>> got(threads);
    std::vector<std::string> errors(threads);
    t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          hidet::Stream s = hidet::Stream::create();
          for (int r = 0; r < runs; ++r)
            got[std::size_t(t)] = model.run(ins[std::size_t(t)], s);
          s.synchronize();
        } catch (const std::exception &e) {
          errors[std::size_t(t)] = e.what();
        }
      });
    for (auto &th : pool)
      th.join();
    double threads_ms = ms_since(t0);
    double diff = 0;
    std::string error;
    for (int t = 0; t < threads; ++t) {
      if (!errors[std::size_t(t)].empty())
        error = errors[std::size_t(t)];
      else
        diff = std::max(diff, max_rel_diff(got[std::size_t(t)], want[std::size_t(t)]));
    }
    std::printf(
        "{\"file\": \"%s\", \"target\": \"%s\", \"init_ms\": %.2f, \"load_ms\": %.2f, "
        "\"first_ms\": %.3f, "
        "\"steady_ms\": %.4f, \"single_ms\": %.4f, \"threads\": %d, \"thread_runs_per_s\": %.1f, "
        "\"max_rel_diff\": %.3g, \"workspaces\": %zu, \"thread_error\": \"%s\"}\n",
        argv[1], model.target().c_str(), init_ms, load_ms, first_ms, steady_ms,
        singles[singles.size() / 2], threads, threads * runs / (threads_ms / 1000.0), diff,
        model.num_workspaces(), error.c_str());
  } catch (const hidet::Error &e) {
    std::fprintf(stderr, "bench_deploy: %s\n", e.what());
    return 1;
  }
  return 0;
}
