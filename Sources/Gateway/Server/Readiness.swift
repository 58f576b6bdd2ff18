import Events
import Foundation
import Kafka
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
public final class Readiness: Sendable {
    private struct State {
        var checkedAt: ContinuousClock.Instant?
        var reachable = false
        var draining = false
        var probe: Task<Bool, Never>?
    }

    private let producer: KafkaProducer
    private let spool: DeliverySpool?
    /// Free spool bytes below which it counts as full: room for one of the largest deliveries.
    private let spoolReserve: Int
    private let registry: SourceRegistry?
    private let state = Mutex(State())

    /// `registry`: senders that may report problems of their own (Google's key set not loaded).
    public init(producer: KafkaProducer, spool: DeliverySpool? = nil, spoolReserve: Int = 0, registry: SourceRegistry? = nil) {
        self.producer = producer
        self.spool = spool
        self.spoolReserve = spoolReserve
        self.registry = registry
    }

    /// Lets senders do their start-up work (fetch a key set) before the first request needs it.
    public func warmUp() async {
        _ = await registry?.readinessProblems(now: Self.now)
    }

    /// Marks the gateway as shutting down: `/readyz` fails first so load balancers stop sending.
    public func startDraining() { state.withLock { $0.draining = true } }

    public func check() async -> ReadinessReport {
        let spoolStats = spool?.stats
        enum Step { case answer(Bool), draining, wait(Task<Bool, Never>) }
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
        var report = ReadinessReport(ready: true, detail: "kafka reachable", kafkaReachable: reachable, spool: spoolStats)
        if let fatal = producer.fatalError {
            report.ready = false
            report.detail = "kafka producer failed fatally: \(fatal)"
            return report
        }
        if !reachable {
            if let spoolStats, spoolStats.maxBytes - spoolStats.bytes >= max(1, spoolReserve) {
                report.detail = "kafka unreachable; deliveries go to the spool (\(spoolStats.records) waiting)"
            } else {
                report.ready = false
                report.detail = spoolStats == nil ? "kafka unreachable and the spool is disabled" : "kafka unreachable and the spool is full"
                return report
            }
        } else if let spoolStats, spoolStats.records > 0 {
            report.detail = "kafka reachable; relaying the spool (\(spoolStats.records) waiting)"
        }
        let problems = await registry?.readinessProblems(now: Self.now) ?? []
        if !problems.isEmpty {
            report.ready = false
            report.detail = problems.joined(separator: "; ")
        }
        return report
    }

    private static var now: Timestamp {
        Timestamp.now
    }
}
