/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_hash.c - sk_rhash_hash(), the default hash of sk_rhash
 * (src/internal/rhash.h: sk__rhash_mix64(), the 128-bit product of
 * x ^ K1 and x ^ K2 with its halves folded by xor).
 *
 * What is proven:
 *   - the folded product computed from 32-bit products (targets
 *     without __int128) equals the one from the 128-bit product and a
 *     schoolbook product of 16-bit digits, for all pairs of edge values
 *     and 300,000 pseudo-random pairs (without __int128 the first two
 *     are the same code, and the digits are the reference);
 *   - the lookup's inline 8-byte path (seed word, then one mix) equals
 *     sk_rhash_hash() for several seeds;
 *   - the spread over 2^16 buckets (the low bits, as the table uses them)
 *     of 2^16 keys in 8 patterns that weak mixers get wrong (sequential
 *     numbers, multiples of 2^20 and 2^32, page- and line-spaced
 *     addresses, keys that differ only in their top bits, ...): the
 *     longest chain and the mean chain length a key finds (sum of
 *     squared counts / keys; 2.0 for a random function at load 1) stay
 *     within bounds.  The same check rejects the deliberately weak
 *     mixers: the low half of the product alone (no fold), the folded
 *     product with a constant (one operand that depends on the key:
 *     multiples of 2^20 fall on a lattice), and no mixing at all.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/rhash.h" /* white-box: tests/CMakeLists.txt */
#include "scalekit/rhash.h"
#include "sk_test.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* a * b by 16-bit digits, folded: a reference independent of the mix's. */
static uint64_t mul_fold_digits(uint64_t a, uint64_t b)
{
	uint32_t r[8] = { 0 };
	uint64_t lo = 0, hi = 0;
	int i, j;

	for (i = 0; i < 4; i++) {
		uint64_t carry = 0;

		for (j = 0; j < 4; j++) {
			uint64_t t = ((a >> (16 * i)) & 0xffff) *
					     ((b >> (16 * j)) & 0xffff) +
				     r[i + j] + carry;
			r[i + j] = (uint32_t)(t & 0xffff);
			carry = t >> 16;
		}
		for (j = i + 4; carry && j < 8; j++) {
			uint64_t t = r[j] + carry;

			r[j] = (uint32_t)(t & 0xffff);
			carry = t >> 16;
		}
	}
	for (i = 3; i >= 0; i--) {
		lo = (lo << 16) | r[i];
		hi = (hi << 16) | r[i + 4];
	}
	return lo ^ hi;
}

/* All three products of a and b agree?  (Checks on a mismatch.) */
static int products_agree(uint64_t a, uint64_t b)
{
	uint64_t wide = sk__rhash_mul_fold(a, b);

	if (sk__rhash_mul_fold_narrow(a, b) == wide &&
	    mul_fold_digits(a, b) == wide)
		return 1;
	SK_CHECK_EQ(sk__rhash_mul_fold_narrow(a, b), wide);
	SK_CHECK_EQ(mul_fold_digits(a, b), wide);
	return 0;
}

static void narrow_product_equals_wide_product(void)
{
	const uint64_t edge[] = { 0, 1, 2, ~0ULL, 1ULL << 63, 1ULL << 32,
				  0xffffffffULL, SK__RHASH_K1, SK__RHASH_K2,
				  0x9e3779b97f4a7c15ULL };
	const size_t n = sizeof(edge) / sizeof(edge[0]);
	uint64_t s = 42;
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (!products_agree(edge[i], edge[j]))
				return;
	for (i = 0; i < 300000; i++) {
		uint64_t a = splitmix(&s), b = splitmix(&s);

		if (!products_agree(a, b))
			return;
	}
	/* And the mix is the product of x ^ K1 and x ^ K2. */
	for (i = 0; i < 1000; i++) {
		uint64_t x = splitmix(&s);

		SK_CHECK_EQ(sk__rhash_mix64(x),
			    mul_fold_digits(x ^ SK__RHASH_K1, x ^ SK__RHASH_K2));
	}
}

