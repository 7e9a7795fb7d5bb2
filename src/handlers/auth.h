/*
 * handlers/auth.h - the API key of the endpoints that generate (--api-key,
 * as vLLM's and llama-server's; routes.c decides which need it): RFC 6750
 * bearer tokens, "Authorization: Bearer KEY", compared in constant time.
 * No I/O.
 */
#ifndef TS_HANDLERS_AUTH_H
#define TS_HANDLERS_AUTH_H

#include <stddef.h>

/* The longest key accepted, bytes. */
#define AUTH_MAX_KEY_BYTES 512

/*
 * 1 when `header` (the Authorization header's value, HTTP_AUTHORIZATION;
 * NULL or "" when absent) is "Bearer KEY" for exactly `key` (the scheme
 * case-insensitive, one or more spaces after it, RFC 6750 section
 * 2.1), else 0. The comparison of the token takes the same time whatever
 * its bytes, for a given length of `key`: its time tells nothing of how
 * many leading bytes matched.
 */
int auth_bearer_ok(const char *header, const char *key);

/*
 * 1 when `header` (Anthropic's x-api-key header's value, HTTP_X_API_KEY;
 * NULL or "" when absent) is exactly `key`, in the same constant time
 * as auth_bearer_ok; else 0.
 */
int auth_key_ok(const char *header, const char *key);

/*
 * Checks a key from --api-key or the first line of --api-key-file: 1 to
 * AUTH_MAX_KEY_BYTES visible ASCII bytes (0x21..0x7e: a bearer token
 * holds no space or control byte). 0 when valid, else -1.
 */
int auth_key_valid(const char *key, size_t len);

#endif /* TS_HANDLERS_AUTH_H */
