/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Blocking sockets served by the engine: a blocking recv waits in the
 * kernel, or in the ring when sends of its own are queued (the "queued"
 * cases: two small sends just before), a blocking send waits for room;
 * signals installed every way the C
 * library offers (sigaction with and without SA_RESTART, signal,
 * bsd_signal, sysv_signal, sigset, siginterrupt) end or restart the wait
 * exactly as the kernel would; the handlers and flags the program reads
 * back are its own.  Also MSG_WAITALL across several segments, large
 * blocking sends, SO_SNDTIMEO, and a stop/continue of the process.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* sigset, siginterrupt: on purpose */
#include <signal.h>
extern sighandler_t bsd_signal(int, sighandler_t);
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/time.h>

static volatile sig_atomic_t hits;
static void on_sig(int sig)
{
	(void)sig;
	hits++;
}
static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	hits += si->si_signo == sig;
}

static void alarm_in(int ms)
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static void show_action(const char *label, int sig)
{
	struct sigaction o;
	sigaction(sig, NULL, &o);
	const char *h = o.sa_handler == SIG_DFL ? "SIG_DFL" : o.sa_handler == SIG_IGN ? "SIG_IGN" :
			o.sa_handler == on_sig ? "on_sig" : (void *)o.sa_sigaction == (void *)on_info ? "on_info" : "other";
	int f = o.sa_flags & (SA_RESTART | SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK);
	say("%s: handler %s flags%s%s%s%s%s", label, h, f & SA_RESTART ? " RESTART" : "", f & SA_SIGINFO ? " SIGINFO" : "",
	    f & SA_RESETHAND ? " RESETHAND" : "", f & SA_NODEFER ? " NODEFER" : "", f & SA_ONSTACK ? " ONSTACK" : "");
}

struct later {
	int fd, ms, len;
	const char *data;
};
static void *send_later(void *arg)
{
	struct later *l = arg;
	msleep(l->ms);
	send(l->fd, l->data, (size_t)l->len, 0);
	return NULL;
}

/* recv on s while SIGALRM fires at 30 ms and the peer sends at 150 ms. */
static void recv_with_signal(const char *label, int c, int s)
{
	char buf[64];
	pthread_t th;
	struct later l = { c, 150, 5, "later" };
	hits = 0;
	pthread_create(&th, NULL, send_later, &l);
	alarm_in(30);
	long r = R(label, recv(s, buf, sizeof(buf), 0));
	if (r > 0)
		show("  got", buf, r);
	say("  handler ran %d", hits);
	pthread_join(th, NULL);
	if (r < 0) /* the data still arrives for the next call */
		show("  then", buf, recv(s, buf, sizeof(buf), 0));
}

/* The same on a new pair, with two small sends from s queued when recv
 * waits: the wait is the ring's, which also sends them (a socket whose
 * reads once waited with nothing queued waits in the kernel after). */
static void recv_with_signal_queued(const char *label)
{
	char buf[8];
	int c, s;
	tcp_pair(&c, &s);
	send(s, "ab", 2, 0);
	send(s, "cd", 2, 0);
	recv_with_signal(label, c, s);
	show("  peer got", buf, recv(c, buf, 4, MSG_WAITALL));
	close(c);
	close(s);
}

static void *recv_forever(void *arg)
{
	int fd = *(int *)arg;
	char b[8];
	recv(fd, b, sizeof(b), 0);
	return NULL;
}

static void *epoll_forever(void *arg)
{
	int fd = *(int *)arg;
	char b[8];
	recv(fd, b, sizeof(b), MSG_DONTWAIT); /* this thread serves it */
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	epoll_wait(ep, &ev, 1, -1);
	return NULL;
}

static void *read_slowly(void *arg)
{
	int fd = *(int *)arg;
	static char buf[65536];
	uint32_t sum = 2166136261u;
	long total = 0, r;
	msleep(50);
	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
		for (long i = 0; i < r; i++) /* FNV-1a over the stream, however it is cut */
			sum = (sum ^ (unsigned char)buf[i]) * 16777619u;
		total += r;
	}
	say("reader: %ld bytes, sum %08x", total, sum);
	return NULL;
}

