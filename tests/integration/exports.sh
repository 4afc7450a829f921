# The library exports exactly the interposed calls and the public API.
. "$(dirname "$0")/lib.sh"
expected="__poll_chk __ppoll_chk __read_chk __recv_chk __recvfrom_chk _Exit _exit accept accept4
bind close close_range closedir closefrom connect fclose fdopen pclose dup dup2 dup3 epoll_create epoll_create1 epoll_ctl
epoll_pwait epoll_pwait2 epoll_wait execl execle execlp execv execve execvp execvpe fcntl fcntl64
fexecve fork getpeername getsockname getsockopt ioctl listen poll ppoll pselect read readv recv
recvfrom recvmmsg recvmsg ringsock_stats_format ringsock_stats_snapshot ringsock_version select
send sendfile sendfile64 sendmmsg sendmsg sendto setsockopt shutdown socket socketpair splice
sigaction signal bsd_signal sysv_signal sigset siginterrupt vfork write writev
posix_spawn posix_spawnp system popen syscall sockatmark
nanosleep clock_nanosleep usleep sleep pause sigsuspend sigwaitinfo sigtimedwait sched_yield"
echo "$expected" | tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort >"$TMP/expected"
nm -D --defined-only "$RS_LIB" | awk '{print $3}' | sed 's/@.*//' | LC_ALL=C sort >"$TMP/actual"
if diff -u "$TMP/expected" "$TMP/actual"; then ok "export list is exactly the interposed calls and the public API"; else bad "export list differs (- expected, + exported)"; fi
# No version node: references like read@GLIBC_2.2.5 must bind to ours.
if readelf -V "$RS_LIB" | grep -q "Version definition"; then bad "library defines symbol versions"; else ok "no symbol versions defined"; fi
# Nothing but libc (and the dynamic linker) is needed at run time.
deps=$(readelf -d "$RS_LIB" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$deps" in
*liburing*|*libnl*) bad "unexpected run-time dependencies: $deps" ;;
*) ok "run-time dependencies: $deps" ;;
esac
finish
