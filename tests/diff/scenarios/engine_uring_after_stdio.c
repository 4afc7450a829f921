/* engine_uring_after_stdio: engine_uring_after_arm with a file that the
 * C library opened and closed itself (fopen and fclose, whose close does
 * not go through any call the library interposes unless it interposes
 * fclose) open while the first socket was armed.  The look for a foreign
 * ring then marked the file's descriptor as checked; after the fclose,
 * the program's ring got the same number back, and the count of open
 * descriptors matched the library's count: the ring was never looked at,
 * and the sockets read through it afterwards were read ahead by the
 * engine (the ring's epoll_ctl registration never reported the bytes,
 * its recv waited for ever).
 * ENGINE_PASSTHROUGH=uring
 */
#define STDIO_AROUND_ARM 1
#include "engine_uring_raw.c"
