/* ringpoll.c - one-shot polls through a thread's ring (RS_POLL_SLOTS
 * slots of struct rs_ring): the epoll set a wait in the ring watches
 * (ep.c, RS_POLL_EP) and the kernel fds of poll/select sets (kwatch.c,
 * RS_POLL_KW).  A poll fires once; the reap (ring.c) marks it fired and
 * records rs_ready_clock then.  A caller that would arm on every look
 * (rs_ring_poll_arm_lazy) backs off while the poll keeps firing before it
 * answers anything.  Every function runs with the ring's lock held.
 */
#include <poll.h>

#include "engine_int.h"

void rs_ring_poll_cancel(struct rs_ring *r, int slot)
{
	struct rs_ring_poll *p = &r->poll[slot];
	struct io_uring_sqe *sqe;
	if (p->armed && (sqe = rs_ring_sqe(r)) != NULL) {
		io_uring_prep_cancel64(sqe, p->ud, 0);
		io_uring_sqe_set_data64(sqe, 0);
	}
	p->armed = 0;
	p->ud = 0;
}

void rs_ring_poll_arm(struct rs_ring *r, int slot, int fd, const void *key)
{
	struct rs_ring_poll *p = &r->poll[slot];
	if (p->armed && p->key == key)
		return;
	/* another set (or a closed one's number reused): drop the old */
	rs_ring_poll_cancel(r, slot);
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	p->ud = (++r->poll_seq << 3) | RS_UD_POLL;
	io_uring_sqe_set_data64(sqe, p->ud);
	p->tail = r->ring.sq.sqe_tail;
	p->armed = 1;
	p->key = key;
	p->fired_clock = 0;
}

uint64_t rs_ring_poll_take_fired(struct rs_ring *r, int slot, const void *key)
{
	struct rs_ring_poll *p = &r->poll[slot];
	uint64_t f = p->key == key && !p->armed ? p->fired_clock : 0;
	p->fired_clock = 0;
	return f;
}

int rs_ring_poll_needed(struct rs_ring *r, int slot, const void *key)
{
	return r->poll[slot].key != key || !r->poll[slot].armed;
}

int rs_ring_poll_quiet(struct rs_ring *r, int slot, const void *key)
{
	struct rs_ring_poll *p = &r->poll[slot];
	if (!p->armed || p->key != key || r->tr_stale)
		return 0;
	/* submitted: the kernel has consumed the SQ past its entry */
	if ((int)(IO_URING_READ_ONCE(*r->ring.sq.khead) - p->tail) < 0)
		return 0;
	if (rs_ring_has_completions(r))
		return 0;
	p->used = 1;
	return 1;
}

void rs_ring_poll_arm_lazy(struct rs_ring *r, int slot, int fd, const void *key)
{
	struct rs_ring_poll *p = &r->poll[slot];
	if (p->armed && p->key == key)
		return;
	if (p->key != key)
		p->verdict_due = p->wasted = 0, p->backoff = 0;
	if (p->verdict_due) { /* the last poll fired: had it answered a call? */
		p->verdict_due = 0;
		p->wasted = p->used ? 0 : p->wasted < 6 ? p->wasted + 1 : 6;
		p->backoff = p->wasted ? 1u << p->wasted : 0;
	}
	if (p->backoff) {
		p->backoff--;
		return;
	}
	rs_ring_poll_arm(r, slot, fd, key);
	p->used = 0;
	p->verdict_due = p->armed;
}
