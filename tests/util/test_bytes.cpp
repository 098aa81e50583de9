// util::ByteWriter / ByteReader and util::block_checksum (include/hidet/util/bytes.hpp): values
// read back as written; reads past the end, counts past the end and unknown enumerators are
// ValueErrors naming the input and the byte; the checksum is xxHash64 (reference values) and
// changes when any byte or any length changes.
#include <doctest/doctest.h>

#include "hidet/util/bytes.hpp"

using namespace hidet;

TEST_CASE("values read back as written; malformed input is a ValueError naming the byte") {
  util::ByteWriter w;
  w.pod(std::uint32_t(7));
  w.str("weights");
  w.ints({3, -1, 224});
  w.pod(std::uint8_t(2));
  util::ByteReader r(w.out, "'m.hidet'");
  CHECK(r.pod<std::uint32_t>() == 7);
  CHECK(r.view() == "weights");
  CHECK(r.ints() == std::vector<std::int64_t>{3, -1, 224});
  enum class Kind : std::uint8_t { a, b, c };
  CHECK(r.enumerator(Kind::c, "kind") == Kind::c);
  CHECK(r.done());
  try {
    (void)r.pod<std::uint8_t>();
    FAIL("no error past the end");
  } catch (const ValueError &e) {
    CHECK(std::string(e.what()) ==
          "'m.hidet' is corrupt (it ends early at byte " + std::to_string(w.out.size()) + ")");
  }
  util::ByteReader bad_kind(std::string_view(w.out).substr(w.out.size() - 1), "x");
  CHECK_THROWS_WITH_AS(bad_kind.enumerator(Kind::b, "kind"),
                       "x is corrupt (an unknown kind at byte 1)", ValueError);
  util::ByteWriter big;
  big.pod(std::uint64_t(1) << 60); // a count no input can hold
  util::ByteReader count(big.out, "y");
  CHECK_THROWS_WITH_AS(count.count(8), "y is corrupt (a count past the end at byte 8)", ValueError);
}

TEST_CASE("block_checksum is xxHash64 and sees every byte and the length") {
  CHECK(util::block_checksum("") == 0xEF46DB3751D8E999ull);
  CHECK(util::block_checksum("abc") == 0x44BC2CF5AD770999ull);
  std::string data(1000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = char(i * 37);
  std::uint64_t h = util::block_checksum(data);
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::string flipped = data;
    flipped[i] ^= 0x10;
    REQUIRE(util::block_checksum(flipped) != h);
  }
  for (std::size_t n = 0; n < 70; ++n) // every tail length, stripes and no stripes
    CHECK(util::block_checksum(std::string_view(data).substr(0, n)) !=
          util::block_checksum(std::string_view(data).substr(0, n + 1)));
  CHECK(util::block_checksum(data, 1) != h);
}
