/*
 * text/think.c - the thinking phase of a sequence (think.h).
 */
#include "text/think.h"

#include <string.h>

uint32_t
think_tokens(uint32_t budget, uint32_t max_tokens)
{
	if (budget == 0 || max_tokens == 0)
		return 0;
	return budget < max_tokens - 1 ? budget : max_tokens - 1;
}

uint32_t
think_min_tokens(uint32_t think)
{
	return think > 0 ? think + 1 : 0;
}

int
think_is_thinking(uint32_t think, uint32_t index)
{
	return index < think;
}

/* think.h: by effort, UNSET first */
static const struct {
	const char *name;
	uint32_t budget;
} efforts[] = {
	{ NULL, 0 }, { "none", 0 }, { "minimal", 16 }, { "low", 64 },
	{ "medium", 256 }, { "high", 1024 }, { "xhigh", 2048 },
	{ "max", 4096 },
};

uint32_t
think_effort_budget(enum think_effort e, int always)
{
	if (e == THINK_EFFORT_UNSET)
		e = always ? THINK_DEFAULT_EFFORT : THINK_EFFORT_NONE;
	if ((size_t)e >= sizeof(efforts) / sizeof(efforts[0]))
		return 0;
	return efforts[e].budget;
}

int
think_effort_parse(const char *s, size_t len, enum think_effort *e)
{
	size_t i;

	for (i = 1; i < sizeof(efforts) / sizeof(efforts[0]); i++)
		if (strlen(efforts[i].name) == len &&
		    memcmp(efforts[i].name, s, len) == 0) {
			*e = (enum think_effort)i;
			return 0;
		}
	return -1;
}

const char *
think_effort_name(enum think_effort e)
{
	if ((size_t)e >= sizeof(efforts) / sizeof(efforts[0]))
		return NULL;
	return efforts[e].name;
}
