import Foundation
import Logging
import UnixSignals

/// The part of docs/durability.md's shutdown that ServiceGroup does not do: it starts the graceful
/// shutdown on the first SIGTERM or SIGINT, but ignores a second one, and its
/// `maximumGracefulShutdownDuration` escalates to task cancellation (then to a crash after
/// `maximumCancellationDuration`), after which the process may still exit 0. The promise is an exit
/// at once, with status 128 + signal on a second signal and 1 at the end of the grace period; nothing
/// acknowledged is lost by that, as a 2xx was only sent once its records were in Kafka or the spool.
struct ShutdownEscalation: Sendable {
    let signals: UnixSignalsSequence
    let gracePeriodMs: Int
    let logger: Logger

    /// Until cancelled (the services stopped by themselves): on the first signal logs the shutdown,
    /// calls `startShutdown` (for a signal that came before the group trapped it; otherwise a no-op)
    /// and arms the deadline; on the second exits.
    func watch(startShutdown: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { deadline in
            var shuttingDown = false
            for await signal in signals {
                if shuttingDown {
                    logger.warning("second shutdown signal: exiting now", metadata: ["signal": "\(signal.rawValue)"])
                    Self.exitNow(code: 128 + signal.rawValue)
                }
                shuttingDown = true
                logger.notice("shutting down: readiness fails, in-flight requests finish, the producer flushes; a second signal exits at once",
                              metadata: ["signal": "\(signal.rawValue)", "grace_period_ms": "\(gracePeriodMs)"])
                await startShutdown()
                deadline.addTask { [gracePeriodMs, logger] in
                    guard (try? await Task.sleep(for: .milliseconds(gracePeriodMs))) != nil else { return }
                    logger.error("graceful shutdown did not finish within the grace period: exiting now",
                                 metadata: ["grace_period_ms": "\(gracePeriodMs)"])
                    Self.exitNow(code: 1)
                }
            }
            deadline.cancelAll()
        }
    }

    private static func exitNow(code: Int32) -> Never {
        fflush(nil)
        _exit(code)
    }
}
