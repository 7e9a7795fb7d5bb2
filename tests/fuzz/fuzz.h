/*
 * fuzz.h - what every fuzz target in tests/fuzz/ shares: the libFuzzer
 * entry point's prototype (driver.c calls it under gcc; libFuzzer calls it
 * under clang), a check that aborts with the failed property, and a hash
 * to derive split points and chunk sizes from the input itself, so that
 * every run of an input is the same run.
 */
#ifndef TS_TESTS_FUZZ_FUZZ_H
#define TS_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; returns 0. A violated property aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts, naming the property, when `cond` is false. Unlike assert() it
 * is never compiled out. */
#define FUZZ_CHECK(cond)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: property violated: %s\n",  \
			    __FILE__, __LINE__, #cond);                    \
			abort();                                           \
		}                                                          \
	} while (0)

/* FNV-1a 64 of (p, len) from `h`: a deterministic seed from the input. */
static inline uint64_t
fuzz_hash(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FUZZ_HASH_INIT 0xcbf29ce484222325ULL

/* splitmix64: the next pseudo-random number from *state. */
static inline uint64_t
fuzz_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif /* TS_TESTS_FUZZ_FUZZ_H */
