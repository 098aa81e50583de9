// Step 2 of the deployment example, in C++: serve a model file that export_model.py wrote, with
// libhidet alone (no Python, no PyTorch, no NVRTC): load it, run it on one image, print the
// top-5 classes and the load and run times.
//
//   ./classify model.hidet [input.bin]   # input: raw values of the model's input dtype, NCHW
//                                        # (default: a synthetic image)
#include <hidet/graph/model.hpp>
#include <hidet/util/float16.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <vector>

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// The input image: the file's bytes, or a synthetic image of the input's dtype (f32 or f16).
std::vector<char> image(const char *path, const hidet::Tensor &x) {
  std::vector<char> bytes(x.nbytes());
  if (path) {
    std::ifstream f(path, std::ios::binary);
    if (!f.read(bytes.data(), std::streamsize(bytes.size())) || f.peek() != EOF)
      throw hidet::ValueError(hidet::str_cat("'", path, "' does not hold ", bytes.size(),
                                             " bytes (", x.numel(), " values of ", x.dtype().name(),
                                             ")"));
    return bytes;
  }
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    float v = std::sin(0.01f * float(i));
    if (x.dtype() == hidet::dtypes::f16)
      reinterpret_cast<std::uint16_t *>(bytes.data())[i] = hidet::float_to_half_bits(v);
    else if (x.dtype() == hidet::dtypes::f32)
      reinterpret_cast<float *>(bytes.data())[i] = v;
    else
      throw hidet::ValueError("the synthetic image is float32 or float16: give an input file");
  }
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s MODEL_FILE [INPUT_FILE]\n", argv[0]);
    return 2;
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    hidet::Model model = hidet::Model::load(argv[1]);
    double load_ms = ms_since(t0);
    const hidet::ModelTensorInfo &in = model.inputs().at(0);
    std::vector<std::int64_t> shape = in.shape;
    for (auto &d : shape)
      d = d < 0 ? 1 : d; // a batch of one
    hidet::Tensor x = hidet::empty(shape, in.dtype, "cuda");
    std::vector<char> bytes = image(argc > 2 ? argv[2] : nullptr, x);
    x.copy_from_host(bytes.data());

    t0 = std::chrono::steady_clock::now();
    std::vector<hidet::Tensor> ys = model.run({x});
    std::vector<double> logits = ys.at(0).to_double_vector(); // waits for the run
    double run_ms = ms_since(t0);

    std::size_t classes = std::size_t(ys[0].shape().back());
    logits.resize(classes); // the first image's row
    double top = *std::max_element(logits.begin(), logits.end()), sum = 0;
    std::vector<double> probs(classes);
    for (std::size_t c = 0; c < classes; ++c)
      sum += probs[c] = std::exp(logits[c] - top);
    std::vector<std::size_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::size_t k = std::min<std::size_t>(5, classes);
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                      [&](std::size_t a, std::size_t b) { return probs[a] > probs[b]; });
    std::printf("%s (%s), input %s: top-%zu classes\n", argv[1], model.target().c_str(),
                in.str().c_str(), k);
    for (std::size_t i = 0; i < k; ++i)
      std::printf("  class %zu: %.4f\n", order[i], probs[order[i]] / sum);
    std::printf("load %.1f ms, first run %.1f ms\n", load_ms, run_ms);
  } catch (const hidet::Error &e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 1;
  }
  return 0;
}
