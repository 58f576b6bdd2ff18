import Dispatch
import Synchronization

/// Runs a sender's async `accept` to its end from libFuzzer's synchronous callback. Without an
/// injected fetcher the senders never wait on I/O, so this costs a task hop per input.
public enum FuzzAsync {
    public static func wait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        guard let value = result.withLock({ $0 }) else { fatalError("the task ended without a result") }
        return value
    }
}
