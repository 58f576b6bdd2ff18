import Events
import Foundation
import Kafka
import ServiceLifecycle
import Spool
import Synchronization
import Verifiers

/// What `/readyz` answers: whether the gateway can make events durable now (Kafka acknowledges, or
/// the spool has room) and its senders can verify, with the cluster's and the spool's state.
public struct ReadinessReport: Sendable {
    public var ready: Bool
    public var detail: String
    /// Nil while shutting down (no probe is made then).
    public var kafkaReachable: Bool?
    public var spool: SpoolStats?
}

/// Whether the gateway can make events durable and its senders can verify right now; answers `/readyz`.
/// One cluster probe at a time, its answer kept for a second, so a flood of `/readyz` calls
/// (the port is public) costs one metadata request per second, not one thread each.
///
/// As a `Service` it brackets the gateway's life: at start it warms what the first deliveries would
/// otherwise wait for (the topics' metadata in the producer, the senders' key sets) and, while Kafka is
/// reachable, `/readyz` fails until that is done or `warmUpTimeout` has passed (with Kafka unreachable
/// it judges as usual: the spool takes deliveries); on graceful shutdown `/readyz` fails again
/// and the service holds for `drainDelay`, so load balancers stop sending before the listener closes.
public final class Readiness: Service, Sendable {
    private enum WarmUp {
        case warming
        case warm
        /// The warm-up failed or timed out: readiness is then judged as usual, its detail says why.
        case incomplete(String)
    }

    private struct State {
        var checkedAt: ContinuousClock.Instant?
        var reachable = false
        var draining = false
        var probe: Task<Bool, Never>?
        var warmUp = WarmUp.warming
        var warmUpWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let producer: KafkaProducer
    private let spool: DeliverySpool?
    /// Free spool bytes below which it counts as full: room for one of the largest deliveries.
    private let spoolReserve: Int
    private let registry: SourceRegistry?
    /// The topics the gateway publishes to, whose metadata the producer fetches before `/readyz` succeeds.
    private let topics: [String]
    private let warmUpTimeout: Duration
    private let drainDelay: Duration
    private let state = Mutex(State())

    /// `registry`: senders that may report problems of their own (Google's key set not loaded).
    public init(producer: KafkaProducer, spool: DeliverySpool? = nil, spoolReserve: Int = 0, registry: SourceRegistry? = nil,
                topics: [String] = [], warmUpTimeout: Duration = .seconds(10), drainDelay: Duration = .zero) {
        self.producer = producer
        self.spool = spool
        self.spoolReserve = spoolReserve
        self.registry = registry
        self.topics = topics
        self.warmUpTimeout = warmUpTimeout
        self.drainDelay = drainDelay
    }

    public func run() async throws {
        // Beside, not before, waiting for shutdown: with Kafka down its requests block until their
        // timeout, and a SIGTERM then must not wait for them.
        let warming = Task { await warmUp() }
        try? await gracefulShutdown()
        warming.cancel()
        startDraining()
        if drainDelay > .zero { try? await Task.sleep(for: drainDelay) }
    }

    /// Fetches the topics' metadata (each request bounded by what is left of `warmUpTimeout`) while the
    /// senders do their start-up work (fetch a key set), then lets `/readyz` judge as usual.
    func warmUp() async {
        async let senders: Void = { _ = await registry?.readinessProblems(now: Self.now) }()
        let deadline = ContinuousClock.now + warmUpTimeout
        var outcome = WarmUp.warm
        do {
            for topic in topics where !Task.isCancelled {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw KafkaError(kind: .timedOut, message: "not finished within \(warmUpTimeout)") }
                try await producer.fetchMetadata(topics: [topic], timeoutMs: Int32(clamping: left.components.seconds * 1_000
                    + left.components.attoseconds / 1_000_000_000_000_000))
            }
            if Task.isCancelled { outcome = .incomplete("kafka warm-up stopped by the shutdown") }
        } catch {
            outcome = .incomplete("kafka warm-up incomplete: \(error)")
        }
        await senders
        let waiters = state.withLock { state in
            state.warmUp = outcome
            defer { state.warmUpWaiters = [] }
            return state.warmUpWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the warm-up has finished or given up (for harnesses that start a gateway and wait for it).
    public func warmedUp() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let warming = state.withLock { state in
                guard case .warming = state.warmUp else { return false }
                state.warmUpWaiters.append(continuation)
                return true
            }
            if !warming { continuation.resume() }
        }
    }

