/* proc.c - the process-wide state every layer reads, and nothing else.
 *
 * Defined here, below every other file, so that reading it makes no file
 * depend on the code that sets it (runtime.c at start, engine.c around
 * fork and at a fatal signal): tests/layers.sh checks there is no circle.
 */
#include "engine_int.h"
#include "sys.h"

struct rs_runtime rs_rt;   /* set by rs_runtime_init */
int rs_engine_on;          /* set once by rs_engine_init */
int rs_engine_refuse;      /* set once by rs_esock_refuse_all */
int rs_dying;              /* set by the flush before a fatal default action */
RS_TLS int rs_vfork_pending;
uint64_t rs_ready_clock;    /* epreg.c counts, ring.c reads */

__attribute__((visibility("default"))) const char *ringsock_version(void)
{
	return RS_VERSION_STRING;
}

int rs_vfork_child_slow(void)
{
	if (rs_sys_getpid() != rs_rt.pid)
		return 1;
	/* The parent, after the child exec'd or exited. */
	rs_vfork_pending = 0;
	return 0;
}
