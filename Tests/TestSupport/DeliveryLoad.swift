import Foundation
import Synchronization

/// Steady traffic of unique deliveries from a few concurrent senders that behave like real ones: a
/// delivery is retried until it gets a 2xx (after a 503, a 429, a refused connection or a reset),
/// pausing between attempts. It records which ids were acknowledged, so a test can check that every
/// one of them, and no other, reached the topic.
public final class DeliveryLoad: Sendable {
    /// What a run did, for assertions and for docs/durability.md.
    public struct Report: Sendable, CustomStringConvertible {
        public var sent: Int
        public var acknowledged: Set<String>
        /// Ids still without a 2xx when the load stopped (their sender would go on retrying).
        public var unacknowledged: Set<String>
        public var attempts: Int
        public var statuses: [Int: Int]
        public var connectionFailures: Int

        public var description: String {
            let codes = statuses.keys.sorted().map { "\($0)x\(statuses[$0] ?? 0)" }.joined(separator: " ")
            return "sent=\(sent) acknowledged=\(acknowledged.count) unacknowledged=\(unacknowledged.count) attempts=\(attempts) statuses=[\(codes)] connection_failures=\(connectionFailures)"
        }
    }

    /// One delivery: its expected `ce_id` and its request body.
    public typealias Delivery = (id: String, body: String)

    private struct State {
        var next = 0
        var stopping = false
        var report = Report(sent: 0, acknowledged: [], unacknowledged: [], attempts: 0, statuses: [:], connectionFailures: 0)
    }

    private let state = Mutex(State())
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let make: @Sendable (Int) throws -> Delivery
    /// Posts a body; returns the HTTP status, or nil when no response came (connection refused or cut).
    private let post: @Sendable (String) async -> Int?
    private let pause: Duration

    public init(pause: Duration = .milliseconds(20), make: @escaping @Sendable (Int) throws -> Delivery,
                post: @escaping @Sendable (String) async -> Int?) {
        self.pause = pause
        self.make = make
        self.post = post
    }

    public func start(senders: Int) {
        let started = (0..<senders).map { _ in Task { await self.send() } }
        tasks.withLock { $0 += started }
    }

    /// Stops starting new deliveries and gives the ones in progress until `deadline` to get their 2xx.
    public func stop(retryingFor deadline: Duration = .seconds(60)) async -> Report {
        state.withLock { $0.stopping = true }
        let running = tasks.withLock { $0 }
        let timer = Task {
            try? await Task.sleep(for: deadline)
            for task in running { task.cancel() }
        }
        for task in running { await task.value }
        timer.cancel()
        return state.withLock { $0.report }
    }

    /// Waits until `count` deliveries were acknowledged (or `timeout` passes): lets a test put its fault
    /// in the middle of the load rather than before it.
    public func waitForAcknowledged(_ count: Int, timeout: Duration = .seconds(60)) async {
        let until = ContinuousClock.now + timeout
        while state.withLock({ $0.report.acknowledged.count }) < count, ContinuousClock.now < until {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    public var acknowledgedCount: Int { state.withLock { $0.report.acknowledged.count } }

    private func send() async {
        while !Task.isCancelled {
            let index: Int? = state.withLock { state in
                if state.stopping { return nil }
                state.next += 1
                state.report.sent += 1
                return state.next
            }
            guard let index else { return }
            guard let delivery = try? make(index) else { continue }
            state.withLock { _ = $0.report.unacknowledged.insert(delivery.id) }
            // Like a real sender, retry until acknowledged; only the test's end (cancellation) stops it.
            while !Task.isCancelled {
                let status = await post(delivery.body)
                let acknowledged = state.withLock { state in
                    state.report.attempts += 1
                    if let status { state.report.statuses[status, default: 0] += 1 } else { state.report.connectionFailures += 1 }
                    guard let status, (200..<300).contains(status) else { return false }
                    state.report.unacknowledged.remove(delivery.id)
                    state.report.acknowledged.insert(delivery.id)
                    return true
                }
                if acknowledged { break }
                try? await Task.sleep(for: .milliseconds(100))
            }
            try? await Task.sleep(for: pause)
        }
    }
}
