/*
 * tests/fcgiconn.c - a FastCGI 1.0 client for the accept path's tests
 * (tests/integration/accept.bats): connections straight to a responder's
 * socket that send nothing or part of a request and wait to be closed,
 * and whole GET requests.
 *
 * usage: fcgiconn ADDRESS MODE COUNT SECONDS [PATH]
 *   ADDRESS  unix:PATH, or IPV4:PORT
 *   MODE     silent  COUNT connections that send nothing
 *            begin   COUNT that send an FCGI_BEGIN_REQUEST only
 *            nobody  COUNT that send a POST's whole head (begin, params,
 *                    their end) and never its body
 *            bigbody COUNT that send a POST of 40,960 bytes up to its
 *                    36,864th byte (more than the gate holds), then stop
 *            get     COUNT GET requests of PATH, one after the other
 *   SECONDS  the longest wait: holding, or for one answer
 *
 * The holding modes print "connected N" once all N are connected and have
 * sent their bytes, then "closed I MS" for connection I (1..N) when the
 * server closes it, MS after it connected, and at the end (all closed,
 * SECONDS passed, or SIGTERM/SIGINT) "held H closed C"; exit status 0.
 * get prints each answer's FCGI_STDOUT bytes and then "end STATUS" (the
 * FCGI_END_REQUEST's app status); exit status 3 when an answer does not
 * come within SECONDS, 2 when the connection fails.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
connect_to(const char *addr)
{
	int fd;

	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un un;

		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		if (strlen(addr + 5) >= sizeof(un.sun_path))
			return -1;
		strcpy(un.sun_path, addr + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&un,
		    sizeof(un)) != 0) {
			close(fd);
			fd = -1;
		}
	} else {
		struct sockaddr_in in;
		char host[64];
		const char *colon = strrchr(addr, ':');

		if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
			return -1;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		memset(&in, 0, sizeof(in));
		in.sin_family = AF_INET;
		in.sin_port = htons((unsigned short)atoi(colon + 1));
		if (inet_pton(AF_INET, host, &in.sin_addr) != 1)
			return -1;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&in,
		    sizeof(in)) != 0) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* bigbody: of a body of 40,960 bytes (its CONTENT_LENGTH), these are sent */
#define BIG_SENT 36864

struct msg {
	unsigned char b[BIG_SENT + 8192];
	size_t n;
};

static void
rec(struct msg *m, int type, const void *content, size_t len)
{
	unsigned char *h = m->b + m->n;

	h[0] = 1;
	h[1] = (unsigned char)type;
	h[2] = 0;
	h[3] = 1;                    /* request id 1 */
	h[4] = (unsigned char)(len >> 8);
	h[5] = (unsigned char)len;
	h[6] = 0;
	h[7] = 0;
	if (len > 0)
		memcpy(h + 8, content, len);
	m->n += 8 + len;
}

static void
pair(unsigned char *p, size_t *n, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	p[(*n)++] = (unsigned char)nl;
	p[(*n)++] = (unsigned char)vl;
	memcpy(p + *n, name, nl);
	*n += nl;
	memcpy(p + *n, value, vl);
	*n += vl;
}

/* begin (Responder), and with params_too the params of METHOD PATH and
 * their end. */