    /// Marks the gateway as shutting down: `/readyz` fails first so load balancers stop sending.
    public func startDraining() { state.withLock { $0.draining = true } }

    public func check() async -> ReadinessReport {
        let spoolStats = spool?.stats
        enum Step { case answer(Bool), draining, wait(Task<Bool, Never>) }
        let (warming, warmUpProblem): (Bool, String?) = state.withLock { state in
            switch state.warmUp {
            case .warming: (true, nil)
            case .warm: (false, nil)
            case .incomplete(let problem): (false, problem)
            }
        }
        let step: Step = state.withLock { state in
            if state.draining { return .draining }
            if let at = state.checkedAt, ContinuousClock.now - at < .seconds(1) { return .answer(state.reachable) }
            if let probe = state.probe { return .wait(probe) }
            let probe = Task { [producer] in await producer.isClusterReachable(timeoutMs: 1_000) }
            state.probe = probe
            return .wait(probe)
        }
        let reachable: Bool
        switch step {
        case .draining: return ReadinessReport(ready: false, detail: "shutting down", kafkaReachable: nil, spool: spoolStats)
        case .answer(let cached): reachable = cached
        case .wait(let probe):
            reachable = await probe.value
            state.withLock { state in
                state.probe = nil
                state.checkedAt = .now
                state.reachable = reachable
            }
        }
        // Kafka unreachable: the warm-up cannot finish soon, and the spool (if it has room) takes deliveries now.
        if warming, reachable {
            return ReadinessReport(ready: false, detail: "warming up: fetching the topics' metadata from Kafka", kafkaReachable: true,
                                   spool: spoolStats)
        }
        var report = judge(reachable: reachable, spoolStats: spoolStats)
        if report.ready {
            let problems = await registry?.readinessProblems(now: Self.now) ?? []
            if !problems.isEmpty {
                report.ready = false
                report.detail = problems.joined(separator: "; ")
            }
        }
        if let warmUpProblem { report.detail += " (\(warmUpProblem))" }
        return report
    }

    /// The answer from the cluster probe, the producer's state and the spool's room.
    private func judge(reachable: Bool, spoolStats: SpoolStats?) -> ReadinessReport {
        var report = ReadinessReport(ready: true, detail: "kafka reachable", kafkaReachable: reachable, spool: spoolStats)
        if let fatal = producer.fatalError {
            report.ready = false
            report.detail = "kafka producer failed fatally: \(fatal)"
            return report
        }
        if !reachable {
            if let spoolStats, hasRoom(spoolStats) {
                report.detail = "kafka unreachable; deliveries go to the spool (\(spoolStats.records) waiting)"
            } else {
                report.ready = false
                report.detail = spoolStats == nil ? "kafka unreachable and the spool is disabled" : "kafka unreachable and the spool is full"
                return report
            }
        } else if let full = producer.config.client.mockLogGuard?.refusals(topics: topics), !full.isEmpty {
            // Refused as a broker that does not acknowledge: the spool takes deliveries while it has room.
            let why = "the embedded broker is near what it keeps: " + full.joined(separator: "; ")
            if let spoolStats, hasRoom(spoolStats) {
                report.detail = "\(why); deliveries go to the spool (\(spoolStats.records) waiting) until the workers catch up"
            } else {
                report.ready = false
                report.detail = "\(why); the spool is \(spoolStats == nil ? "disabled" : "full")"
            }
        } else if let spoolStats, spoolStats.records > 0 {
            report.detail = "kafka reachable; relaying the spool (\(spoolStats.records) waiting)"
        }
        return report
    }

    /// Room for one of the largest deliveries.
    private func hasRoom(_ spool: SpoolStats) -> Bool {
        spool.maxBytes - spool.bytes >= max(1, spoolReserve)
    }

    private static var now: Timestamp {
        Timestamp.now
    }
}
