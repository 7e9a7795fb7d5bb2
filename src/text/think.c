/*
 * text/think.c - the thinking phase of a sequence (think.h).
 */
#include "text/think.h"

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
