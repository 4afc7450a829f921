/* publish.h - what a process under the library publishes for `ringsock
 * stat` (publish.c writes it, src/cli/stat.c reads it): one shared-memory
 * file per process, /dev/shm/ringsock.UID.PID.START (START: the process's
 * start time, /proc/PID/stat field 22, so a reused pid never meets an old
 * file), created O_EXCL with mode 0600 (its user and root read it),
 * rewritten by the drain thread every RS_PUB_TICK_MS (a process whose
 * engine has queued a send; without it, by the program's calls: see
 * publish.c),
 * removed at exit and exec.  A reader copies it under its sequence number
 * (odd: being written) and retries; it shows only files of its own pid
 * namespace (pidns), and trusts none of the contents. */
#ifndef RS_PUBLISH_H
#define RS_PUBLISH_H

#include <stdint.h>

#include "ringsock.h"

#define RS_PUB_MAGIC 0x31545352u /* "RST1" */
#define RS_PUB_VERSION 7
#define RS_PUB_DIR "/dev/shm"
#define RS_PUB_PREFIX "ringsock."
#define RS_PUB_MAX_SOCKS 8192
#define RS_PUB_TICK_MS 100
#define RS_PUB_EVENT_COPIES 64 /* sockets taken or armed shown at once (publish.c) */

enum { RS_PUB_TCP = 1, RS_PUB_UDP = 2 };
/* A socket's state as the engine sees it. */
enum {
	RS_PUB_TRACKED,     /* tracked, not armed (yet): the kernel's calls */
	RS_PUB_ARMED,       /* served by a ring */
	RS_PUB_ARMED_KREAD, /* served, its reads the kernel's for now */
	RS_PUB_LEAVING,     /* being handed back to the kernel */
	RS_PUB_KERNEL,      /* handed back (detached): the kernel's */
	RS_PUB_PASSED,      /* passed through for good (reason) */
	RS_PUB_BUSY,        /* on a ring that was busy when the copy was made */
};

struct rs_pub_sock {
	int32_t fd;
	uint8_t kind;       /* RS_PUB_TCP, RS_PUB_UDP */
	uint8_t family;     /* 4 or 6 */
	uint8_t state;      /* RS_PUB_* */
	uint8_t reason;     /* enum ringsock_passthrough, for PASSED/KERNEL */
	int64_t rx_held;    /* bytes the engine holds for the program's reads (-1: unknown) */
	int64_t tx_held;    /* bytes the engine queued, not yet the kernel's (-1: unknown) */
};

struct rs_pub {
	uint32_t magic, version;
	uint32_t seq;             /* odd while being written */
	int32_t pid;
	uint64_t pidns;           /* the inode of /proc/self/ns/pid */
	uint64_t starttime;       /* /proc/PID/stat field 22: tells a reused pid */
	char comm[32];
	int32_t engine_on;        /* the io_uring engine runs */
	int32_t pt_reason;        /* else why not (enum ringsock_passthrough) */
	int64_t updated_ns;       /* CLOCK_MONOTONIC of this copy */
	int64_t started_ns;       /* CLOCK_MONOTONIC when the library started */
	struct ringsock_stats stats; /* process-wide counters */
	uint32_t nsocks;          /* entries below */
	uint32_t nsocks_total;    /* tracked sockets (more than nsocks: cut) */
	struct rs_pub_sock socks[RS_PUB_MAX_SOCKS];
};
/* Field 22 (starttime) of a /proc/PID/stat line, after the command's
 * closing parenthesis (the command may hold spaces and parentheses); 0
 * when absent.  state: the process's state letter, when asked for. */
static inline unsigned long long rs_pub_stat_start(const char *line, char *state)
{
	const char *p = line;
	for (const char *q = line; *q; q++)
		if (*q == ')')
			p = q;
	if (*p != ')' || p[1] != ' ')
		return 0;
	if (state)
		*state = p[2];
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	unsigned long long v = 0;
	for (; field == 22 && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (unsigned)(*p - '0');
	return v;
}

/* The inode in a namespace link ("pid:[4026531836]"), 0 if none. */
static inline unsigned long long rs_pub_ns_inode(const char *link)
{
	unsigned long long v = 0;
	while (*link && *link != '[')
		link++;
	for (link += *link == '['; *link >= '0' && *link <= '9'; link++)
		v = v * 10 + (unsigned)(*link - '0');
	return v;
}

/* (a change of layout must change the version) */
_Static_assert(sizeof(struct rs_pub) == 197256, "struct rs_pub changed: bump RS_PUB_VERSION and this size");

#endif
