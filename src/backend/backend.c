/*
 * backend/backend.c - the sampling defaults and model lookup of
 * backend/backend.h.
 */
#include "backend/backend.h"

#include <string.h>

void
engine_sampling_defaults(struct engine_sampling *s)
{
	memset(s, 0, sizeof(*s));
	s->temperature = ENGINE_TEMPERATURE_DEFAULT;
	s->top_p = ENGINE_TOP_P_DEFAULT;
}

void
engine_sampling_greedy(struct engine_sampling *s)
{
	engine_sampling_defaults(s);
	s->temperature = 0.0;
	s->given = ENGINE_GIVEN_ALL;
}

int
engine_backend_model(const struct engine_backend *b, const char *name,
    size_t len)
{
	uint32_t i;

	for (i = 0; i < b->nmodels; i++)
		if (strlen(b->models[i]) == len &&
		    memcmp(b->models[i], name, len) == 0)
			return (int)i;
	return -1;
}

int
engine_backend_is_eos(const struct engine_backend *b, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < b->n_eos && i < ENGINE_MAX_EOS; i++)
		if (b->eos_ids[i] == id)
			return 1;
	return 0;
}

void
engine_sampling_effective(const struct engine_backend *b,
    const struct engine_sampling *samp, struct engine_sampling *s)
{
	unsigned take = b->gen_has & ~samp->given;

	*s = *samp;
	if (take & ENGINE_GIVEN_TEMPERATURE)
		s->temperature = b->gen_temperature;
	if (take & ENGINE_GIVEN_TOP_P)
		s->top_p = b->gen_top_p;
	if (take & ENGINE_GIVEN_TOP_K)
		s->top_k = b->gen_top_k;
}
