#ifndef TOLLGATE_CLINUX_SHIM_H
#define TOLLGATE_CLINUX_SHIM_H

// No _GNU_SOURCE: Glibc's Swift module is built without it, and a header that sees other struct
// definitions (fd_set) cannot be imported beside it. Hence the affinity calls through syscall().
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

// The calling thread's CPU mask, `bytes` long (a bit per CPU); 0 or -1 with errno, like sched_*affinity.
static inline int tollgate_set_thread_affinity(const unsigned long *mask, size_t bytes) {
    return (int)syscall(SYS_sched_setaffinity, 0, bytes, mask);
}

// Returns the mask's size in bytes as the kernel wrote it, or -1.
static inline int tollgate_get_thread_affinity(unsigned long *mask, size_t bytes) {
    return (int)syscall(SYS_sched_getaffinity, 0, bytes, mask);
}

#endif
