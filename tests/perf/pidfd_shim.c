/* Lets the shared-memory transport start under valgrind 3.19, which does not
 * know pidfd_open and pidfd_getfd (it fails them with ENOSYS). Preloaded
 * into the one process valgrind runs, it answers both with fresh eventfds:
 * the transport then works with no liveness events and no wake-ups, so the
 * instruction-count test runs both ranks with a spin longer than the run
 * (RDMX_SPIN_US) and nobody sleeps. Every other system call goes through.
 * A test tool only; never part of the library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

typedef long (*syscall_fn)(long, ...);

long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
    va_end(ap);
#ifdef SYS_pidfd_open
    if (number == SYS_pidfd_open || number == SYS_pidfd_getfd) return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
#endif
    static syscall_fn next;
    if (next == 0) next = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
