// The bfloat16 loops gradients cross MPI ranks with (pack, unpack, the MPI sum), whichever
// CPU's clone runs, against a rounding written independently here: the nearer of the two
// bfloat16 values around each float, ties to the even one, NaN kept NaN.
#include "parallel/bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tandem::detail {
namespace {

// The bfloat16 value of bits `h` as a double, with 0x7f80 (infinity) standing for 2^128,
// the next step above the largest finite bfloat16, as round-to-nearest treats it.
double value(uint32_t h) {
  if ((h & 0x7fffu) == 0x7f80u) return std::ldexp((h & 0x8000u) ? -1.0 : 1.0, 128);
  return static_cast<double>(std::bit_cast<float>(h << 16));
}

uint16_t reference(float f) {
  const auto u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return 0xffff;  // any NaN: compared as "is NaN" below
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t down = u >> 16, up = down + 1;  // toward zero, and away from it
  const double x = static_cast<double>(f);
  const double to_down = std::abs(x - value(down)), to_up = std::abs(value(up) - x);
  if (to_down != to_up) return static_cast<uint16_t>(to_down < to_up ? down : up);
  return static_cast<uint16_t>((down & 1u) ? up : down);
}

void expect_bits(uint16_t got, uint16_t want, float from, size_t i) {
  if (want == 0xffff && std::isnan(from)) {
    EXPECT_TRUE(std::isnan(from_bf16(got))) << "element " << i << ": NaN became " << got;
  } else {
    EXPECT_EQ(got, want) << "element " << i << " = " << from << " (bits 0x" << std::hex
                         << std::bit_cast<uint32_t>(from) << ")";
  }
}

// Random bit patterns (every exponent, subnormals, NaNs, infinities) and the cases that
// decide rounding: exact ties either side of even, the largest floats (which round to
// infinity), signed zeros.
std::vector<float> inputs(size_t random_count) {
  std::mt19937 rng(7);
  std::vector<float> v;
  for (size_t i = 0; i < random_count; ++i)
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (uint32_t bits :
       {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3f807fffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f7fffu,
        0x00000001u, 0x00008000u, 0x80018000u, 0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
        0x7fc00000u, 0x7f800001u, 0xffbfffffu}) {
    v.push_back(std::bit_cast<float>(bits));
  }
  return v;
}

TEST(Bf16, PackRoundsToNearestEvenAndUnpackIsExact) {
  const std::vector<float> in = inputs(200000);
  std::vector<uint16_t> packed(in.size());
  pack_bf16(in.data(), packed.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    expect_bits(packed[i], reference(in[i]), in[i], i);
    ASSERT_EQ(packed[i], to_bf16(in[i])) << "the loop and the inline conversion differ at " << i;
  }
  std::vector<float> back(in.size());
  unpack_bf16(packed.data(), back.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), static_cast<uint32_t>(packed[i]) << 16) << i;
  }
}

TEST(Bf16, SumAddsInFloat32AndRounds) {
  const std::vector<float> a = inputs(100000), b = inputs(100000 + 17);
  std::vector<uint16_t> pa(a.size()), pb(a.size());
  pack_bf16(a.data(), pa.data(), static_cast<int64_t>(a.size()));
  pack_bf16(b.data() + 17, pb.data(), static_cast<int64_t>(a.size()));  // other pairs
  std::vector<uint16_t> sum = pb;
  sum_bf16(pa.data(), sum.data(), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < a.size(); ++i) {
    const float exact = from_bf16(pa[i]) + from_bf16(pb[i]);
    expect_bits(sum[i], reference(exact), exact, i);
  }
}

// Every length up to a few vectors, at every alignment: the vector loops' tails and heads
// touch exactly [0, n).
TEST(Bf16, EveryLengthAndAlignmentTouchesExactlyItsElements) {
  const std::vector<float> in = inputs(300);
  constexpr uint16_t kGuard = 0x1234;
  for (int64_t offset = 0; offset < 4; ++offset) {
    for (int64_t n = 0; n <= 130; ++n) {
      std::vector<uint16_t> packed(n + 8, kGuard), sum(n + 8, kGuard);
      std::vector<float> back(n + 8, -7.0f);
      pack_bf16(in.data() + offset, packed.data() + offset, n);
      unpack_bf16(packed.data() + offset, back.data() + offset, n);
      sum_bf16(packed.data() + offset, sum.data() + offset, n);
      for (int64_t i = 0; i < n + 8; ++i) {
        const bool inside = i >= offset && i < offset + n;
        if (inside) {
          ASSERT_EQ(packed[i], to_bf16(in[i])) << "n " << n << " offset " << offset;
          ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), static_cast<uint32_t>(packed[i]) << 16);
          ASSERT_EQ(sum[i], to_bf16(from_bf16(packed[i]) + from_bf16(kGuard)));
        } else {
          ASSERT_EQ(packed[i], kGuard) << "pack wrote element " << i << " of n " << n;
          ASSERT_EQ(sum[i], kGuard) << "sum wrote element " << i << " of n " << n;
          ASSERT_EQ(back[i], -7.0f) << "unpack wrote element " << i << " of n " << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem::detail
