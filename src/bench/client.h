/*
 * client.h - the libcurl client pieces that tokbench's requests share:
 * tokbench's version, the options of every request, the X-Request-Id
 * header, the start of a /stream answer (status, Content-Type), the
 * clock that time-stamps its bytes, and a capped copy of an answer's
 * body. req.c (one /stream request) calls them from its libcurl
 * callbacks; the cancel step's poll of /_debug/generated uses them too.
 */
#ifndef CLIENT_H
#define CLIENT_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>

#include "common/buf.h"
#include "common/ts.h"

/* Connection set-up limit of every request, in ms. */
#define CLIENT_CONNECT_TIMEOUT_MS 5000L

/* Size of a `why` buffer that fits every reason this module writes. */
#define CLIENT_WHY_MAX 128

/* tokbench's version (the package's), for the User-Agent, --version and
 * the JSON reports. */
const char *client_version(void);

/* Milliseconds from *t0 to now, on CLOCK_MONOTONIC. */
double client_ms_since(const struct timespec *t0);

/*
 * Sets the options every tokbench request shares: no proxy (one would
 * buffer or re-chunk the stream and skew every timing), HTTP/1.1, no
 * signals, a CLIENT_CONNECT_TIMEOUT_MS connect limit, timeout_ms for the
 * whole transfer, no connection reuse (an aborted transfer really closes
 * its socket), the tokbench User-Agent, and errbuf (CURL_ERROR_SIZE
 * bytes, borrowed until the handle is cleaned up; emptied here) for
 * libcurl's messages.
 */
void client_curl_common(CURL *c, char *errbuf, long timeout_ms);

/* True for the libcurl results that mean no server answered at all
 * (connect_us: CURLINFO_CONNECT_TIME_T, 0 when no connection was made). */
int client_unreachable(CURLcode cc, curl_off_t connect_us);

/*
 * A CURLOPT_SOCKOPTFUNCTION: SO_LINGER with a zero timeout, so that
 * close(2) sends a TCP RST instead of a FIN, as a client that crashes or
 * is killed does. Always returns CURL_SOCKOPT_OK.
 */
int client_sockopt_rst(void *ud, curl_socket_t fd, curlsocktype purpose);

/* What one line given to a libcurl header callback is. */
enum client_header {
	CLIENT_HEADER_OTHER,    /* any other header: nothing to keep */
	CLIENT_HEADER_STATUS,   /* "HTTP/...": a new response starts (1xx,
	                         * redirects); forget what earlier ones said */
	CLIENT_HEADER_ID,       /* X-Request-Id with a usable value */
	CLIENT_HEADER_ID_BAD    /* X-Request-Id empty, over id_max bytes, or
	                         * with a control byte, space or DEL */
};

/*
 * Sorts one header line (line, n) as libcurl's header callback gets it:
 * not NUL-terminated, line end included. The header name is matched
 * case-insensitively (RFC 9110 section 5.1); the value is the rest
 * without the blanks around it and the line end (section 5.5). For
 * CLIENT_HEADER_ID, *val and *len get that value (borrowed from line);
 * they are left alone for the other results. Bytes 0x80-0xff are
 * allowed: a caller that wants ASCII checks them itself.
 */
enum client_header client_header_line(const char *line, size_t n,
    size_t id_max, const char **val, size_t *len);

/* True when Content-Type `ct` (NUL-terminated, as libcurl gives it; NULL
 * when absent) is text/event-stream, parameters allowed. */
int client_is_sse_type(const char *ct);

/*
 * The start of a /stream write callback: on the answer's first chunk
 * (*status_known still 0) sets *status_known, reads the HTTP status into
 * *status and, for a 200, checks that the Content-Type is
 * text/event-stream (WHATWG HTML, section 9.2 "Server-sent events").
 * Returns TS_OK to go on, whatever the status (a non-200 body is the
 * caller's), or TS_EFORMAT for a 200 that is not an event stream, with
 * the reason in why (whysz bytes, CLIENT_WHY_MAX is enough).
 */
enum ts_err client_check_start(CURL *curl, int *status_known, long *status,
    char *why, size_t whysz);

/* A capped copy of an answer's body: what fits under buf.max, and
 * whether bytes were dropped (a cut body is not parsed as JSON). */
struct client_body {
	struct ts_buf buf;
	int truncated;
};

/* Appends what fits of (src, n) to b; remembers that bytes were lost. */
void client_body_put(struct client_body *b, const char *src, size_t n);

/* A CURLOPT_WRITEFUNCTION that keeps a capped copy of the body in the
 * struct client_body given as CURLOPT_WRITEDATA. Returns size * nmemb. */
size_t client_body_write(char *ptr, size_t size, size_t nmemb, void *ud);

#endif /* CLIENT_H */
