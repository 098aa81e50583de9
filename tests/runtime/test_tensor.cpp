// Tensors: creation, host copies with dtype checks, device moves, reshape views, random numbers.
#include <doctest/doctest.h>

#include <cmath>

#include "hidet/runtime/shared_constants.hpp"
#include "hidet/runtime/tensor.hpp"

using namespace hidet;

TEST_CASE("tensor: creation functions fill the right values") {
  for (const char *dev : {"cpu", "cuda"}) {
    CAPTURE(dev);
    Tensor z = zeros({2, 3}, dtypes::f32, dev);
    CHECK(z.shape() == std::vector<std::int64_t>{2, 3});
    CHECK(z.dtype() == dtypes::f32);
    CHECK(z.device() == Device(dev));
    CHECK(z.ndim() == 2);
    CHECK(z.numel() == 6);
    CHECK(z.nbytes() == 24);
    CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(ones({3}, dtypes::i64, dev).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, 1, 1});
    CHECK(full({2}, -7.9, dtypes::i32, dev).to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{-7, -7});
    CHECK(full({2}, 3, dtypes::boolean, dev).to_vector<bool>() == std::vector<bool>{true, true});
    CHECK(full({2}, 200, dtypes::u8, dev).to_vector<std::uint8_t>() ==
          std::vector<std::uint8_t>{200, 200});
    auto h = full({1}, 0.1, dtypes::f16, dev).to_vector<float16>();
    CHECK(h[0].bits == 0x2e66); // 0.1 rounded to nearest f16
    auto b = full({1}, 0.1, dtypes::bf16, dev).to_vector<bfloat16>();
    CHECK(b[0].bits == 0x3dcd);
    CHECK(full({}, 2.5, dtypes::f64, dev).to_vector<double>() == std::vector<double>{2.5});
    CHECK(empty({0, 4}, dtypes::f32, dev).numel() == 0);
  }
  CHECK(empty({2}).device() == Device::cuda(0)); // default device
  CHECK(empty({2}).dtype() == dtypes::f32);      // default dtype
}

TEST_CASE("tensor: asarray and to_vector round-trip every dtype") {
  CHECK(asarray(std::vector<std::int8_t>{-128, 0, 127}).to_vector<std::int8_t>() ==
        std::vector<std::int8_t>{-128, 0, 127});
  CHECK(asarray(std::vector<std::uint16_t>{65535, 1}).to_vector<std::uint16_t>() ==
        std::vector<std::uint16_t>{65535, 1});
  CHECK(asarray(std::vector<std::uint64_t>{~0ull}).to_vector<std::uint64_t>()[0] == ~0ull);
  CHECK(asarray({1.5, -2.25}).to_vector<double>() == std::vector<double>{1.5, -2.25});
  CHECK(asarray({true, false, true}, {3}, "cpu").to_vector<bool>() ==
        std::vector<bool>{true, false, true});
  Tensor m = asarray({1, 2, 3, 4, 5, 6}, {2, 3}, "cpu");
  CHECK(m.dtype() == dtypes::i32);
  CHECK(m.shape() == std::vector<std::int64_t>{2, 3});
  Tensor h = asarray({1.0, 0.5, -3.0, 65504.0, 1e6}, {5}, dtypes::f16);
  CHECK(h.dtype() == dtypes::f16);
  CHECK(h.to_double_vector() == std::vector<double>{1.0, 0.5, -3.0, 65504.0, INFINITY});
  Tensor bf = asarray(std::vector<bfloat16>{bfloat16(1.0f), bfloat16(-0.375f)});
  CHECK(bf.dtype() == dtypes::bf16);
  CHECK(bf.to_double_vector() == std::vector<double>{1.0, -0.375});
  CHECK(asarray({-1, 7}).to_double_vector() == std::vector<double>{-1.0, 7.0});
  CHECK(asarray({true, false}).to_double_vector() == std::vector<double>{1.0, 0.0});
}