int main(void)
{
	int c, s;
	char buf[256];
	tcp_pair(&c, &s);

	/* What the program reads back is its own. */
	struct sigaction a;
	memset(&a, 0, sizeof(a));
	a.sa_handler = on_sig;
	a.sa_flags = SA_RESTART;
	R("sigaction SIGALRM SA_RESTART", sigaction(SIGALRM, &a, NULL));
	show_action("after sigaction", SIGALRM);
	a.sa_sigaction = on_info;
	a.sa_flags = SA_SIGINFO | SA_NODEFER;
	struct sigaction old;
	R("sigaction SIGUSR1 SIGINFO", sigaction(SIGUSR1, &a, &old));
	say("previous SIGUSR1 default: %d", old.sa_handler == SIG_DFL);
	show_action("SIGUSR1", SIGUSR1);
	R("raise SIGUSR1", raise(SIGUSR1));
	say("handler ran %d", hits);
	hits = 0;
	/* A sanitizer runtime preloaded in front replaces signal() and its
	 * kin with its own (without SA_RESTART): those runs test sigaction
	 * only (tests/CMakeLists.txt sets this for them). */
	int libc_signal = !getenv("SCN_SANITIZER_SIGNALS");
	if (libc_signal) {
		say("signal returns previous: %d", signal(SIGUSR1, on_sig) == (sighandler_t)(void *)on_info);
		show_action("after signal", SIGUSR1);
		say("bsd_signal returns previous: %d", bsd_signal(SIGUSR1, SIG_IGN) == on_sig);
		show_action("after bsd_signal SIG_IGN", SIGUSR1);
		say("sysv_signal returns previous: %d", sysv_signal(SIGUSR1, on_sig) == SIG_IGN);
		show_action("after sysv_signal", SIGUSR1);
		R("raise SIGUSR1 (one-shot)", raise(SIGUSR1));
		show_action("after it ran", SIGUSR1);
		say("sigset returns previous: %d", sigset(SIGUSR2, on_sig) == SIG_DFL);
		show_action("after sigset", SIGUSR2);
		R("siginterrupt SIGUSR2 0", siginterrupt(SIGUSR2, 0));
		show_action("after siginterrupt 0", SIGUSR2);
	}
	hits = 0;

	/* A blocking recv interrupted: restarted after an SA_RESTART
	 * handler, EINTR otherwise. */
	a.sa_handler = on_sig;
	a.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &a, NULL);
	recv_with_signal("recv, sigaction SA_RESTART", c, s);
	a.sa_flags = 0;
	sigaction(SIGALRM, &a, NULL);
	recv_with_signal("recv, sigaction without SA_RESTART", c, s);
	if (libc_signal) {
		signal(SIGALRM, on_sig);
		recv_with_signal("recv, signal()", c, s);
		siginterrupt(SIGALRM, 1);
		recv_with_signal("recv, after siginterrupt 1", c, s);
		siginterrupt(SIGALRM, 0);
		recv_with_signal("recv, after siginterrupt 0", c, s);
		sysv_signal(SIGALRM, on_sig);
		recv_with_signal("recv, sysv_signal", c, s);
	}
	a.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &a, NULL);
	{
		recv_with_signal_queued("recv queued, sigaction SA_RESTART");
		a.sa_flags = 0;
		sigaction(SIGALRM, &a, NULL);
		recv_with_signal_queued("recv queued, sigaction without SA_RESTART");
		a.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &a, NULL);
		int c2, s2;
		tcp_pair(&c2, &s2);
		/* SO_RCVTIMEO ends a wait in the ring */
		struct timeval tmo = { 0, 100000 };
		setsockopt(s2, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
		send(s2, "ab", 2, 0);
		send(s2, "cd", 2, 0);
		R("recv queued, SO_RCVTIMEO 100 ms", recv(s2, buf, sizeof(buf), 0));
		show("  peer got", buf, recv(c2, buf, 4, MSG_WAITALL));
		close(c2);
		close(s2);
		tcp_pair(&c2, &s2);
		/* MSG_WAITALL across segments, waiting in the ring */
		pthread_t th[2];
		struct later l[2] = { { c2, 20, 3, "abc" }, { c2, 60, 3, "def" } };
		send(s2, "ef", 2, 0);
		send(s2, "gh", 2, 0);
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, send_later, &l[i]);
		long r = R("recv queued MSG_WAITALL 6", recv(s2, buf, 6, MSG_WAITALL));
		show("  got", buf, r);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		show("  peer got", buf, recv(c2, buf, 4, MSG_WAITALL));
		close(c2);
		close(s2);
	}

	/* MSG_WAITALL gathers several segments. */
	{
		pthread_t th[3];
		struct later l[3] = { { c, 20, 4, "abcd" }, { c, 60, 4, "efgh" }, { c, 100, 4, "ijkl" } };
		for (int i = 0; i < 3; i++)
			pthread_create(&th[i], NULL, send_later, &l[i]);
		long r = R("recv MSG_WAITALL 12", recv(s, buf, 12, MSG_WAITALL));
		show("  got", buf, r);
		for (int i = 0; i < 3; i++)
			pthread_join(th[i], NULL);
	}
	/* ...and returns what it has when a signal without SA_RESTART comes. */
	{
		a.sa_flags = 0;
		sigaction(SIGALRM, &a, NULL);
		send(c, "xy", 2, 0);
		msleep(20);
		alarm_in(50);
		long r = R("recv MSG_WAITALL 10, signal", recv(s, buf, 10, MSG_WAITALL));
		show("  got", buf, r);
		a.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &a, NULL);
	}
	/* read() blocks the same way. */
	{
		pthread_t th;
		struct later l = { c, 50, 3, "rd!" };
		pthread_create(&th, NULL, send_later, &l);
		long r = R("read blocks", read(s, buf, sizeof(buf)));
		show("  got", buf, r);
		pthread_join(th, NULL);
	}

	/* A large blocking send is taken whole while the peer reads slowly. */
	{
		int c2, s2;
		tcp_pair(&c2, &s2);
		size_t n = 8 << 20;
		char *big = malloc(n);
		fill_pattern(big, n, 7);
		pthread_t th;
		pthread_create(&th, NULL, read_slowly, &s2);
		R("send 8 MiB blocking", send(c2, big, n, 0));
		R("write 8 MiB blocking", write(c2, big, n));
		shutdown(c2, SHUT_WR);
		pthread_join(th, NULL);
		close(c2);
		close(s2);
		free(big);
	}
	/* A blocking send to a peer that does not read: SO_SNDTIMEO ends it
	 * with what was taken, then EAGAIN; a signal without SA_RESTART ends
	 * it with what was taken. */
	{
		int c2, s2;
		tcp_pair(&c2, &s2);
		size_t n = 32 << 20;
		char *big = malloc(n);
		memset(big, 'z', n);
		struct timeval tv = { 0, 100000 };
		setsockopt(c2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		errno = 0;
		long r = send(c2, big, n, 0);
		say("send with SO_SNDTIMEO: partial %d (errno %s)", r > 0 && r < (long)n, scn_errname(errno));
		/* the kernel may have made a little room meanwhile */
		errno = 0;
		r = send(c2, big, n, 0);
		say("send again: a little or timed out %d", (r > 0 && r < (long)n) || (r < 0 && errno == EAGAIN));
		tv.tv_usec = 0;
		setsockopt(c2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		a.sa_flags = 0;
		sigaction(SIGALRM, &a, NULL);
		alarm_in(50);
		errno = 0;
		r = send(c2, big, n, 0);
		say("send, signal without SA_RESTART: %s (errno %s)", r > 0 ? "partial" : "-1", scn_errname(errno));
		close(c2);
		close(s2);
		free(big);
	}

	/* Stopped and continued while blocked: a recv without a timeout goes
	 * on waiting, one with a timeout fails with EINTR (signal(7)). */
	for (int timed = 0; timed < 2; timed++) {
		struct timeval tv = { timed ? 5 : 0, 0 };
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		pid_t parent = getpid();
		pid_t k = fork();
		if (k == 0) {
			msleep(50);
			kill(parent, SIGSTOP);
			msleep(50);
			kill(parent, SIGCONT);
			msleep(100);
			send(c, "cont", 4, 0);
			_exit(0);
		}
		long r = R(timed ? "recv with timeout, stopped and continued" : "recv, stopped and continued",
			   recv(s, buf, sizeof(buf), 0));
		if (r > 0)
			show("  got", buf, r);
		reap("stopper", k);
		if (r < 0)
			show("  then", buf, recv(s, buf, sizeof(buf), 0));
	}
	/* An address on a connected TCP socket's send is ignored (sockperf
	 * sends this way), unless its length is invalid. */
	{
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		getpeername(c, (struct sockaddr *)&peer, &pl);
		R("sendto with an address, connected TCP", sendto(c, "ad", 2, 0, (struct sockaddr *)&peer, pl));
		R("sendto, address length too long", sendto(c, "xx", 2, 0, (struct sockaddr *)&peer, 4096));
		struct iovec v = { "dr", 2 };
		struct msghdr m = { .msg_name = &peer, .msg_namelen = pl, .msg_iov = &v, .msg_iovlen = 1 };
		R("sendmsg with an address, connected TCP", sendmsg(c, &m, 0));
		long r = R("recv MSG_WAITALL 4", recv(s, buf, 4, MSG_WAITALL));
		show("  got", buf, r);
	}
	/* A blocking recv is a cancellation point. */
	{
		int c3, s3;
		tcp_pair(&c3, &s3);
		pthread_t th;
		pthread_create(&th, NULL, recv_forever, &s3);
		msleep(50);
		pthread_cancel(th);
		void *res = NULL;
		pthread_join(th, &res);
		say("blocked recv cancelled: %d", res == PTHREAD_CANCELED);
		pthread_create(&th, NULL, epoll_forever, &c3);
		msleep(50);
		pthread_cancel(th);
		res = NULL;
		pthread_join(th, &res);
		say("blocked epoll_wait cancelled: %d", res == PTHREAD_CANCELED);
		close(c3);
		close(s3);
	}
	close(c);
	close(s);
	return 0;
}
