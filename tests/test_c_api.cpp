// The C ABI (include/hidet/c_api.h): a model file saved from C++ is loaded, queried (names,
// dtypes, symbolic shapes, output shapes per input shape) and run on device pointers from
// hidet_device_malloc against the eager operators; NULL pointers, indices out of range, wrong
// counts, dtypes and shapes, missing, truncated and corrupt files each give their error code and a
// message, and the model stays usable.
#include "ops/ops_test_util.hpp"

#include <filesystem>
#include <fstream>

#include "hidet/c_api.h"
#include "hidet/graph.hpp"
#include "hidet/version.hpp"

using namespace ops_test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / str_cat("hidet-c-api-", ::getpid(), "-", g_rng());
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string &name) const { return (path / name).string(); }
};

struct Net {
  Tensor w = make({16, 6}, dtypes::f32, -0.5, 0.5), bias = make({6}, dtypes::f32);
  Tensor operator()(const Tensor &x) const { return o::softmax(o::matmul(x, w) + bias, -1); }
};

/// Checks the status and that the last error mentions every text.
void expect_status(hidet_status got, hidet_status want, std::initializer_list<std::string> texts) {
  std::string msg = hidet_last_error();
  INFO("last error: " << msg);
  CHECK(got == want);
  for (const auto &t : texts)
    CHECK(msg.find(t) != std::string::npos);
}

/// Device memory holding `t`'s values, freed at the end.
struct DeviceCopy {
  void *ptr = nullptr;
  explicit DeviceCopy(std::size_t nbytes, const void *host = nullptr) {
    REQUIRE(hidet_device_malloc(nbytes, &ptr) == HIDET_OK);
    if (host) REQUIRE(hidet_memcpy_to_device(ptr, host, nbytes) == HIDET_OK);
  }
  ~DeviceCopy() { hidet_device_free(ptr); }
};

} // namespace

TEST_CASE("the C ABI loads, describes and runs a model on device pointers") {
  TempDir dir;
  Net net;
  Tensor x = symbol({"batch", 16}, dtypes::f32, "cuda", "x");
  FlowGraph g = trace_from(net(x));
  std::vector<graph::CompiledGraph> graphs;
  for (int n : {2, 4})
    graphs.emplace_back(graph::optimize(g.specialize({{"batch", n}})));
  save_model(dir.file("net.hidet"), graphs);

  hidet_model *model = nullptr;
  REQUIRE(hidet_model_load(dir.file("net.hidet").c_str(), &model) == HIDET_OK);
  CHECK(std::string(hidet_version()) == HIDET_VERSION_STRING);
  const char *target = nullptr;
  REQUIRE(hidet_model_target(model, &target) == HIDET_OK);
  CHECK(std::string(target) ==
        (runtime::cuda_emulated() ? "emulator" : runtime::device_info(0).arch()));
  std::size_t n_in = 0, n_out = 0;
  REQUIRE(hidet_model_num_inputs(model, &n_in) == HIDET_OK);
  REQUIRE(hidet_model_num_outputs(model, &n_out) == HIDET_OK);
  CHECK(n_in == 1);
  CHECK(n_out == 1);
  hidet_tensor_info info{};
  REQUIRE(hidet_model_input_info(model, 0, &info) == HIDET_OK);
  CHECK(std::string(info.name) == "x");
  CHECK(info.dtype == HIDET_FLOAT32);
  REQUIRE(info.ndim == 2);
  CHECK(info.shape[0] == -1);
  CHECK(info.shape[1] == 16);
  CHECK(std::string(info.dims[0]) == "x_dim0"); // graphs of constant shapes: named after the input
  CHECK(std::string(info.dims[1]).empty());
  REQUIRE(hidet_model_output_info(model, 0, &info) == HIDET_OK);
  CHECK(std::string(info.name) == "output0");
  CHECK(info.ndim == 2);

  for (std::int64_t n : {4, 2}) {
    Tensor in = make({n, 16}, dtypes::f32);
    std::vector<float> host = in.to_vector<float>();
    DeviceCopy xin(host.size() * sizeof(float), host.data());
    std::int64_t in_shape[2] = {n, 16}, out_shape[2] = {0, 0};
    hidet_tensor xt{xin.ptr, HIDET_FLOAT32, 2, in_shape};
    hidet_tensor shape_only{nullptr, HIDET_FLOAT32, 2, in_shape};
    REQUIRE(hidet_model_output_shape(model, &shape_only, 1, 0, out_shape) == HIDET_OK);
    CHECK(out_shape[0] == n);
    CHECK(out_shape[1] == 6);
    DeviceCopy yout(std::size_t(n) * 6 * sizeof(float));
    hidet_tensor yt{yout.ptr, HIDET_FLOAT32, 2, out_shape};
    REQUIRE(hidet_model_run(model, &xt, 1, &yt, 1, nullptr) == HIDET_OK);
    REQUIRE(hidet_stream_synchronize(nullptr) == HIDET_OK);
    std::vector<float> got(std::size_t(n) * 6);
    REQUIRE(hidet_memcpy_to_host(got.data(), yout.ptr, got.size() * sizeof(float)) == HIDET_OK);
    Tensor want = net(in);
    expect_same(asarray(got, {n, 6}, "cuda"), want, 4);
  }
  hidet_model_free(model);
}

