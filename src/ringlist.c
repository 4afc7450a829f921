/* ringlist.c - a ring's lists of sockets, all under its lock: the
 * sockets it owns, and its work lists (sends to submit, receives to start
 * again, detaches other threads asked for, drain jobs that will end),
 * each socket at most once on each (its on_* flag says whether it is:
 * debug builds check); waking its owner (rs_ring_kick).  ring.c walks the
 * work lists at each round (ring_prepare).
 */
#include <stddef.h>

#include "engine_int.h"
#include "sys.h"

void rs_ring_own(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	rs_assert(e->owner == r && !e->prev && !e->next);
	e->prev = NULL;
	e->next = r->owned;
	if (r->owned)
		r->owned->prev = e;
	RS_STORE(r->owned, e); /* (the owner looks without the lock: ep.c) */
}

void rs_ring_disown(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->prev)
		e->prev->next = e->next;
	else if (r->owned == e)
		RS_STORE(r->owned, e->next);
	if (e->next)
		e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

void rs_ring_txq_add(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->on_txq)
		return;
	e->on_txq = 1;
	e->txq_next = r->txq;
	RS_STORE(r->txq, e); /* (the owner looks without the lock) */
	r->txq_held_only = 0;
}

void rs_ring_rearm_add(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->on_rearm)
		return;
	e->on_rearm = 1;
	e->rearm_next = r->rearm;
	r->rearm = e;
}

void rs_ring_detach_add(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->on_detach)
		return;
	e->on_detach = 1;
	e->detach_next = r->detach;
	RS_STORE(r->detach, e); /* (the owner looks without the lock) */
}

void rs_ring_draining_add(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->on_draining)
		return;
	e->on_draining = 1;
	e->drain_next = r->draining;
	r->draining = e;
}

/* Unlink e from the list at *head threaded through the link at offset
 * off (its flag said it is there: debug builds check). */
static void list_del(struct rs_esock **head, struct rs_esock *e, size_t off)
{
	for (struct rs_esock **pp = head; *pp; pp = (struct rs_esock **)((char *)*pp + off))
		if (*pp == e) {
			*pp = *(struct rs_esock **)((char *)e + off);
			return;
		}
	rs_assert(!"a socket flagged on a ring list is not on it");
}

void rs_ring_draining_del(struct rs_ring *r, struct rs_esock *e)
{
	if (!e->on_draining)
		return;
	list_del(&r->draining, e, offsetof(struct rs_esock, drain_next));
	e->on_draining = 0;
	rs_drain_unnotify(e->drain);
}

void rs_ring_forget(struct rs_ring *r, struct rs_esock *e)
{
	rs_assert(rs_ring_held(r));
	if (e->on_txq) {
		list_del(e->on_txq == 2 ? &r->txheld : &r->txq, e, offsetof(struct rs_esock, txq_next));
		e->on_txq = 0;
	}
	if (e->on_rearm) {
		list_del(&r->rearm, e, offsetof(struct rs_esock, rearm_next));
		e->on_rearm = 0;
	}
	if (e->on_detach) {
		list_del(&r->detach, e, offsetof(struct rs_esock, detach_next));
		e->on_detach = 0;
	}
	rs_ring_draining_del(r, e);
}

struct rs_esock *rs_ring_txq_take(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	struct rs_esock *list = r->txq;
	RS_STORE(r->txq, NULL); /* (the owner looks without the lock) */
	for (struct rs_esock *e = list; e; e = e->txq_next)
		e->on_txq = 0;
	r->nr_tx_sqes = 0;
	return list;
}

void rs_ring_kick(struct rs_ring *r)
{
	uint64_t one = 1;
	rs_sys_write(r->evfd, &one, sizeof(one));
}
