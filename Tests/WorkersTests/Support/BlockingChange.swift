import Dispatch
@testable import Entitlements

/// Holds a store's transaction open: its `change` goes last in a batch (a no-op, `.unchanged`) and
/// `hold`, given to `apply` as `beforeCommit`, waits until released with the whole batch written and
/// uncommitted. (The batch is applied in phases, so an update closure runs before anything is written:
/// it cannot be the place to wait.) It waits on the store's own queue, never on the concurrency pool.
final class BlockingChange: Sendable {
    let change: PurchaseChange
    let hold: @Sendable () -> Void
    private let releaseSignal = DispatchSemaphore(value: 0)
    private let reachedStream: AsyncStream<Void>

    init(eventId: String, key: PurchaseKey) {
        let (reached, reachedSignal) = AsyncStream.makeStream(of: Void.self)
        reachedStream = reached
        change = PurchaseChange(eventId: eventId, key: key) { _ in nil }
        hold = { [releaseSignal] in
            reachedSignal.yield()
            releaseSignal.wait()
        }
    }

    /// Returns once the transaction is waiting, everything before it written.
    func reached() async {
        for await _ in reachedStream { return }
    }

    func release() { releaseSignal.signal() }
}
