/* faults.c - a test library that makes the engine meet the failures the
 * kernel can hand it, preloaded in front of libringsock.so.
 *
 * RS_FAULT=SITE:N injects at every Nth time the engine reaches SITE
 * (engine_int.h, RS_FAULT_*): setup, enter, short_send, cancel, buf_hold,
 * no_sqe, rx_nomem, stale, stuck, setup_signal (no failure: SIGALRM is
 * raised there, on the thread making its ring), no_drain, watchdog.  The
 * engine asks through the weak symbol ringsock_test_fault; without this
 * library loaded it is never called.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static const struct { const char *name; int site; } sites[] = {
	{ "setup", RS_FAULT_SETUP },         { "enter", RS_FAULT_ENTER },
	{ "short_send", RS_FAULT_SHORT_SEND }, { "cancel", RS_FAULT_CANCEL },
	{ "buf_hold", RS_FAULT_BUF_HOLD },   { "no_sqe", RS_FAULT_NO_SQE },
	{ "rx_nomem", RS_FAULT_RX_NOMEM },  { "stale", RS_FAULT_STALE },
	{ "stuck", RS_FAULT_STUCK },          { "setup_signal", RS_FAULT_SETUP_SIGNAL },
	{ "no_drain", RS_FAULT_NO_DRAIN },    { "watchdog", RS_FAULT_WATCHDOG },
};
static int want_site;
static unsigned long every;
static atomic_ulong reached, injected;

__attribute__((constructor)) static void faults_init(void)
{
	const char *v = getenv("RS_FAULT");
	if (!v)
		return;
	const char *colon = strchr(v, ':');
	size_t n = colon ? (size_t)(colon - v) : strlen(v);
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (strlen(sites[i].name) == n && !strncmp(v, sites[i].name, n))
			want_site = sites[i].site;
	every = colon ? strtoul(colon + 1, NULL, 10) : 1;
	if (!want_site || !every) {
		fprintf(stderr, "faults: bad RS_FAULT=%s\n", v);
		exit(2);
	}
}

/* How many times the site was reached and a fault injected, on stderr at
 * exit: the test checks that the fault really happened. */
__attribute__((destructor)) static void faults_report(void)
{
	if (want_site)
		fprintf(stderr, "faults: reached=%lu injected=%lu\n", atomic_load(&reached),
			atomic_load(&injected));
}

int ringsock_test_fault(int site)
{
	if (site != want_site)
		return 0;
	unsigned long k = atomic_fetch_add(&reached, 1) + 1;
	if (k % every)
		return 0;
	atomic_fetch_add(&injected, 1);
	if (site == RS_FAULT_SETUP_SIGNAL) {
		raise(SIGALRM);
		return 0;
	}
	return 1;
}
