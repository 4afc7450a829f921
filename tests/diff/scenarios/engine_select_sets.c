/* select() with sets sized for the highest descriptor, not a whole
 * fd_set (libevent allocates them so): the library must write no more
 * of them than the kernel does, nfds bits rounded up to whole words.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/select.h>

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	send(c, "data", 4, 0);
	size_t words = (size_t)(s / NFDBITS + 1);
	size_t bytes = words * sizeof(fd_mask);
	unsigned char *mem = malloc(3 * (bytes + 64));
	if (!mem)
		die("malloc");
	memset(mem, 0xA5, 3 * (bytes + 64));
	fd_set *r = (fd_set *)mem, *w = (fd_set *)(mem + bytes + 64), *e = (fd_set *)(mem + 2 * (bytes + 64));
	memset(r, 0, bytes);
	memset(w, 0, bytes);
	memset(e, 0, bytes);
	FD_SET(s, r);
	FD_SET(s, w);
	FD_SET(s, e);
	struct timeval tv = { 5, 0 };
	R("select", select(s + 1, r, w, e, &tv));
	say("readable %d writable %d exceptional %d", FD_ISSET(s, r) != 0, FD_ISSET(s, w) != 0,
	    FD_ISSET(s, e) != 0);
	int intact = 1;
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < 64; i++)
			intact &= mem[k * (bytes + 64) + bytes + i] == 0xA5;
	say("bytes past the sets untouched: %d", intact);
	free(mem);
	return 0;
}
