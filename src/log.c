/* log.c - "ringsock[pid]: ..." on stderr through a raw write.
 *
 * No allocation, no stdio stream, no recursion (a thread-local guard), and
 * a cap on how many messages one process prints.
 */
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "sys.h"

int rs_log_level = RS_LOG_WARN;

#define RS_LOG_CAP 200 /* messages per process; then one notice and silence */

static RS_TLS int in_log;
static atomic_uint printed;

void rs_log(int level, const char *fmt, ...)
{
	static const char *const tag[] = { "error: ", "warning: ", "", "debug: " };
	char buf[1024];
	va_list ap;
	int n;

	if (level > rs_log_level || in_log)
		return;
	unsigned seq = atomic_fetch_add_explicit(&printed, 1, memory_order_relaxed);
	if (seq > RS_LOG_CAP)
		return;
	in_log = 1;
	if (seq == RS_LOG_CAP) {
		n = snprintf(buf, sizeof(buf), "ringsock[%d]: too many messages, staying quiet\n",
			     rs_sys_getpid());
	} else {
		n = snprintf(buf, sizeof(buf), "ringsock[%d]: %s", rs_sys_getpid(), tag[level & 3]);
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < sizeof(buf))
			n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
		va_end(ap);
		if (n < 0)
			n = 0;
		if ((size_t)n >= sizeof(buf) - 1)
			n = sizeof(buf) - 2;
		buf[n++] = '\n';
	}
	for (int off = 0; off < n;) {
		long w = rs_sys_write(2, buf + off, (size_t)(n - off));
		if (w == -4 /* EINTR */)
			continue;
		if (w <= 0)
			break;
		off += (int)w;
	}
	in_log = 0;
}

#ifdef RS_DEBUG
void rs_assert_fail(const char *what, const char *file, int line)
{
	rs_log(RS_LOG_ERROR, "assertion failed: %s (%s:%d)", what, file, line);
	abort();
}
#endif
