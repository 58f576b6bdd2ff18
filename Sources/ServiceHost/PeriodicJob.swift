import Logging
import ServiceLifecycle

/// A job run pass after pass until graceful shutdown, with one backoff: the workers' sweepers, the
/// outbox relay, the Play acknowledgements' retry loop and the reconciliations each say what one pass
/// does and how long to wait between passes, and run on this loop.
public struct PeriodicJob: Service {
    /// What a pass found.
    public enum Pass: Sendable, Equatable {
        /// Nothing more waits now: the next pass after the interval.
        case idle
        /// A full batch: more may wait, so the next pass starts at once.
        case moreWaiting
    }

    /// Names the job in the log line of a failed pass.
    public let name: String
    public let interval: Duration
    let logger: Logger
    let pass: @Sendable () async throws -> Pass
    /// How long to wait before the first pass (asked when the job starts).
    let firstPassAfter: @Sendable () async -> Duration

    public init(name: String, interval: Duration, logger: Logger, firstPassAfter: @escaping @Sendable () async -> Duration = { .zero },
                pass: @escaping @Sendable () async throws -> Pass) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.firstPassAfter = firstPassAfter
        self.pass = pass
    }

    /// The wait after the `failures`-th failed pass in a row: 400 ms, doubling, at most 10 s. A store or
    /// broker that is back is used again within seconds; one that stays away is asked about every 10 s.
    public static func backoff(afterFailures failures: Int) -> Duration {
        .milliseconds(min(200 * (1 << min(max(failures, 1), 6)), 10_000))
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            let delay = await firstPassAfter()
            if delay > .zero {
                do { try await Task.sleep(for: delay) } catch { return }
            }
            var failures = 0
            while !Task.isCancelled {
                let wait: Duration
                do {
                    wait = try await pass() == .moreWaiting ? .zero : interval
                    failures = 0
                } catch is CancellationError {
                    return
                } catch {
                    failures += 1
                    logger.warning("\(name) failed; trying again", metadata: ["job": .string(name), "error": .string("\(error)")])
                    wait = Self.backoff(afterFailures: failures)
                }
                if wait > .zero {
                    do { try await Task.sleep(for: wait) } catch { return }
                }
            }
        }
    }
}
