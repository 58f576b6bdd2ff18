import ServiceLifecycle

/// Lets senders load what they need at start-up (Google's key set), then flips `/readyz` to
/// failing as soon as shutdown starts, and holds the listener open for `drainDelay` so load
/// balancers stop sending before connections are refused. Listed last, so it is told first.
public struct ReadinessService: Service {
    let readiness: Readiness
    let drainDelay: Duration

    public init(readiness: Readiness, drainDelay: Duration = .zero) {
        self.readiness = readiness
        self.drainDelay = drainDelay
    }

    public func run() async throws {
        await readiness.warmUp()
        try? await gracefulShutdown()
        readiness.startDraining()
        if drainDelay > .zero { try? await Task.sleep(for: drainDelay) }
    }
}

/// Closes the spool last, once the server, the relay and the producer are done with it.
public struct SpoolService: Service {
    let spool: DeliverySpool

    public init(spool: DeliverySpool) { self.spool = spool }

    public func run() async throws {
        try? await gracefulShutdown()
        await spool.close()
    }
}
