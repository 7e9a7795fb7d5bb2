/*
 * handlers/auth.c - bearer-token checks of the API key (auth.h).
 */
#include "handlers/auth.h"

#include <string.h>
#include <strings.h>

/* 1 when tok is key, comparing every byte of the key whatever tok
 * holds. */
static int
same_key(const char *tok, const char *key)
{
	size_t klen = strlen(key), tlen = strlen(tok), i;
	unsigned char diff;

	/* Every byte of the key is compared, whatever the token holds; a
	 * token of another length still costs the same loop. */
	diff = (unsigned char)(tlen != klen);
	for (i = 0; i < klen; i++)
		diff |= (unsigned char)(key[i] ^ (i < tlen ? tok[i] : 0));
	return diff == 0;
}

int
auth_bearer_ok(const char *header, const char *key)
{
	const char *tok;

	if (header == NULL || strncasecmp(header, "Bearer ", 7) != 0)
		return 0;
	for (tok = header + 7; *tok == ' '; tok++)
		;
	return same_key(tok, key);
}

int
auth_key_ok(const char *header, const char *key)
{
	if (header == NULL || header[0] == '\0')
		return 0;
	return same_key(header, key);
}

int
auth_key_valid(const char *key, size_t len)
{
	size_t i;

	if (len == 0 || len > AUTH_MAX_KEY_BYTES)
		return -1;
	for (i = 0; i < len; i++)
		if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
			return -1;
	return 0;
}
