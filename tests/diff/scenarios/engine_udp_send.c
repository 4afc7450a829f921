/* engine_udp_send: datagrams the engine queues and sends in batches
 * (udp_send.c: one sendmmsg, UDP_SEGMENT for runs of one size to one
 * destination) must reach every receiver as the kernel's own sends would:
 * the same datagrams, sizes and order, with every call's result the
 * same.  Cases:
 *  - runs to one receiver: same sizes, a shorter last one, zero-length
 *    datagrams, sizes changing, a datagram larger than any sent before;
 *  - fan-out to three receivers, interleaved;
 *  - two sending sockets of one thread to one receiver, alternating (the
 *    receiver sees the program's order);
 *  - each receiver read by a nonblocking recv in the same thread right
 *    after the sends (nothing waits in between);
 *  - a sendmsg with a control message, a sendmmsg and a write on the
 *    unconnected socket (EDESTADDRREQ) among queued ones;
 *  - a send with MSG_MORE (the kernel holds it until the next send,
 *    which it joins) before sends the engine would queue;
 *  - another thread's send after queued ones; a send on a socket another
 *    thread serves after queued ones on this thread's socket;
 *  - connect to a new peer, close, fork, posix_spawn, vfork (the child
 *    sends too), the program's own io_uring and a fatal signal (SIGTERM,
 *    default action, in a child) after queued sends (each receiver gets
 *    what was sent before, in order);
 *  - a destination that went away (unconnected: no error), a broadcast
 *    without SO_BROADCAST (EACCES every time);
 *  - a connected socket to a closed port (ECONNREFUSED on the second
 *    send, every time);
 *  - a datagram queued before each of the calls that sleep (nanosleep,
 *    clock_nanosleep, usleep, sleep, pause, sigsuspend, sigwaitinfo,
 *    sigtimedwait, sched_yield): it has left when the call returns.
 *
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#include <pthread.h>
#include <spawn.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int udp_sock(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int big = 1 << 20;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)))
		die("udp socket");
	return s;
}

static struct sockaddr_in addr_of(int s)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	if (getsockname(s, (struct sockaddr *)&a, &l))
		die("getsockname");
	return a;
}

/* A datagram of len bytes: tag, then its sequence number, then filler. */
static long send_dg(int s, const struct sockaddr_in *to, char tag, int seq, size_t len)
{
	char buf[2048];
	memset(buf, 'a' + seq % 26, sizeof(buf));
	if (len > 0)
		buf[0] = tag;
	if (len > 1)
		buf[1] = (char)('0' + seq % 10);
	return sendto(s, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

/* Everything r holds now, nonblocking: one line of "tag seq/len". */
static void drain(const char *who, int r)
{
	char line[4096] = "", buf[2048];
	size_t off = 0;
	int n = 0;
	for (;;) {
		ssize_t k = recv(r, buf, sizeof(buf), MSG_DONTWAIT);
		if (k < 0) {
			if (errno != EAGAIN)
				say("%s: recv = -1 %s", who, scn_errname(errno));
			break;
		}
		n++;
		if (off < sizeof(line) - 32)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %c%c/%zd", k > 0 ? buf[0] : '-',
						k > 1 ? buf[1] : '-', k);
	}
	say("%s: %d datagrams:%s", who, n, line);
}

/* a reads one datagram first: its receive is the engine's (armed). */
static void arm(int a, int peer)
{
	struct sockaddr_in to = addr_of(a);
	char b[8];
	sendto(peer, "x", 1, 0, (struct sockaddr *)&to, sizeof(to));
	R("arm: recv", recv(a, b, sizeof(b), 0));
}

static int shared_a;
static struct sockaddr_in shared_to;

static int other_sock, wake[2], armed[2];

/* Arms other_sock on this thread's ring, says so, then waits outside the
 * library's waits (a pipe read) until told to end. */
static void *owns_other(void *x)
{
	(void)x;
	char c;
	R("owner: recv", recv(other_sock, &c, 1, 0));
	if (write(armed[1], "a", 1) != 1)
		die("write");
	if (read(wake[0], &c, 1) != 1)
		die("read");
	return NULL;
}

static void *other_thread_sends(void *x)
{
	(void)x;
	R("thread: sendto", send_dg(shared_a, &shared_to, 'T', 0, 100));
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A timer signal in 20 ms (for pause and sigsuspend). */
static void alarm_soon(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* Sends one datagram to r (queued under the library), makes call, then
 * reads r without waiting: the datagram is there. */
#define BEFORE(name, call)                                        \
	do {                                                      \
		send_dg(s, &t1, 'Z', n++, 20);                    \
		R(name, call);                                    \
		drain("r1 (" name ")", r1);                       \
	} while (0)

static void sleeps(int r1)
{
	int s = udp_sock(), n = 0;
	struct sockaddr_in t1 = addr_of(r1);
	arm(s, r1);
	send_dg(s, &t1, 'Z', n++, 20);
	send_dg(s, &t1, 'Z', n++, 20);
	drain("r1 (proved)", r1);
	struct timespec ts = { 0, 1000000 };
	BEFORE("nanosleep", nanosleep(&ts, NULL));
	BEFORE("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL));
	BEFORE("usleep", usleep(1000));
	BEFORE("sleep", sleep(0));
	BEFORE("sched_yield", sched_yield());
	signal(SIGALRM, on_alarm);
	alarm_soon();
	BEFORE("pause", pause());
	sigset_t none, usr1, old;
	sigemptyset(&none);
	alarm_soon();
	BEFORE("sigsuspend", sigsuspend(&none));
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	raise(SIGUSR1);
	BEFORE("sigwaitinfo", sigwaitinfo(&usr1, NULL));
	raise(SIGUSR1);
	BEFORE("sigtimedwait", sigtimedwait(&usr1, NULL, &ts));
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(s);
}

int main(void)
{
	int a = udp_sock(), b = udp_sock(), r1 = udp_sock(), r2 = udp_sock(), r3 = udp_sock();
	struct sockaddr_in t1 = addr_of(r1), t2 = addr_of(r2), t3 = addr_of(r3);
	arm(a, r1);
	arm(b, r1);

	/* ---- runs to one receiver ---- */
	static const size_t sizes[] = { 100, 100, 100, 100, 100, 100, 40, 100, 100, 0, 0, 100, 200, 200,
					200, 1, 1400, 1400, 1400, 1400, 1000, 1472, 1472, 1472, 64, 64 };
	int bad = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (send_dg(a, &t1, 'A', (int)i, sizes[i]) != (long)sizes[i])
			bad++;
	for (int i = 0; i < 150; i++) /* (more than one batch) */
		if (send_dg(a, &t1, 'B', i, 512) != 512)
			bad++;
	say("runs: %d sends failed", bad);
	drain("r1", r1);
	R("larger than any before", send_dg(a, &t1, 'L', 0, 1800));
	R("then queued again", send_dg(a, &t1, 'L', 1, 100));
	drain("r1", r1);

	/* ---- fan-out, and two senders alternating ---- */
	for (int i = 0; i < 12; i++) {
		send_dg(a, i % 3 == 0 ? &t1 : i % 3 == 1 ? &t2 : &t3, 'F', i, 60 + (size_t)i);
		send_dg(b, &t3, 'G', i, 30);
	}
	drain("r1", r1);
	drain("r2", r2);
	drain("r3", r3);

	/* ---- other calls among queued datagrams ---- */
	for (int i = 0; i < 3; i++)
		send_dg(a, &t2, 'Q', i, 80);
	char tos_c[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec v = { "cmsg", 4 };
	struct msghdr m = { .msg_name = &t2, .msg_namelen = sizeof(t2), .msg_iov = &v, .msg_iovlen = 1,
			    .msg_control = tos_c, .msg_controllen = sizeof(tos_c) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TOS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	int tos = 0x10;
	memcpy(CMSG_DATA(c), &tos, sizeof(tos));
	R("sendmsg with IP_TOS", sendmsg(a, &m, 0));
	send_dg(a, &t2, 'Q', 3, 80);
	struct mmsghdr mm[2];
	struct iovec mv[2] = { { "mm0", 3 }, { "mm1", 3 } };
	for (int i = 0; i < 2; i++)
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &t2, .msg_namelen = sizeof(t2), .msg_iov = &mv[i],
						       .msg_iovlen = 1 } };
	send_dg(a, &t2, 'Q', 4, 80);
	R("sendmmsg", sendmmsg(a, mm, 2, 0));
	send_dg(a, &t2, 'Q', 5, 80);
	R("write (unconnected)", write(a, "w", 1));
	send_dg(a, &t2, 'Q', 6, 80);
	shared_a = a;
	shared_to = t2;
	pthread_t th;
	pthread_create(&th, NULL, other_thread_sends, NULL);
	pthread_join(th, NULL);
	send_dg(a, &t2, 'Q', 7, 80);
	drain("r2", r2);

	/* ---- a socket another thread serves ---- */
	other_sock = udp_sock();
	if (pipe(wake) || pipe(armed))
		die("pipe");
	struct sockaddr_in to_other = addr_of(other_sock);
	pthread_create(&th, NULL, owns_other, NULL);
	sendto(r1, "o", 1, 0, (struct sockaddr *)&to_other, sizeof(to_other));
	char oc;
	if (read(armed[0], &oc, 1) != 1)
		die("read");
	for (int i = 0; i < 3; i++)
		send_dg(a, &t2, 'U', i, 70);
	R("send on the other thread's socket", send_dg(other_sock, &t2, 'V', 0, 70));
	send_dg(a, &t2, 'U', 3, 70);
	drain("r2", r2);
	R("write the pipe", write(wake[1], "x", 1));
	pthread_join(th, NULL);
	close(other_sock);

	/* ---- MSG_MORE: the next send joins it ---- */
	R("sendto MSG_MORE", sendto(a, "h", 1, MSG_MORE, (struct sockaddr *)&t2, sizeof(t2)));
	for (int i = 0; i < 3; i++)
		send_dg(a, &t2, 'M', i, 80);
	R("sendto MSG_MORE, with none queued", sendto(a, "h", 1, MSG_MORE, (struct sockaddr *)&t2, sizeof(t2)));
	R("sendto MSG_MORE again", sendto(a, "i", 1, MSG_MORE, (struct sockaddr *)&t2, sizeof(t2)));
	R("sendto to end it", sendto(a, "j", 1, 0, (struct sockaddr *)&t2, sizeof(t2)));
	for (int i = 3; i < 6; i++)
		send_dg(a, &t2, 'M', i, 80);
	drain("r2", r2);

	/* ---- connect, close, fork, spawn after queued sends ---- */
	int s = udp_sock();
	arm(s, r1);
	for (int i = 0; i < 4; i++)
		send_dg(s, &t1, 'C', i, 90);
	R("connect to r2", connect(s, (struct sockaddr *)&t2, sizeof(t2)));
	R("send (connected)", send(s, "after", 5, 0));
	drain("r1", r1);
	drain("r2", r2);
	close(s);

	s = udp_sock();
	arm(s, r1);
	for (int i = 0; i < 4; i++)
		send_dg(s, &t3, 'X', i, 90);
	R("close", close(s));
	drain("r3", r3);

	s = udp_sock();
	arm(s, r1);
	for (int i = 0; i < 4; i++)
		send_dg(s, &t3, 'K', i, 90);
	pid_t pid = fork();
	if (pid == 0) {
		send_dg(s, &t3, 'k', 0, 90);
		_exit(0);
	}
	reap("child", pid);
	send_dg(s, &t3, 'K', 9, 90);
	drain("r3 (fork)", r3);
	for (int i = 0; i < 4; i++)
		send_dg(s, &t3, 'S', i, 90);
	char *argv[] = { "true", NULL };
	R("posix_spawn", posix_spawnp(&pid, "true", NULL, NULL, argv, environ));
	reap("true", pid);
	drain("r3 (spawn)", r3);
	for (int i = 0; i < 3; i++)
		send_dg(s, &t3, 'W', i, 90);
	pid = vfork();
	if (pid == 0) {
		send_dg(s, &t3, 'w', 0, 90); /* (the kernel's, after the parent's) */
		_exit(0);
	}
	reap("vfork child", pid);
	drain("r3 (vfork)", r3);
	close(s);

	/* the program's own io_uring: every socket leaves the engine, what
	 * is queued first */
	s = udp_sock();
	arm(s, r1);
	for (int i = 0; i < 4; i++)
		send_dg(s, &t3, 'U', i, 90);
	struct { unsigned sq, cq, flags, a, b, c, d; unsigned res[3]; char rest[80]; } up;
	memset(&up, 0, sizeof(up));
	int uf = (int)syscall(__NR_io_uring_setup, 4, &up);
	say("own io_uring: %s", uf >= 0 || errno == ENOSYS || errno == EPERM ? "set up (or refused)" : "failed");
	if (uf >= 0)
		close(uf);
	send_dg(s, &t3, 'U', 9, 90);
	drain("r3 (own io_uring)", r3);
	close(s);

	/* a fatal signal with datagrams queued (in a child: SIGTERM's default
	 * action ends it) */
	pid = fork();
	if (pid == 0) {
		int c = udp_sock();
		arm(c, r1);
		for (int i = 0; i < 5; i++)
			send_dg(c, &t3, 'T', i, 90);
		raise(SIGTERM);
		_exit(3);
	}
	reap("killed child", pid);
	drain("r1 (killed child's arm)", r1);
	drain("r3 (killed child)", r3);

	/* ---- destinations that fail ---- */
	s = udp_sock();
	arm(s, r1);
	int gone = udp_sock();
	struct sockaddr_in tg = addr_of(gone);
	for (int i = 0; i < 3; i++)
		send_dg(s, &tg, 'D', i, 50);
	close(gone);
	for (int i = 0; i < 3; i++)
		R("sendto a closed port (unconnected)", send_dg(s, &tg, 'D', 3 + i, 50));
	struct sockaddr_in bc = { .sin_family = AF_INET, .sin_port = t1.sin_port, .sin_addr.s_addr = INADDR_BROADCAST };
	for (int i = 0; i < 3; i++)
		R("sendto broadcast", sendto(s, "b", 1, 0, (struct sockaddr *)&bc, sizeof(bc)));
	R("recv nothing", recv(s, (char[8]){ 0 }, 8, MSG_DONTWAIT));
	close(s);

	s = udp_sock();
	gone = udp_sock();
	tg = addr_of(gone);
	close(gone);
	arm(s, r1);
	R("connect to a closed port", connect(s, (struct sockaddr *)&tg, sizeof(tg)));
	for (int i = 0; i < 4; i++)
		R("send (connected, closed port)", send(s, "p", 1, 0));
	close(s);

	sleeps(r1);

	close(a);
	close(b);
	close(r1);
	close(r2);
	close(r3);
	return 0;
}
