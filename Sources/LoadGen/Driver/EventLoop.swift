import CLinux
import Glibc

/// A level-triggered epoll set with one absolute-time timer (timerfd), used from one thread. Tokens
/// are the driver's connection numbers; the timer reports as `EventLoop.timerToken`.
final class EventLoop {
    static let timerToken = UInt64.max
    struct Event {
        var token: UInt64
        var readable: Bool
        var writable: Bool
        var failed: Bool
    }

    private let epoll: Int32
    private let timer: Int32
    private let capacity = 512
    private let events: UnsafeMutablePointer<epoll_event>

    init() throws {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard epoll >= 0, timer >= 0 else { throw LoadGenError("epoll or timerfd: errno \(errno)") }
        events = .allocate(capacity: capacity)
        try control(EPOLL_CTL_ADD, fd: timer, token: Self.timerToken, writable: false)
    }

    deinit {
        close(timer)
        close(epoll)
        events.deallocate()
    }

    func add(fd: Int32, token: UInt64) throws { try control(EPOLL_CTL_ADD, fd: fd, token: token, writable: false) }
    func watchWrites(fd: Int32, token: UInt64, _ on: Bool) throws { try control(EPOLL_CTL_MOD, fd: fd, token: token, writable: on) }
    func remove(fd: Int32) { epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil) }

    /// Fires once at `nanoseconds` on the monotonic clock (0 disarms).
    func armTimer(at nanoseconds: UInt64) {
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(nanoseconds / 1_000_000_000)
        spec.it_value.tv_nsec = Int(nanoseconds % 1_000_000_000)
        if nanoseconds == 0 { spec.it_value.tv_nsec = 0 }
        timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    }

    /// Waits up to `timeoutMs` (-1: no limit) and hands each ready descriptor to `handle`.
    func wait(timeoutMs: Int32, _ handle: (Event) throws -> Void) throws {
        let count = epoll_wait(epoll, events, Int32(capacity), timeoutMs)
        if count < 0 {
            if errno == EINTR { return }
            throw LoadGenError("epoll_wait: errno \(errno)")
        }
        for index in 0..<Int(count) {
            let event = events[index]
            let token = event.data.u64
            if token == Self.timerToken {
                var expirations: UInt64 = 0
                _ = read(timer, &expirations, 8)
            }
            try handle(Event(token: token, readable: event.events & EPOLLIN.rawValue != 0,
                             writable: event.events & EPOLLOUT.rawValue != 0,
                             failed: event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0))
        }
    }

    private func control(_ operation: Int32, fd: Int32, token: UInt64, writable: Bool) throws {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        event.data.u64 = token
        guard epoll_ctl(epoll, operation, fd, &event) == 0 else { throw LoadGenError("epoll_ctl: errno \(errno)") }
    }
}
