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

#include <stddef.h>
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

/*
 * A reasoning effort, as OpenAI's reasoning_effort and reasoning.effort
 * name them (the openai SDK's Shared.ReasoningEffort, openai 6.49.0
 * resources/shared.d.ts: 'none' | 'minimal' | 'low' | 'medium' | 'high'
 * | 'xhigh' | 'max') and Ollama's think levels ("low", "medium",
 * "high"). UNSET: the request named none.
 */
enum think_effort {
	THINK_EFFORT_UNSET = 0,
	THINK_EFFORT_NONE,
	THINK_EFFORT_MINIMAL,
	THINK_EFFORT_LOW,
	THINK_EFFORT_MEDIUM,
	THINK_EFFORT_HIGH,
	THINK_EFFORT_XHIGH,
	THINK_EFFORT_MAX
};

/* The effort a request that names none gets on a server that always
 * reasons (--reasoning always): medium, OpenAI's default. */
#define THINK_DEFAULT_EFFORT THINK_EFFORT_MEDIUM

/*
 * The thinking budget of an effort (tokens; docs/API.md "Reasoning"):
 * none 0, minimal 16, low 64, medium 256, high 1024, xhigh 2048, max
 * 4096; UNSET is THINK_DEFAULT_EFFORT's when `always` (the server
 * always reasons), else 0. think_tokens then caps it by max_tokens.
 */
uint32_t think_effort_budget(enum think_effort e, int always);

/* The effort named (s, len) ("none" ... "max"): 0 with *e set, -1 for
 * any other string. */
int think_effort_parse(const char *s, size_t len, enum think_effort *e);

/* Its name ("none" ... "max"), or NULL for UNSET. */
const char *think_effort_name(enum think_effort e);

#endif /* TS_TEXT_THINK_H */
