/* engine_uring_after_arm: engine_uring_raw with a socket the engine
 * served (armed, reading ahead) before the program made its own io_uring
 * with raw system calls.  Every later arm must look for the ring again
 * (foreign.c), not only a thread's first: the sockets read through it
 * afterwards are the kernel's.  (The look was skipped once a thread had
 * armed a socket: the ring's epoll_ctl registration never reported the
 * bytes, and its recv waited for ever.)
 * ENGINE_PASSTHROUGH=uring
 */
#define RING_AFTER_ARM 1
#include "engine_uring_raw.c"
