/*
 * proto/fcgi_scan.h - what a FastCGI 1.0 connection has sent so far, read
 * without taking it off the socket (the bytes recv(MSG_PEEK) returns):
 * whether its request is whole, and whether libfcgi's FCGX_Accept_r
 * would take it. transport/gate.c holds a new connection until its
 * request is whole and hands it to an accept thread then, so that
 * libfcgi's blocking reads of it never wait (docs/RELIABILITY.md "The
 * accept path").
 *
 * A request (FastCGI 1.0 sections 3.3, 5.1, 6.2) is an FCGI_BEGIN_REQUEST
 * record, the FCGI_PARAMS stream up to its empty record (the "head"), and
 * the FCGI_STDIN stream up to its empty record (the body). Records of
 * other request ids and management records (request id 0) may come in
 * between; libfcgi skips or answers them, and so does the scan. What
 * libfcgi refuses (fcgiapp.c of libfcgi 2.4.2: ProcessHeader,
 * ProcessBeginRecord, the role switch of FCGX_Accept_r and ReadParams),
 * the scan refuses too, with the same rules.
 */
#ifndef TS_PROTO_FCGI_SCAN_H
#define TS_PROTO_FCGI_SCAN_H

#include <stddef.h>

#include "common/ts.h"

/* The bytes of a record header (FCGI_HEADER_LEN, section 8). */
#define FCGI_SCAN_HEADER 8u

struct fcgi_scan {
	/* Not whole: the bytes the connection must have sent in all before
	 * a new scan can tell more (the end of the record or header the
	 * scan stopped in). */
	size_t need;
	/* The bytes up to and including the params' empty record: the
	 * head, all FCGX_Accept_r reads; 0 while the head is not whole. */
	size_t head_end;
	/* Records read whole. */
	unsigned records;
	/* The bytes of the request's FCGI_STDIN records read so far (its
	 * body): 0 for a GET, HEAD or OPTIONS, and for an empty POST. */
	size_t body;
	/* 1: the request is whole, so libfcgi's reads of it never wait: the
	 * body's empty FCGI_STDIN record came, or a record of the request
	 * that is not FCGI_STDIN (libfcgi fails the read at once). */
	int whole;
	/* TS_EINVAL: what libfcgi would refuse, a static string. */
	const char *why;
};

/*
 * Scans the n bytes at p, the first n bytes a connection sent, into *s.
 * TS_OK (whole or not, s says), or TS_EINVAL when libfcgi would refuse
 * the request (s->why says why): a record version other than 1, an
 * FCGI_BEGIN_REQUEST of request id 0 or of a length other than 8, a role
 * other than Responder, Authorizer and Filter (1 to 3), a record of the
 * request other than FCGI_PARAMS before the params end, params that end
 * inside a name-value pair (section 3.4). Reads only p[0..n).
 */
enum ts_err fcgi_scan(const unsigned char *p, size_t n, struct fcgi_scan *s);

#endif /* TS_PROTO_FCGI_SCAN_H */
