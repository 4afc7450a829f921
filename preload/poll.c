/* poll.c - poll, ppoll, select, pselect. */
#include "preload.h"

/* Count a wait call: on sockets if any watched fd is a tracked socket. */
static void count_pollfds(const struct pollfd *fds, nfds_t n)
{
	if (!rs_enter())
		return;
	int ours = 0;
	for (nfds_t i = 0; i < n && !ours; i++)
		ours = rs_fd_peek(fds[i].fd) != NULL;
	rs_count_call(ours, RINGSOCK_FAM_POLL);
}

static void count_fdsets(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
	if (!rs_enter())
		return;
	int ours = 0;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE && !ours; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e)))
			ours = rs_fd_peek(fd) != NULL;
	rs_count_call(ours, RINGSOCK_FAM_POLL);
}

RS_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	count_pollfds(fds, nfds);
	return REAL(poll)(fds, nfds, timeout);
}

RS_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *ss)
{
	count_pollfds(fds, nfds);
	return REAL(ppoll)(fds, nfds, tmo, ss);
}

RS_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	count_fdsets(nfds, r, w, e);
	return REAL(select)(nfds, r, w, e, tmo);
}

RS_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *ss)
{
	count_fdsets(nfds, r, w, e);
	return REAL(pselect)(nfds, r, w, e, tmo, ss);
}
