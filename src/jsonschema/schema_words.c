/*
 * jsonschema/schema_words.c - the words plain strings are generated from,
 * and the lengths they and every string format give (schema_int.h); the
 * size pass, the checks and generation all read them.
 */
#include <string.h>

#include "jsonschema/schema_int.h"

const char *const schema_words[NWORDS] = {
	"alpha", "amber", "anchor", "apple", "arrow", "autumn", "basin",
	"beacon", "birch", "blue", "bridge", "brook", "cabin", "canyon",
	"cedar", "cloud", "coral", "crane", "delta", "dune", "ember",
	"fable", "falcon", "fern", "field", "flint", "forest", "frost",
	"garden", "glade", "granite", "harbor", "hazel", "island", "ivory",
	"jade", "juniper", "kettle", "lagoon", "lantern", "maple", "meadow",
	"mint", "moss", "north", "oak", "ocean", "olive", "orbit", "pebble",
	"pine", "prairie", "quartz", "raven", "river", "saffron", "sage",
	"shore", "spruce", "stone", "summit", "tide", "valley", "willow",
};

void
schema_words_lens(size_t *lo, size_t *hi)
{
	size_t i, n;

	*lo = SIZE_MAX;
	*hi = 0;
	for (i = 0; i < NWORDS; i++) {
		n = strlen(schema_words[i]);
		*lo = schema_num_zmin(*lo, n);
		*hi = schema_num_zmax(*hi, n);
	}
}

/* Lengths every value of a string format has. */
void
schema_words_format_lens(enum fmt f, size_t *lo, size_t *hi)
{
	size_t wlo, whi;

	schema_words_lens(&wlo, &whi);
	switch (f) {
	case F_DATETIME:
		*lo = *hi = 20;
		break;
	case F_DATE:
		*lo = *hi = 10;
		break;
	case F_TIME:
		*lo = *hi = 9;
		break;
	case F_UUID:
		*lo = *hi = 36;
		break;
	case F_EMAIL:           /* w.w@example.com */
	case F_HOSTNAME:        /* w-w.example.com */
		*lo = 2 * wlo + 13;
		*hi = 2 * whi + 13;
		break;
	case F_URI:             /* https://example.com/w/w */
		*lo = 2 * wlo + 21;
		*hi = 2 * whi + 21;
		break;
	case F_IPV4:
		*lo = 7;
		*hi = 15;
		break;
	default:
		*lo = 0;
		*hi = 0;
		break;
	}
}
