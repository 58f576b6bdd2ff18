import Dispatch
import Store

/// A purchase change whose update waits until released: put last in a batch, it keeps the store's
/// transaction open with everything before it written and uncommitted. It waits on the store's own
/// queue, never on the concurrency pool.
final class BlockingChange: Sendable {
    let change: PurchaseChange
    private let releaseSignal = DispatchSemaphore(value: 0)
    private let reachedStream: AsyncStream<Void>

    init(eventId: String, key: PurchaseKey) {
        let (reached, reachedSignal) = AsyncStream.makeStream(of: Void.self)
        reachedStream = reached
        change = PurchaseChange(eventId: eventId, key: key) { [releaseSignal] _ in
            reachedSignal.yield()
            releaseSignal.wait()
            return nil
        }
    }

    /// Returns once the transaction is waiting in the update.
    func reached() async {
        for await _ in reachedStream { return }
    }

    func release() { releaseSignal.signal() }
}
