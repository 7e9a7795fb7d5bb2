/*
 * text/think.h - a thinking phase before the answer, for every dialect
 * that streams one (Anthropic's extended thinking, `thinking` blocks;
 * later OpenAI-style reasoning, `delta.reasoning`): the first tokens of a
 * sequence are its thinking, the rest its answer. The model generates
 * them all alike, paced like any token, from one sampler; the phase is a
 * property of a token's index alone, so a relay classifies each token as
 * it is released and no backend knows of it. No I/O.
 *
 * How many thinking tokens a request gets (docs/API.md "Anthropic
 * Messages API"): think_tokens(budget, max_tokens) =
 * min(budget, max_tokens - 1), 0 when max_tokens is 0 or budget 0. The
 * sampling's min_tokens (backend/backend.h) is then that + 1, so an EOS
 * never ends the sequence inside its thinking: at least one answer token
 * follows, unless max_tokens cuts it.
 */
#ifndef TS_TEXT_THINK_H
#define TS_TEXT_THINK_H

#include <stdint.h>

/* The thinking tokens of a sequence of at most max_tokens tokens whose
 * request allows `budget` (tokens). */
uint32_t think_tokens(uint32_t budget, uint32_t max_tokens);

/* The min_tokens (backend.h engine_sampling) that keeps EOS out of the
 * thinking and its first answer token: think + 1, or 0 without
 * thinking. */
uint32_t think_min_tokens(uint32_t think);

/* 1 when token `index` (0-based, of the sequence) is thinking in a
 * sequence with `think` thinking tokens, else 0 (an answer token). */
int think_is_thinking(uint32_t think, uint32_t index);

#endif /* TS_TEXT_THINK_H */