TEST_CASE("the C ABI reports bad arguments and bad files with a code and a message") {
  TempDir dir;
  Net net;
  Tensor a = make({3, 16}, dtypes::f32);
  graph::CompiledGraph cg(graph::optimize(trace_from(net(symbol_like(a, "x")))));
  cg.save(dir.file("net.hidet"));

  hidet_model *model = nullptr;
  expect_status(hidet_model_load(nullptr, &model), HIDET_ERROR_INVALID_ARGUMENT,
                {"hidet_model_load", "`path` is NULL"});
  expect_status(hidet_model_load(dir.file("net.hidet").c_str(), nullptr),
                HIDET_ERROR_INVALID_ARGUMENT, {"`model` is NULL"});
  expect_status(hidet_model_load(dir.file("missing.hidet").c_str(), &model), HIDET_ERROR_BAD_FILE,
                {"cannot read", "missing.hidet"});
  CHECK(model == nullptr);
  std::ifstream f(dir.file("net.hidet"), std::ios::binary);
  std::string good{std::istreambuf_iterator<char>(f), {}};
  {
    std::ofstream s(dir.file("short.hidet"), std::ios::binary);
    s << good.substr(0, good.size() - 10);
  }
  expect_status(hidet_model_load(dir.file("short.hidet").c_str(), &model), HIDET_ERROR_BAD_FILE,
                {"truncated"});
  std::string flipped = good;
  flipped[good.size() / 2] ^= 1;
  {
    std::ofstream s(dir.file("flipped.hidet"), std::ios::binary);
    s << flipped;
  }
  expect_status(hidet_model_load(dir.file("flipped.hidet").c_str(), &model), HIDET_ERROR_BAD_FILE,
                {"checksum"});

  REQUIRE(hidet_model_load(dir.file("net.hidet").c_str(), &model) == HIDET_OK);
  CHECK(std::string(hidet_last_error()).find("checksum") !=
        std::string::npos); // kept until the next failure
  std::size_t count = 0;
  hidet_tensor_info info{};
  expect_status(hidet_model_num_inputs(nullptr, &count), HIDET_ERROR_INVALID_ARGUMENT,
                {"`model` is NULL"});
  expect_status(hidet_model_num_outputs(model, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`count` is NULL"});
  expect_status(hidet_model_input_info(model, 1, &info), HIDET_ERROR_INVALID_ARGUMENT,
                {"input 1 of a model of 1 inputs"});
  expect_status(hidet_model_output_info(model, 0, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`info` is NULL"});

  Tensor in = make({3, 16}, dtypes::f32);
  std::vector<float> host = in.to_vector<float>();
  DeviceCopy xin(host.size() * sizeof(float), host.data());
  DeviceCopy yout(3 * 6 * sizeof(float));
  std::int64_t in_shape[2] = {3, 16}, out_shape[2] = {3, 6}, bad_shape[2] = {4, 16};
  hidet_tensor xt{xin.ptr, HIDET_FLOAT32, 2, in_shape}, yt{yout.ptr, HIDET_FLOAT32, 2, out_shape};
  expect_status(hidet_model_run(nullptr, &xt, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`model` is NULL"});
  expect_status(hidet_model_run(model, nullptr, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`inputs` is NULL"});
  expect_status(hidet_model_run(model, &xt, 0, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"takes 1 input", "got 0"});
  hidet_tensor null_data{nullptr, HIDET_FLOAT32, 2, in_shape};
  expect_status(hidet_model_run(model, &null_data, 1, &yt, 1, nullptr),
                HIDET_ERROR_INVALID_ARGUMENT, {"input 0", "null data pointer"});
  hidet_tensor f16{xin.ptr, HIDET_FLOAT16, 2, in_shape};
  expect_status(hidet_model_run(model, &f16, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"expected dtype float32, got float16"});
  hidet_tensor bad_code{xin.ptr, hidet_dtype(99), 2, in_shape};
  expect_status(hidet_model_run(model, &bad_code, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"unknown dtype code 99"});
  hidet_tensor wrong{xin.ptr, HIDET_FLOAT32, 2, bad_shape};
  expect_status(
      hidet_model_run(model, &wrong, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
      {"input 0 (x: float32[3, 16]): dimension 0 must be 3, got a tensor of shape (4, 16)"});
  hidet_tensor no_shape{xin.ptr, HIDET_FLOAT32, 2, nullptr};
  expect_status(hidet_model_run(model, &no_shape, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`shape` is NULL"});
  DeviceCopy small(64); // a 512-byte block of hidet's allocator: 112 bytes from offset 400
  hidet_tensor past_end{static_cast<char *>(small.ptr) + 400, HIDET_FLOAT32, 2, in_shape};
  expect_status(
      hidet_model_run(model, &past_end, 1, &yt, 1, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
      {"input 0", "the allocation at the data pointer holds 112 bytes from it", "needs 192"});
  hidet_tensor wrong_out{yout.ptr, HIDET_FLOAT32, 2, in_shape};
  expect_status(hidet_model_run(model, &xt, 1, &wrong_out, 1, nullptr),
                HIDET_ERROR_INVALID_ARGUMENT,
                {"output 0", "the output has shape (3, 6), got (3, 16)"});
  expect_status(hidet_model_output_shape(model, &xt, 1, 0, nullptr), HIDET_ERROR_INVALID_ARGUMENT,
                {"`shape` is NULL"});
  expect_status(hidet_device_free(reinterpret_cast<void *>(0x1234)), HIDET_ERROR_INVALID_ARGUMENT,
                {"did not come from hidet_device_malloc"});
  // Still usable.
  REQUIRE(hidet_model_run(model, &xt, 1, &yt, 1, nullptr) == HIDET_OK);
  std::vector<float> got(3 * 6);
  REQUIRE(hidet_memcpy_to_host(got.data(), yout.ptr, got.size() * sizeof(float)) == HIDET_OK);
  expect_same(asarray(got, {3, 6}, "cuda"), net(in), 4);
  CHECK(hidet_model_free(model) == HIDET_OK);
  CHECK(hidet_model_free(nullptr) == HIDET_OK);
}
