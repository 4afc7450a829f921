/* udpq.c - what a datagram socket of the engine holds for the program:
 * its datagrams' delivery into the caller's buffers (as recvmsg returns
 * one: MSG_TRUNC, the source address), the datagrams left at a fork in
 * memory both processes share (read once, by either), and the socket's
 * pending error (the receive's, a queued send's, or one left at a fork).
 * The queue itself (struct rs_dgram, head/tail in struct rs_udp) is
 * filled by the receive (udp_recv.c) and read by it.
 *
 * Called with the socket's lock held unless a function says otherwise;
 * a fork's leftovers have a lock of their own (left_lock), below it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "udp_int.h"

static size_t copy_out(const struct iovec *iov, int n, const char *p, size_t len)
{
	size_t done = 0;
	for (int i = 0; i < n && done < len; i++) {
		size_t k = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		if (k)
			memcpy(iov[i].iov_base, p + done, k);
		done += k;
	}
	return done;
}

/* One datagram into the caller's buffers, as recvmsg returns it: the
 * bytes copied, or its whole length with MSG_TRUNC. */
ssize_t rs_udpq_deliver(const struct iovec *iov, int n, int flags, struct rs_dgram_from *f, const char *data,
		       uint32_t len, const void *name, uint32_t namelen)
{
	size_t want = rs_iov_total(iov, n);
	size_t got = copy_out(iov, n, data, len < want ? len : want);
	if (f) {
		if (f->name && f->namelen) {
			socklen_t room = *f->namelen;
			if (room > 0)
				memcpy(f->name, name, room < namelen ? room : namelen);
			*f->namelen = namelen;
		}
		f->flags = len > want ? MSG_TRUNC : 0;
	}
	return (flags & MSG_TRUNC) ? (ssize_t)len : (ssize_t)got;
}

static void left_lock(struct rs_uleft *l)
{
	int z = 0;
	while (!atomic_compare_exchange_weak(&l->lock, &z, 1))
		z = 0;
}

static int left_has(struct rs_uleft *l)
{
	return __atomic_load_n(&l->off, __ATOMIC_RELAXED) < __atomic_load_n(&l->end, __ATOMIC_RELAXED);
}

/* Datagrams left at forks (held_events: without the lock). */
int rs_udpq_left_records(struct rs_udp *u)
{
	for (struct rs_uleft_ref *x = RS_LOAD(u->left); x; x = __atomic_load_n(&x->next, __ATOMIC_ACQUIRE))
		if (left_has(x->l))
			return 1;
	return 0;
}

/* The next datagram left at a fork; -EAGAIN when none is. */
ssize_t rs_udpq_left_take(struct rs_udp *u, const struct iovec *iov, int n, int flags, struct rs_dgram_from *f)
{
	for (struct rs_uleft_ref *x = u->left; x; x = x->next) {
		struct rs_uleft *l = x->l;
		ssize_t r = -EAGAIN;
		left_lock(l);
		if (l->off < l->end) {
			struct rs_uleft_rec *h = (struct rs_uleft_rec *)(l->data + l->off);
			r = rs_udpq_deliver(iov, n, flags, f, (char *)(h + 1), h->len, &h->name, h->namelen);
			if (!(flags & MSG_PEEK))
				l->off += (uint32_t)((sizeof(*h) + h->len + 7) & ~(size_t)7);
		}
		atomic_store(&l->lock, 0);
		if (r != -EAGAIN)
			return r;
	}
	return -EAGAIN;
}

/* The size of the next datagram left at a fork, or -1. */
int rs_udpq_left_next_len(struct rs_udp *u)
{
	for (struct rs_uleft_ref *x = u->left; x; x = x->next) {
		int k = -1;
		left_lock(x->l);
		if (x->l->off < x->l->end)
			k = (int)((struct rs_uleft_rec *)(x->l->data + x->l->off))->len;
		atomic_store(&x->l->lock, 0);
		if (k >= 0)
			return k;
	}
	return -1;
}

