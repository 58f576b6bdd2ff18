import Dispatch
import Foundation
import Logging
import Synchronization

/// SIGTERM and SIGINT handling: the first signal starts a graceful shutdown and a deadline; a second
/// signal, or the deadline, ends the process at once. Nothing acknowledged is lost by that: a 2xx
/// was only sent once its records were in Kafka or fsynced to the spool.
final class ShutdownSignals {
    private let sources: [any DispatchSourceSignal]
    private let state: State

    /// Signals received so far, and whether the services stopped by themselves (the deadline is then moot).
    private final class State: Sendable {
        let counts = Mutex((signals: 0, stopped: false))
    }
    private static let queue = DispatchQueue(label: "tollgate.shutdown-signals")

    init(gracePeriod: Duration, logger: Logger, startShutdown: @escaping @Sendable () async -> Void) {
        let state = State()
        self.state = state
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: Self.queue)
            source.setEventHandler {
                if state.counts.withLock({ counts in counts.signals += 1; return counts.signals }) > 1 {
                    logger.warning("second shutdown signal: exiting now", metadata: ["signal": "\(signalNumber)"])
                    Self.exitNow(code: 128 + signalNumber)
                }
                logger.notice("shutting down: readiness fails, in-flight requests finish, the producer flushes; a second signal exits at once",
                              metadata: ["signal": "\(signalNumber)", "grace_period_ms": "\(gracePeriod.milliseconds)"])
                Task { await startShutdown() }
                Self.queue.asyncAfter(deadline: .now() + .milliseconds(Int(gracePeriod.milliseconds))) {
                    guard !state.counts.withLock({ $0.stopped }) else { return }
                    logger.error("graceful shutdown did not finish within the grace period: exiting now",
                                 metadata: ["grace_period_ms": "\(gracePeriod.milliseconds)"])
                    Self.exitNow(code: 1)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Called once the services have stopped by themselves.
    func stop() {
        state.counts.withLock { $0.stopped = true }
        for source in sources { source.cancel() }
    }

    private static func exitNow(code: Int32) -> Never {
        fflush(nil)
        _exit(code)
    }
}

private extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