TEST_CASE("tensor: to_vector with the wrong element type is a ValueError") {
  Tensor t = zeros({2}, dtypes::f32);
  try {
    (void)t.to_vector<std::int32_t>();
    FAIL("no error");
  } catch (const ValueError &e) {
    std::string m = e.what();
    CHECK(m.find("to_vector<int32_t>") != std::string::npos);
    CHECK(m.find("dtype is 'float32'") != std::string::npos);
    CHECK(m.find("to_double_vector()") != std::string::npos);
  }
  CHECK_THROWS_AS((void)zeros({2}, dtypes::f16).to_vector<float>(), ValueError);
  CHECK_THROWS_AS((void)zeros({2}, dtypes::u8).to_vector<bool>(), ValueError);
  CHECK_THROWS_AS((void)Tensor().to_vector<float>(), ValueError);
}

TEST_CASE("tensor: bad shapes and counts are ValueErrors") {
  CHECK_THROWS_WITH_AS(empty({2, -3}), doctest::Contains("invalid shape (2, -3)"), ValueError);
  CHECK_THROWS_WITH_AS(asarray({1, 2, 3}, {2, 2}),
                       doctest::Contains("3 values do not fill shape (2, 2) (4 elements)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(randn({2}, dtypes::i32), doctest::Contains("dtype 'int32' is not a"),
                       ValueError);
}

TEST_CASE("tensor: device moves copy and keep values") {
  Tensor a = asarray({1.f, 2.f, 3.f, 4.f}, {2, 2}, "cpu");
  CHECK(a.to("cpu").data_ptr() == a.data_ptr()); // same device: the same tensor
  Tensor g = a.cuda();
  CHECK(g.device() == Device::cuda(0));
  CHECK(g.is_emulated());
  CHECK(g.data_ptr() != a.data_ptr());
  Tensor back = g.cpu();
  CHECK(back.device() == Device::cpu());
  CHECK_FALSE(back.is_emulated());
  CHECK(back.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(back.shape() == a.shape());
  // Writing through the copy does not change the source.
  back.copy_from_host(std::vector<float>{9, 9, 9, 9}.data());
  CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(g.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK_THROWS_AS(a.to(Device::cuda(3)), ValueError);
}

TEST_CASE("tensor: reshape is a view with -1 inferred") {
  Tensor a = asarray({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, "cpu");
  Tensor b = a.reshape({2, -1, 3});
  CHECK(b.shape() == std::vector<std::int64_t>{2, 2, 3});
  CHECK(b.data_ptr() == a.data_ptr());
  CHECK(b.storage() == a.storage());
  std::int32_t *p = static_cast<std::int32_t *>(a.data_ptr());
  p[5] = 50;
  CHECK(b.to_vector<std::int32_t>()[5] == 50);
  CHECK(a.reshape({12}).shape() == std::vector<std::int64_t>{12});
  CHECK(a.reshape({-1}).shape() == std::vector<std::int64_t>{12});
  CHECK(zeros({0, 3}).reshape({3, 0}).numel() == 0);
  CHECK_THROWS_WITH_AS(a.reshape({5, 3}),
                       doctest::Contains("cannot reshape tensor of shape (3, 4) (12 elements) into "
                                         "shape (5, 3) (15 elements)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(a.reshape({-1, 5}), doctest::Contains("not divisible by 5"), ValueError);
  CHECK_THROWS_WITH_AS(a.reshape({-1, -1}), doctest::Contains("only one extent may be -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(a.reshape({-2, -6}), doctest::Contains("extents must be >= 0"), ValueError);
}

namespace {
void moments(const std::vector<double> &v, double &mean, double &stdev) {
  double s = 0, s2 = 0;
  for (double x : v)
    s += x;
  mean = s / double(v.size());
  for (double x : v)
    s2 += (x - mean) * (x - mean);
  stdev = std::sqrt(s2 / double(v.size() - 1));
}
} // namespace

TEST_CASE("random: randn and rand statistics and seeding") {
  manual_seed(1234);
  Tensor a = randn({100000});
  std::vector<double> v = a.to_double_vector();
  double mean, stdev;
  moments(v, mean, stdev);
  // standard error of the mean is 1/sqrt(1e5) ~ 0.0032; of the std ~ 0.0022
  CHECK(std::fabs(mean) < 0.02);
  CHECK(std::fabs(stdev - 1.0) < 0.02);
  std::size_t within1 = 0;
  for (double x : v)
    within1 += std::fabs(x) < 1.0;
  CHECK(std::fabs(double(within1) / 1e5 - 0.6827) < 0.01);

  manual_seed(1234);
  CHECK(randn({100000}).to_double_vector() == v); // same seed repeats
  manual_seed(1235);
  std::vector<double> w = randn({1000}).to_double_vector();
  CHECK(w != std::vector<double>(v.begin(), v.begin() + 1000)); // other seed differs

  manual_seed(7);
  std::vector<double> u = rand({100000}, dtypes::f64, "cpu").to_double_vector();
  moments(u, mean, stdev);
  CHECK(std::fabs(mean - 0.5) < 0.01);
  CHECK(std::fabs(stdev - std::sqrt(1.0 / 12)) < 0.01);
  for (double x : u) {
    REQUIRE(x >= 0.0);
    REQUIRE(x < 1.0);
  }
  std::vector<double> h = randn({1000}, dtypes::f16).to_double_vector();
  moments(h, mean, stdev);
  CHECK(std::fabs(mean) < 0.15);
  CHECK(std::fabs(stdev - 1.0) < 0.15);
}

TEST_CASE("random: the generator is xoshiro256** seeded by splitmix64") {
  // Reference values computed independently from the published algorithms (splitmix64 seeding of
  // the four state words, then xoshiro256** with rotl(s1*5,7)*9).
  Generator g(0);
  std::uint64_t s[4], x = 0;
  for (auto &w : s) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    w = z ^ (z >> 31);
  }
  CHECK(s[0] == 0xe220a8397b1dcdafull); // splitmix64(0)'s first output, as published
  auto rotl = [](std::uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
  for (int i = 0; i < 5; ++i) {
    std::uint64_t expect = rotl(s[1] * 5, 7) * 9;
    std::uint64_t t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    CHECK(g.next_u64() == expect);
  }
}

TEST_CASE("shared_constant: one result per key while it lives, its sources kept alive") {
  Tensor w = randn({5, 7}, dtypes::f32, "cuda");
  int computed = 0;
  auto twice = [&] {
    ++computed;
    auto v = w.to_vector<float>();
    for (auto &x : v)
      x *= 2;
    return asarray(v, {5, 7}, "cuda");
  };
  const std::size_t before = shared_constants_alive();
  Tensor a = shared_constant("test twice", {w}, twice);
  Tensor b = shared_constant("test twice", {w}, twice);
  CHECK(computed == 1);
  CHECK(a.data_ptr() == b.data_ptr());
  CHECK(a.to_vector<float>()[3] == 2 * w.to_vector<float>()[3]);
  CHECK(shared_constants_alive() == before + 1);
  // Another name, or other sources (another address, or the same memory seen with another shape):
  // computed again.
  shared_constant("test other", {w}, twice);
  CHECK(computed == 2);
  Tensor w2 = w.clone();
  shared_constant("test twice", {w2}, twice);
  shared_constant("test twice", {w.reshape({7, 5})}, twice);
  CHECK(computed == 4);
  // The result keeps its source's memory: no other tensor can take that address while a result
  // that names it can be found.
  const void *where = w.data_ptr();
  w = Tensor();
  Tensor again = randn({5, 7}, dtypes::f32, "cuda");
  CHECK(again.data_ptr() != where);
  // Once no one holds the result, the key computes again.
  a = b = Tensor();
  CHECK(shared_constants_alive() == before);
  CHECK_THROWS_AS(shared_constant("test", {Tensor::symbolic(SymShape{Dim(2)}, dtypes::f32, "cuda")}, twice),
                  ValueError);
}
