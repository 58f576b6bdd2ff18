import Logging
import Rejections
import Synchronization
import Verifiers

/// Logs a sender's admission refusals at most once a second, with how many there were since the
/// last line: a flood must not become a log flood. The metric still counts every one.
final class RefusalLog: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var unlogged = 0
    }

    private let source: String
    private let logger: Logger
    private let state = Mutex(State())

    init(source: String, logger: Logger) {
        self.source = source
        self.logger = logger
    }

    func record(_ rejection: Rejection, now: ContinuousClock.Instant = .now) {
        let refusals: Int? = state.withLock { state in
            state.unlogged += 1
            if let last = state.lastLine, now - last < .seconds(1) { return nil }
            state.lastLine = now
            defer { state.unlogged = 0 }
            return state.unlogged
        }
        guard let refusals else { return }
        logger.notice("delivery rejected", metadata: [
            "source": .string(source), "reason": .string(rejection.code), "detail": .string(rejection.message),
            "refusals": .stringConvertible(refusals)])
    }
}
