/* AF_UNIX sockets pass through untouched, and a TCP socket handed to
 * another process with SCM_RIGHTS keeps working there.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"

static int send_fd(int via, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec v = { "F", 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return (int)sendmsg(via, &m, 0);
}

static int recv_fd(int via)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec v = { &c, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	if (recvmsg(via, &m, 0) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	int fd = -1;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

int main(void)
{
	int us[2], c, s;
	char buf[64];
	R("socketpair stream", socketpair(AF_UNIX, SOCK_STREAM, 0, us));
	R("write unix", write(us[0], "unix", 4));
	long n = R("read unix", read(us[1], buf, sizeof(buf)));
	show("got", buf, n);
	int dg[2];
	R("socketpair dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, dg));
	send(dg[0], "d1", 2, 0);
	send(dg[0], "d22", 3, 0);
	R("recv unix dgram", recv(dg[1], buf, sizeof(buf), 0));
	R("recv unix dgram truncated", recv(dg[1], buf, 1, MSG_TRUNC));
	int sp[2];
	R("socketpair seqpacket", socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp));
	R("socketpair inet (unsupported)", socketpair(AF_INET, SOCK_STREAM, 0, sp));

	tcp_pair(&c, &s);
	send(c, "queued-before-pass", 18, 0);
	msleep(10);
	pid_t pid = fork();
	if (pid == 0) {
		close(s);
		int fd = recv_fd(us[1]);
		char b[64];
		long m = recv(fd, b, sizeof(b), 0);
		send(fd, b, m > 0 ? (size_t)m : 0, 0);
		send(fd, "+child", 6, 0);
		close(fd);
		_exit(0);
	}
	R("pass TCP socket", send_fd(us[0], s));
	R("close our copy", close(s));
	reap("receiver", pid);
	n = R("recv echo", recv(c, buf, 24, MSG_WAITALL));
	show("got", buf, n);
	R("EOF after last copy closed", recv(c, buf, sizeof(buf), 0));
	return 0;
}