int rs_udpq_left_empty(struct rs_udp *u)
{
	return !rs_udpq_left_records(u) && !rs_udp_left_error(u);
}

/* ---- the blocks datagrams are held in ------------------------------------------- */

/* A receive takes a datagram while the program reads earlier ones, so a
 * socket's blocks are taken and given back in turn: each read leaves its
 * block to the socket (up to 32 KiB and 256 blocks of a size), and the
 * receive takes it again, with no malloc and free per datagram (5% of a
 * flooded sink's time, the C library's locks and bins).  Sizes are powers
 * of two, so a block is never more than twice what it holds. */
#define DGRAM_MIN 128u
#define SPARE_BYTES 32768u
#define SPARE_MAX 256u

static int dgram_class(uint32_t len)
{
	size_t need = sizeof(struct rs_dgram) + len;
	for (int c = 0; c < RS_DGRAM_CLASSES; c++)
		if (need <= (size_t)DGRAM_MIN << c)
			return c;
	return -1;
}

struct rs_dgram *rs_udpq_dgram_new(struct rs_udp *u, uint32_t len)
{
	int c = dgram_class(len);
	if (c < 0)
		return malloc(sizeof(struct rs_dgram) + len);
	struct rs_dgram *d = u->spare[c];
	if (!d)
		return malloc((size_t)DGRAM_MIN << c);
	u->spare[c] = d->next;
	u->nspare[c]--;
	return d;
}

void rs_udpq_dgram_free(struct rs_udp *u, struct rs_dgram *d)
{
	int c = dgram_class(d->len);
	if (c < 0 || u->nspare[c] >= SPARE_MAX || (u->nspare[c] + 1u) * (DGRAM_MIN << c) > SPARE_BYTES) {
		free(d);
		return;
	}
	d->next = u->spare[c];
	u->spare[c] = d;
	u->nspare[c]++;
}

void rs_udpq_spares_free(struct rs_udp *u)
{
	for (int c = 0; c < RS_DGRAM_CLASSES; c++) {
		while (u->spare[c]) {
			struct rs_dgram *d = u->spare[c];
			u->spare[c] = d->next;
			free(d);
		}
		u->nspare[c] = 0;
	}
}

void rs_udpq_drop_all(struct rs_udp *u)
{
	while (u->head) {
		struct rs_dgram *d = u->head;
		u->head = d->next;
		rs_udpq_dgram_free(u, d);
	}
	u->tail = NULL;
	RS_STORE(u->cnt, 0);
	RS_STORE(u->held, 0);
}

/* ---- the socket's pending error (the receive's, or a queued send's) ------------ */

int rs_udp_left_error(struct rs_udp *u)
{
	for (struct rs_uleft_ref *x = RS_LOAD(u->left); x; x = __atomic_load_n(&x->next, __ATOMIC_ACQUIRE))
		if (__atomic_load_n(&x->l->err, __ATOMIC_RELAXED))
			return 1;
	return 0;
}

static int left_err(struct rs_udp *u)
{
	for (struct rs_uleft_ref *x = u->left; x; x = x->next) {
		int e = __atomic_exchange_n(&x->l->err, 0, __ATOMIC_RELAXED);
		if (e)
			return e;
	}
	return 0;
}

int rs_udp_take_error(struct rs_udp *u)
{
	int e = RS_LOAD(u->rx_err) ? __atomic_exchange_n(&u->rx_err, 0, __ATOMIC_RELAXED) : 0;
	return e ? e : left_err(u);
}

int rs_udp_error_held(struct rs_udp *u)
{
	return RS_LOAD(u->rx_err) || rs_udp_left_error(u);
}

void rs_udp_keep_error(struct rs_udp *u, int err)
{
	if (!u->rx_err) {
		RS_STORE(u->rx_err, err);
		rs_ep_sock_changed(&u->e);
	}
}