static void
request_head(struct msg *m, int params_too, const char *method,
    const char *path)
{
	static const unsigned char begin[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
	unsigned char params[2048];
	char script[256];
	const char *q = strchr(path, '?');
	size_t n = 0;

	m->n = 0;
	rec(m, 1, begin, sizeof(begin));
	if (!params_too)
		return;
	snprintf(script, sizeof(script), "%.*s",
	    (int)(q != NULL ? (size_t)(q - path) : strlen(path)), path);
	pair(params, &n, "REQUEST_METHOD", method);
	pair(params, &n, "REQUEST_URI", path);
	pair(params, &n, "SCRIPT_NAME", script);
	pair(params, &n, "QUERY_STRING", q != NULL ? q + 1 : "");
	pair(params, &n, "REMOTE_ADDR", "127.0.0.1");
	pair(params, &n, "SERVER_PROTOCOL", "HTTP/1.1");
	pair(params, &n, "HTTP_HOST", "127.0.0.1");
	if (strcmp(method, "POST") == 0) {
		pair(params, &n, "CONTENT_TYPE", "application/json");
		pair(params, &n, "CONTENT_LENGTH", "40960");
	}
	rec(m, 4, params, n);
	rec(m, 4, NULL, 0);
}

static int
send_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
hold(const char *addr, const char *mode, int count, double seconds)
{
	static struct pollfd pfd[MAX_CONNS];
	static double since[MAX_CONNS];
	struct msg m;
	double end;
	int i, open_n, closed = 0;

	m.n = 0;
	if (strcmp(mode, "begin") == 0)
		request_head(&m, 0, "GET", "/health");
	else if (strcmp(mode, "nobody") == 0)
		request_head(&m, 1, "POST", "/generate");
	else if (strcmp(mode, "bigbody") == 0) {
		static unsigned char chunk[4096];
		size_t sent;

		request_head(&m, 1, "POST", "/generate");
		memset(chunk, ' ', sizeof(chunk));
		chunk[0] = '{';
		for (sent = 0; sent < BIG_SENT; sent += sizeof(chunk))
			rec(&m, 5, chunk, sizeof(chunk));
	} else if (strcmp(mode, "silent") != 0)
		return -1;
	for (i = 0; i < count; i++) {
		pfd[i].fd = connect_to(addr);
		if (pfd[i].fd < 0 || (m.n > 0 &&
		    send_all(pfd[i].fd, m.b, m.n) != 0)) {
			fprintf(stderr, "fcgiconn: connection %d: %s\n", i + 1,
			    strerror(errno));
			return 2;
		}
		pfd[i].events = POLLIN | POLLRDHUP;
		since[i] = now_ms();
	}
	printf("connected %d\n", count);
	fflush(stdout);
	end = now_ms() + seconds * 1e3;
	open_n = count;
	while (open_n > 0 && !stop && now_ms() < end) {
		if (poll(pfd, (nfds_t)count, 50) <= 0)
			continue;
		for (i = 0; i < count; i++) {
			char junk[4096];

			if (pfd[i].fd < 0 || pfd[i].revents == 0)
				continue;
			/* what a closing server sent last is read away; the
			 * end is a read of 0 or an error */
			if (recv(pfd[i].fd, junk, sizeof(junk),
			    MSG_DONTWAIT) > 0)
				continue;
			printf("closed %d %.0f\n", i + 1, now_ms() - since[i]);
			fflush(stdout);
			close(pfd[i].fd);
			pfd[i].fd = -1;
			open_n--;
			closed++;
		}
	}
	printf("held %d closed %d\n", open_n, closed);
	fflush(stdout);
	return 0;
}

/* Reads n bytes, or fails at the deadline (3) or the end (2). */
static int
read_n(int fd, unsigned char *p, size_t n, double deadline)
{
	while (n > 0) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = deadline - now_ms();
		ssize_t r;

		if (left <= 0)
			return 3;
		if (poll(&pf, 1, (int)left + 1) <= 0)
			continue;
		r = recv(fd, p, n, 0);
		if (r <= 0)
			return 2;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int
get(const char *addr, const char *path, int count, double seconds)
{
	struct msg m;
	int i;

	for (i = 0; i < count; i++) {
		double deadline = now_ms() + seconds * 1e3;
		int fd = connect_to(addr), rc;

		if (fd < 0) {
			fprintf(stderr, "fcgiconn: %s\n", strerror(errno));
			return 2;
		}
		request_head(&m, 1, "GET", path);
		rec(&m, 5, NULL, 0);
		if (send_all(fd, m.b, m.n) != 0) {
			close(fd);
			return 2;
		}
		for (;;) {
			unsigned char h[8], body[65536 + 256];
			size_t clen;

			rc = read_n(fd, h, 8, deadline);
			if (rc != 0)
				break;
			clen = (size_t)h[4] << 8 | h[5];
			rc = read_n(fd, body, clen + h[6], deadline);
			if (rc != 0)
				break;
			if (h[1] == 6)
				fwrite(body, 1, clen, stdout);
			if (h[1] == 3) {
				printf("\nend %u\n", (unsigned)body[0] << 24 |
				    (unsigned)body[1] << 16 |
				    (unsigned)body[2] << 8 | body[3]);
				break;
			}
		}
		close(fd);
		fflush(stdout);
		if (rc == 3)
			fprintf(stderr, "fcgiconn: no answer within %g s\n",
			    seconds);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	int count, rc;
	double seconds;

	if (argc < 5 || (strcmp(argv[2], "get") == 0 && argc < 6)) {
		fprintf(stderr, "usage: fcgiconn ADDRESS silent|begin|nobody|"
		    "bigbody|get COUNT SECONDS [PATH]\n");
		return 2;
	}
	count = atoi(argv[3]);
	seconds = atof(argv[4]);
	if (count < 1 || count > MAX_CONNS || !(seconds > 0)) {
		fprintf(stderr, "fcgiconn: COUNT 1 to %d, SECONDS > 0\n",
		    MAX_CONNS);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[2], "get") == 0)
		return get(argv[1], argv[5], count, seconds);
	rc = hold(argv[1], argv[2], count, seconds);
	if (rc < 0) {
		fprintf(stderr, "fcgiconn: unknown mode %s\n", argv[2]);
		return 2;
	}
	return rc;
}
