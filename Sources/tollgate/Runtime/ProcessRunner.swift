import Config
import Logging
import ServiceHost
import ServiceLifecycle
import UnixSignals

/// Runs a process's composition roots (`GatewayProcess`, `EntitlementWorkers`, or both in `dev`) as
/// one ServiceGroup until SIGTERM or SIGINT, which shuts them down gracefully in their stop order
/// within `shutdown.gracePeriodMs`; a second signal, or the end of the period, exits at once
/// (`ShutdownEscalation`).
enum ProcessRunner {
    static func run(_ stopOrder: StopOrder, shutdown: ShutdownSettings, logger: Logger) async throws {
        let signals: [UnixSignal] = [.sigterm, .sigint]
        // Trapped before the group traps them, so no signal falls between the two.
        let escalation = ShutdownEscalation(signals: await UnixSignalsSequence(trapping: signals),
                                            gracePeriodMs: shutdown.gracePeriodMs, logger: logger)
        let group = stopOrder.serviceGroup(gracefulShutdownSignals: signals, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await escalation.watch { await group.triggerGracefulShutdown() } }
            tasks.addTask { try await group.run() }
            // The group returned (or threw): the deadline is moot.
            defer { tasks.cancelAll() }
            try await tasks.next()
        }
    }
}
