import Store
import Synchronization

/// Records attempts in group commits: the attempts that finish while one transaction is being written
/// go into the next, so a busy dispatcher commits (and syncs the disk) once per batch, not per attempt,
/// and an idle one at once. An attempt's caller waits for its own commit; a batch that fails is written
/// again an attempt at a time, and an attempt that still fails is not recorded (its claim lapses and the
/// message is sent again).
final class AttemptCommits: Sendable {
    private typealias Waiter = CheckedContinuation<Result<Bool, StoreError>, Never>
    private struct State {
        var waiting: [(record: AttemptRecord, waiter: Waiter)] = []
        var writing = false
    }

    static let maxBatch = 512
    private let store: WebhookStore
    private let disableAfterMs: Int64
    private let state = Mutex(State())

    init(store: WebhookStore, disableAfterMs: Int64) {
        self.store = store
        self.disableAfterMs = disableAfterMs
    }

    /// Whether this failure disabled the endpoint, once the attempt is committed.
    func finish(_ record: AttemptRecord) async throws(StoreError) -> Bool {
        let result = await withCheckedContinuation { (waiter: Waiter) in
            let leads = state.withLock { state -> Bool in
                state.waiting.append((record, waiter))
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if leads { Task { await self.write() } }
        }
        return try result.get()
    }

    /// Writes batches until none waits.
    private func write() async {
        while true {
            let batch = state.withLock { state -> [(record: AttemptRecord, waiter: Waiter)] in
                let batch = Array(state.waiting.prefix(Self.maxBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let disabled = try await store.finish(batch.map(\.record), disableAfterMs: disableAfterMs)
                for (index, one) in batch.enumerated() { one.waiter.resume(returning: .success(index < disabled.count && disabled[index])) }
            } catch {
                // One at a time: a batch that failed as a whole should not send every attempt in it again.
                for one in batch {
                    do {
                        one.waiter.resume(returning: .success(try await store.finish(one.record, disableAfterMs: disableAfterMs)))
                    } catch {
                        one.waiter.resume(returning: .failure(error))
                    }
                }
            }
        }
    }
}
