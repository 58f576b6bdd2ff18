import Logging
import Rejections
import Synchronization
import Verifiers

/// At most one log line per `interval` for something that can happen on every request (a flood must not
/// become a log flood; the metrics still count every one): `take` answers how many happened since the
/// last line when a line is due, nil otherwise.
final class LogThrottle: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var unlogged = 0
    }

    private let interval: Duration
    private let state = Mutex(State())

    init(interval: Duration) {
        self.interval = interval
    }

    func take(now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            state.unlogged += 1
            if let last = state.lastLine, now - last < interval { return nil }
            state.lastLine = now
            defer { state.unlogged = 0 }
            return state.unlogged
        }
    }
}

/// Logs a sender's admission refusals at most once a second, with how many there were since the last line.
struct RefusalLog: Sendable {
    private let source: String
    private let logger: Logger
    private let throttle = LogThrottle(interval: .seconds(1))

    init(source: String, logger: Logger) {
        self.source = source
        self.logger = logger
    }

    func record(_ rejection: Rejection, now: ContinuousClock.Instant = .now) {
        guard let refusals = throttle.take(now: now) else { return }
        logger.notice("delivery rejected", metadata: [
            "source": .string(source), "reason": .string(rejection.code), "detail": .string(rejection.message),
            "refusals": .stringConvertible(refusals)])
    }
}
