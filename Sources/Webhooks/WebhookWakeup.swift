import Synchronization

/// Wakes the dispatcher as soon as there is something to deliver (the projection committed messages, a
/// delivery finished and its lane's next message is due), rather than at its next poll.
public final class WebhookWakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once if one came since the last wait), or after `timeout`.
    func wait(upTo timeout: Duration) async {
        let timer = Task { [weak self] in
            // Cancelled (a signal came first): no signal of its own, or the next wait would not wait.
            do {
                try await Task.sleep(for: timeout)
                self?.signal()
            } catch {}
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }
}
