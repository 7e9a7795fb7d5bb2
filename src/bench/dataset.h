/*
 * dataset.h - the prompts of `tokbench load` (--dataset), after vLLM's
 * benchmark datasets (vllm/benchmarks/datasets.py):
 *
 *   random    RandomDataset: each request's prompt is its own random
 *             words (words.h) from the seeded PRNG, so no two prompts
 *             share a prefix, after an optional shared prefix of
 *             --random-prefix-len words (vLLM's prefix_len: the same
 *             random tokens in front of every prompt); the prompt is
 *             prefix + --prompt-tokens words, as vLLM's total_input_len
 *             = prefix_len + input_len.
 *   repeat    tokbench's prompt before datasets: "hello" repeated, the
 *             same for every request (a prefix cache answers it).
 *   sharegpt  ShareGPTDataset: a JSON array of {"conversations":[{"from",
 *             "value"}, ...]}; entries with fewer than two turns are
 *             dropped, the rest shuffled with the seed; the prompt is
 *             conversations[0].value and the output length the length of
 *             conversations[1].value (vLLM's completion), unless
 *             --output-tokens is given (vLLM's --sharegpt-output-len);
 *             pairs that vLLM's is_valid_sequence() refuses (prompt or
 *             output under 4 tokens, prompt over 1024, both over 2048)
 *             are dropped. tokbench has no tokenizer: lengths are
 *             estimated at 4 bytes a token (load_dataset_estimate()).
 *   jsonl     one {"prompt": STRING} or {"messages": [{"role",
 *             "content"}, ...]} object a line, with an optional
 *             "output_tokens" (else --output-tokens); blank lines are
 *             skipped, other keys ignored.
 * A file is read whole, at most LOAD_DATASET_FILE_MAX bytes, and parsed
 * at once; what is kept is the usable entries' text. Request i takes
 * entry i modulo their number, in the shuffled order (vLLM oversamples
 * with random.choices when the file is short; tokbench cycles, so the
 * choice does not depend on timing). No I/O but load_dataset_read(), no
 * clock, no libcurl: unit-tested in tests/unit/test_load_workload.c.
 */
#ifndef BENCH_DATASET_H
#define BENCH_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/ts.h"

/* The largest dataset file read, in bytes (1 GiB: the whole of
 * ShareGPT_V3_unfiltered_cleaned_split.json, 673 MB, fits). */
#define LOAD_DATASET_FILE_MAX (1024UL * 1024 * 1024)

/* vLLM's is_valid_sequence() bounds (datasets.py), in tokens. */
#define LOAD_SHAREGPT_MIN_LEN 4
#define LOAD_SHAREGPT_MAX_PROMPT 1024
#define LOAD_SHAREGPT_MAX_TOTAL 2048

/* --dataset. */
enum load_dataset_kind {
	LOAD_DS_RANDOM,
	LOAD_DS_REPEAT,
	LOAD_DS_SHAREGPT,
	LOAD_DS_JSONL
};

/* One prompt of a file. */
struct load_entry {
	char *prompt;           /* NUL-terminated; NULL with messages */
	json_t *messages;       /* jsonl's "messages" array, owned; or NULL */
	long prompt_tokens;     /* estimate; -1 unknown */
	long output_tokens;     /* 0: not given (use --output-tokens) */
	long line;              /* jsonl: its line; sharegpt: its index */
};

/* The usable entries of a file. */
struct load_dataset {
	struct load_entry *v;
	size_t n, cap;
	size_t skipped;         /* entries dropped as vLLM drops them */
};

/* What was wrong with a dataset file. */
struct load_derr {
	long line;              /* 1-based line; 0 when none applies */
	char text[256];
};

/*
 * Reads the file at `path` whole into *buf (caller frees; NUL-terminated)
 * and *len, refusing one over `max` bytes. Returns TS_OK, or TS_ESYS /
 * TS_ELIMIT with *err filled (cannot open or read it, not a regular
 * file, too large).
 */
enum ts_err load_dataset_read(const char *path, size_t max, char **buf,
    size_t *len, struct load_derr *err);

/*
 * Parses a ShareGPT JSON array (buf, len) into *d (zeroed by the
 * caller). Returns TS_OK, or TS_EINVAL with *err filled: not JSON (the
 * line of the fault), not an array, no usable conversation.
 */
enum ts_err load_dataset_sharegpt(const char *buf, size_t len,
    struct load_dataset *d, struct load_derr *err);

/*
 * Parses JSONL (buf, len) into *d (zeroed by the caller); output_tokens
 * must be an integer from 1 to max_output. Returns TS_OK, or TS_EINVAL
 * with *err naming the line: not JSON, not an object, neither or both of
 * "prompt" and "messages", an empty prompt, a message without string
 * "role" and "content", a bad "output_tokens"; or no line at all.
 */
enum ts_err load_dataset_jsonl(const char *buf, size_t len, long max_output,
    struct load_dataset *d, struct load_derr *err);

/* Shuffles the entries with the seed (Fisher-Yates over a PRNG stream of
 * its own), as vLLM shuffles ShareGPT's with random.seed(seed). */
void load_dataset_shuffle(struct load_dataset *d, uint64_t seed);

/* The entry of request `index` (entry index modulo n); n > 0. */
const struct load_entry *load_dataset_entry(const struct load_dataset *d,
    uint64_t index);

/* Frees the entries; accepts a zeroed dataset. */
void load_dataset_free(struct load_dataset *d);

/* Estimated tokens of n bytes of text: ceil(n / 4), OpenAI's rule of
 * thumb for English (tokbench has no tokenizer of the server's). */
long load_dataset_estimate(size_t n);

#endif /* BENCH_DATASET_H */
