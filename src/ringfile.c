/* ringfile.c - the ring's registered files: a slot per long-lived socket.
 *
 * An io_uring operation on a socket named by its fd looks the file up and
 * takes a reference for the operation's life (fget and fput, an atomic
 * pair on the file's count): 2.7% of the server's CPU at 2000
 * request-response connections (session 31's profile), one pair per send.
 * A file in the ring's registered table costs neither.  So a socket that
 * has sent RS_SLOT_AFTER times through its owner's ring (a connection
 * that lives; a one-request one never gets here) is given the slot of the
 * number it was armed on (an armed socket has exactly one: dups detach),
 * and its sends and receives name the slot from then on.
 *
 * The slot holds a reference to the file: while it is there, the
 * program's close would not end the connection.  So it goes when the
 * socket leaves the ring (closed, detached, its thread exits: sock.c
 * calls rs_ring_slot_drop), with nothing of the socket in flight or
 * prepared.  The table is changed with io_uring_register, which only the
 * ring's owner may call (SINGLE_ISSUER): a socket that leaves on another
 * thread (one that reaped the owner's completions) marks its slot gone,
 * and the owner clears it at its next round (rs_ring_slots_sweep), as it
 * would cancel a receive that still held the file.  A number whose slot
 * still waits to be cleared gets no slot until then.  The table is
 * registered at the first slot given, sized by RLIMIT_NOFILE then (up to
 * RS_SLOTS_MAX: numbers above it keep naming the fd); a kernel that
 * refuses it (before 5.19, or RINGSOCK_FEATURES_DISABLE=fixed_files)
 * leaves every socket named by its fd.  (A send from a signal handler
 * may be the one that takes the slot: what runs here is async-signal-safe,
 * system calls and mmap.)
 */
#define _GNU_SOURCE 1
#include <sys/mman.h>
#include <sys/resource.h>

#include "engine_int.h"

#define RS_SLOTS_MAX 16384 /* 8 bytes each in the kernel, 8 here */

/* Register the (empty) table: 0, or -1 (refused: never asked again). */
static int slots_register(struct rs_ring *r)
{
	if (r->nslots)
		return r->nslots > 0 ? 0 : -1;
	r->nslots = -1;
	if (rs_rt.cfg.v[RS_K_FEATURES_DISABLE] & RS_FEAT_FIXED_FILES)
		return -1;
	/* The kernel refuses a table larger than RLIMIT_NOFILE. */
	struct rlimit rl;
	unsigned long want = RS_SLOTS_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want)
		want = rl.rlim_cur;
	if (want < 64)
		return -1;
	/* (zeroed pages, made on first touch: the numbers in use) */
	struct rs_esock **of = mmap(NULL, want * sizeof(*of), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (of == MAP_FAILED)
		return -1;
	if (io_uring_register_files_sparse(&r->ring, (unsigned)want) != 0) {
		munmap(of, want * sizeof(*of));
		return -1;
	}
	r->slot_of = of;
	r->nslots = (int)want;
	return 0;
}

/* Set slot i to fd (-1: empty) through the kernel; 0 or -errno. */
static int slot_set(struct rs_ring *r, int i, int fd)
{
	int n = io_uring_register_files_update(&r->ring, (unsigned)i, &fd, 1);
	return n == 1 ? 0 : n < 0 ? n : -EIO;
}

void rs_ring_slot_take(struct rs_ring *r, struct rs_esock *e, int mine)
{
	rs_assert(rs_ring_held(r));
	if (e->slot >= 0 || e->ring_sends >= RS_SLOT_AFTER || ++e->ring_sends < RS_SLOT_AFTER)
		return;
	int fd = e->fd;
	if (!mine || e->mode != RS_ES_ARMED || fd < 0 || slots_register(r) < 0 || fd >= r->nslots ||
	    r->slot_of[fd])
		return;
	if (slot_set(r, fd, fd) < 0)
		return;
	r->slot_of[fd] = e;
	e->slot = fd;
	rs_stat_add(RS_C_FILE_SLOTS, 1);
}

void rs_ring_slot_drop(struct rs_ring *r, struct rs_esock *e, int mine)
{
	rs_assert(rs_ring_held(r));
	int i = e->slot;
	if (i < 0)
		return;
	e->slot = -1;
	rs_assert(i < r->nslots && r->slot_of[i] == e);
	if (mine && slot_set(r, i, -1) == 0) {
		r->slot_of[i] = NULL;
		return;
	}
	/* Not the owner (or the kernel said no): the owner's next round. */
	r->slot_of[i] = RS_SLOT_GONE;
	r->slots_gone++;
	rs_ring_kick(r);
}

void rs_ring_slots_sweep(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	for (int i = 0; i < r->nslots && r->slots_gone; i++) {
		if (r->slot_of[i] != RS_SLOT_GONE)
			continue;
		int e = slot_set(r, i, -1);
		r->slots_gone--;
		if (e < 0) {
			/* (the slot is never given again) */
			static atomic_int said;
			if (!atomic_exchange(&said, 1))
				rs_info("could not clear a registered file of the ring (errno %d): its "
					"socket stays open until the thread exits",
					-e);
			continue;
		}
		r->slot_of[i] = NULL;
	}
}

void rs_ring_slots_free(struct rs_ring *r)
{
	if (r->slot_of)
		munmap(r->slot_of, (size_t)r->nslots * sizeof(*r->slot_of));
	r->slot_of = NULL;
	r->nslots = 0;
	r->slots_gone = 0;
}