static void inline_path_equals_sk_rhash_hash(void)
{
	const unsigned long seeds[] = { 0, 1, 12345, ~0UL };
	uint64_t s = 7;
	size_t i;
	int j;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		uint64_t sk[2];

		sk__rhash_seed_k(seeds[i], sk);
		for (j = 0; j < 10000; j++) {
			uint64_t k = splitmix(&s);

			if (sk_rhash_hash(&k, sizeof(k), seeds[i]) !=
			    sk__rhash_hash_u64(k, sk)) {
				SK_CHECK_EQ(sk_rhash_hash(&k, sizeof(k),
							  seeds[i]),
					    sk__rhash_hash_u64(k, sk));
				return;
			}
		}
	}
}

/* ---- spread ------------------------------------------------------------ */

enum { BITS = 16, N = 1 << BITS, PATTERNS = 8 };

static uint64_t key_of(int pattern, uint64_t i)
{
	switch (pattern) {
	case 0: return i;			       /* sequential */
	case 1: return i << 20;			       /* low bits all 0 */
	case 2: return i << 32;			       /* low word all 0 */
	case 3: return 0x7f0000000000ULL + i * 4096; /* page addresses */
	case 4: return 0x55550000ULL + i * 64;       /* line addresses */
	case 5: return (i << 48) | 7;		       /* top bits only */
	case 6: return (i << 32) | i;		       /* both words equal */
	default: return (i + 1) * 0x9e3779b97f4a7c15ULL; /* the bench's */
	}
}

/* The worst pattern's longest chain and mean chain length a key finds. */
static void spread(uint64_t (*mix)(uint64_t), unsigned *max_chain,
		   double *mean_found)
{
	static unsigned count[N];
	int p;

	*max_chain = 0;
	*mean_found = 0;
	for (p = 0; p < PATTERNS; p++) {
		double sq = 0;
		uint64_t i;

		memset(count, 0, sizeof(count));
		for (i = 0; i < N; i++) {
			uint64_t k = key_of(p, i);

			count[mix((8 * 0x9e3779b97f4a7c15ULL) ^ k) & (N - 1)]++;
		}
		for (i = 0; i < N; i++) {
			sq += (double)count[i] * count[i];
			if (count[i] > *max_chain)
				*max_chain = count[i];
		}
		if (sq / N > *mean_found)
			*mean_found = sq / N;
	}
}

static uint64_t mix_low_half(uint64_t x)
{
	return (x ^ SK__RHASH_K1) * (x ^ SK__RHASH_K2);
}

static uint64_t mix_by_constant(uint64_t x)
{
	return sk__rhash_mul_fold(x, SK__RHASH_K1);
}

static uint64_t mix_none(uint64_t x)
{
	return x;
}

/*
 * Bounds: a random function puts the longest of 2^16 chains at about 8
 * and the mean a key finds at 2.0; allow some slack for structure.
 */
static int spread_ok(uint64_t (*mix)(uint64_t), const char *name)
{
	unsigned max_chain;
	double mean;

	spread(mix, &max_chain, &mean);
	printf("  %-14s worst pattern: longest chain %u, mean found %.3f\n",
	       name, max_chain, mean);
	return max_chain <= 16 && mean <= 2.5;
}

static void spread_is_even_for_structured_keys(void)
{
	SK_CHECK(spread_ok(sk__rhash_mix64, "the mix"));
}

static void weak_mixers_are_caught(void)
{
	SK_CHECK(!spread_ok(mix_low_half, "low half only"));
	SK_CHECK(!spread_ok(mix_by_constant, "x * K1 folded"));
	SK_CHECK(!spread_ok(mix_none, "no mixing"));
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(narrow_product_equals_wide_product);
	SK_RUN(inline_path_equals_sk_rhash_hash);
	SK_RUN(spread_is_even_for_structured_keys);
	SK_RUN(weak_mixers_are_caught);
	return sk_test_report();
}
