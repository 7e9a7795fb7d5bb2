/*
 * words.h - the words random prompts are made of (tokbench load
 * --dataset random): short English words with their leading space, each
 * one token of tokstream's simulated vocabulary (src/sim/vocab_table.c),
 * so a prompt of N words is N prompt tokens there, and about N on a BPE
 * tokenizer, where such common words are mostly one token each. No
 * token of that vocabulary spans two words, so the count of a prompt is
 * the sum of its words'. The bench layer may not include the simulator
 * (docs/ARCHITECTURE.md, Layers): the table is a copy, checked against
 * the vocabulary by tests/unit/test_load_workload.c.
 */
#ifndef BENCH_WORDS_H
#define BENCH_WORDS_H

#include <stddef.h>

#include "common/buf.h"
#include "common/rng.h"
#include "common/ts.h"

/* Longest word in bytes, its space included. */
#define LOAD_WORD_MAX_BYTES 6

extern const char *const load_words[];
extern const size_t load_nwords;

/*
 * Appends n words drawn uniformly (rng_bounded) from load_words to b:
 * " w1 w2 ... wn", at most n * LOAD_WORD_MAX_BYTES bytes. Returns TS_OK,
 * or TS_ELIMIT when b's cap is reached (b keeps what fitted).
 */
enum ts_err load_words_append(struct rng *r, long n, struct ts_buf *b);

#endif /* BENCH_WORDS_H */
