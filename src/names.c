/* names.c - the names of the counters, shared by the library's report
 * (stats.c) and `ringsock stat` (src/cli/stat.c). */
#include "names.h"

const char *const rs_fam_names[RINGSOCK_FAM_COUNT] = {
	"socket", "conn", "sendrecv", "rw", "poll", "epoll", "close", "ctl", "process",
};
const char *const rs_dom_names[RINGSOCK_DOM_COUNT] = { "inet", "inet6", "unix", "other" };
const char *const rs_pt_names[RINGSOCK_PT_COUNT] = {
	"engine_off", "disabled", "no_io_uring", "table_full", "udp", "listener",
	"thread", "dup", "fork", "option", "epoll", "blocking", "uring", "urgent",
};
const char *const rs_engine_names[RS_ENGINE_COUNTERS] = {
	"rings", "uring_enters", "calls_nosys", "sends_submitted", "enobufs", "throttled",
	"reclaim_batches", "reclaim_returns", "frag_chunks", "detached", "direct", "drained",
	"cq_backlogs", "rx_overflows", "direct_on", "direct_off", "buf_grows", "udp_drops",
	"udp_queued", "udp_gso_sends", "udp_send_errors", "zc_sends", "zc_copied", "zc_refused", "ep_rearms",
	"fd_listings", "alone_handovers", "file_slots",
};
