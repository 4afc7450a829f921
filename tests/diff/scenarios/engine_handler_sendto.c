/* A signal handler's datagram reaches its receiver at once.  The UDP
 * twin of engine_handler_send: the main thread waits in a blocking
 * recvfrom on a socket the kernel serves (a duplicated descriptor) for a
 * datagram that a SIGALRM handler with SA_RESTART sends from an engine
 * socket, to a destination that earlier sends of that size made
 * queueable.  The kernel restarts the recvfrom after the handler without
 * coming back to the library, so a datagram the engine queued would wait
 * for the watchdog; tests/integration/stress.sh runs this with the
 * watchdog sending nothing (faults.c watchdog), where a queued datagram
 * waits for ever and a SIGUSR1 timer 3 s later, whose handler has no
 * SA_RESTART, ends the recvfrom with EINTR where the kernel path returns
 * the datagram.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"

static int a;
static struct sockaddr_in to;

static void on_alarm(int sig)
{
	(void)sig;
	int e = errno;
	sendto(a, "from the handler", 16, 0, (struct sockaddr *)&to, sizeof(to));
	errno = e;
}

int main(void)
{
	a = udp_bound();
	int b0 = udp_bound();
	socklen_t tl = sizeof(to);
	if (getsockname(b0, (struct sockaddr *)&to, &tl))
		die("getsockname");
	/* the receiver's reads are the kernel's (a second descriptor), blocking */
	int b = dup(b0);
	close(b0);
	set_nonblock(a);
	char buf[64];
	/* a receive-type call arms the sender's socket */
	R("sender's recv (nothing yet)", recv(a, buf, sizeof(buf), 0));
	/* sends to the receiver (two in a row make it a destination the
	 * engine queues for), datagrams as large as the handler's */
	for (int i = 0; i < 3; i++) {
		R("sendto", sendto(a, "an early one....", 16, 0, (struct sockaddr *)&to, sizeof(to)));
		show("receiver reads", buf, R("recv", recv(b, buf, sizeof(buf), 0)));
	}
	timer_t bound = handler_timers(on_alarm);
	show("blocking recvfrom: the handler's datagram", buf, R("recvfrom", recvfrom(b, buf, sizeof(buf), 0, NULL, NULL)));
	handler_timers_off(bound);
	close(b);
	close(a);
	return 0;
}
