import Glibc

/// Nanosecond clocks: monotonic wall time (the same clock timerfd uses) and this thread's CPU time.
enum Clock {
    static func now() -> UInt64 { read(CLOCK_MONOTONIC) }
    static func threadCPU() -> UInt64 { read(CLOCK_THREAD_CPUTIME_ID) }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
