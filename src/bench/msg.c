/*
 * msg.c - tokbench's lines on stderr (msg.h).
 */
#include "bench/msg.h"

#include <stdarg.h>
#include <stdio.h>

static const char *msg_prefix = "tokbench";

void
msg_init(const char *prefix)
{
	msg_prefix = prefix;
}

void
msg_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", msg_prefix);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
msg_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tokbench %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see tokbench %s --help)\n", cmd);
	return 2;
}
