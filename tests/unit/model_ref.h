/*
 * model_ref.h - a reference Llama-2 forward pass and tokenizer for the
 * golden tests of src/model/: written for clarity, not speed, after
 * llama2.c run.c (forward, encode): plain loops over one token at a
 * time, no threads, no batching, its own file reading (fread, not
 * src/model's parser), a linear vocabulary search and the quadratic
 * merge loop. Nothing here is shared with the code under test.
 */
#ifndef TS_TESTS_UNIT_MODEL_REF_H
#define TS_TESTS_UNIT_MODEL_REF_H

#include <stddef.h>
#include <stdint.h>

struct model_ref;

/* Reads a llama2.c checkpoint (legacy format) and its tokenizer; NULL if
 * either cannot be read. */
struct model_ref *model_ref_load(const char *checkpoint,
    const char *tokenizer);
void model_ref_free(struct model_ref *r);

uint32_t model_ref_vocab_size(const struct model_ref *r);

/* Feeds `token` at position `pos` (0, 1, 2, ... in order) and writes the
 * next-token logits [vocab_size]. */
void model_ref_forward(struct model_ref *r, uint32_t token, uint32_t pos,
    float *logits);

/* Forgets the sequence (the KV cache is overwritten from position 0). */
void model_ref_reset(struct model_ref *r);

/* run.c's encode() of (text, len) with BOS when bos != 0, into ids
 * (room for len + 2); returns the count. */
size_t model_ref_encode(const struct model_ref *r, const char *text,
    size_t len, int bos, uint32_t *ids);

/* The argmax of v[n], lowest index on ties. */
uint32_t model_ref_argmax(const float *v, uint32_t n);

#endif /* TS_TESTS_UNIT_MODEL_REF_H */
