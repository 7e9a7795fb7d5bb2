/*
 * client.c - the libcurl client pieces that tokbench's requests share
 * (client.h).
 */
#define _POSIX_C_SOURCE 200809L

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/socket.h>
#include <sys/types.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "bench/client.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

const char *
client_version(void)
{
	return PACKAGE_VERSION;
}

double
client_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

void
client_curl_common(CURL *c, char *errbuf, long timeout_ms)
{
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	    CLIENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "tokbench/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	errbuf[0] = '\0';
}

int
client_unreachable(CURLcode cc, curl_off_t connect_us)
{
	return cc == CURLE_COULDNT_CONNECT ||
	    cc == CURLE_COULDNT_RESOLVE_HOST ||
	    cc == CURLE_COULDNT_RESOLVE_PROXY ||
	    (cc == CURLE_OPERATION_TIMEDOUT && connect_us == 0);
}

int
client_sockopt_rst(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	struct linger lg = { 1, 0 };

	(void)ud;
	if (purpose == CURLSOCKTYPE_IPCXN)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	return CURL_SOCKOPT_OK;
}

enum client_header
client_header_line(const char *line, size_t n, size_t id_max,
    const char **val, size_t *len)
{
	static const char name[] = "X-Request-Id:";
	size_t i, a, b;

	if (n >= 5 && memcmp(line, "HTTP/", 5) == 0)
		return CLIENT_HEADER_STATUS;
	if (n < sizeof(name) - 1 ||
	    strncasecmp(line, name, sizeof(name) - 1) != 0)
		return CLIENT_HEADER_OTHER;
	a = sizeof(name) - 1;
	b = n;
	while (a < b && (line[a] == ' ' || line[a] == '\t'))
		a++;
	while (b > a && (line[b - 1] == '\r' || line[b - 1] == '\n' ||
	    line[b - 1] == ' ' || line[b - 1] == '\t'))
		b--;
	if (b == a || b - a > id_max)
		return CLIENT_HEADER_ID_BAD;
	for (i = a; i < b; i++)
		if ((unsigned char)line[i] < 0x21 || line[i] == 0x7f)
			return CLIENT_HEADER_ID_BAD;
	*val = line + a;
	*len = b - a;
	return CLIENT_HEADER_ID;
}

int
client_is_sse_type(const char *ct)
{
	static const char want[] = "text/event-stream";
	char next;

	if (ct == NULL || strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return 0;
	next = ct[sizeof(want) - 1];
	return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

enum ts_err
client_check_start(CURL *curl, int *status_known, long *status, char *why,
    size_t whysz)
{
	char *ct = NULL;

	if (*status_known)
		return TS_OK;
	*status_known = 1;
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
	if (*status != 200)
		return TS_OK;
	curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct);
	if (client_is_sse_type(ct))
		return TS_OK;
	snprintf(why, whysz, "HTTP 200 with Content-Type %.60s, not "
	    "text/event-stream", ct ? ct : "(none)");
	return TS_EFORMAT;
}

void
client_body_put(struct client_body *b, const char *src, size_t n)
{
	if (ts_buf_append_part(&b->buf, src, n) != TS_OK)
		b->truncated = 1;
}

size_t
client_body_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	client_body_put(ud, ptr, size * nmemb);
	return size * nmemb;
}
