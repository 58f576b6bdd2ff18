import Foundation
import Synchronization

/// A dedicated OS thread that runs `body` until stopped. librdkafka's blocking polls run here,
/// never on the Swift concurrency pool or a NIO event loop.
final class PollThread: Sendable {
    private let stopped = AtomicFlag()
    private let finished = DispatchSemaphore(value: 0)

    /// `body` is called repeatedly; it should block for a bounded time (e.g. `rd_kafka_poll(rk, 100)`).
    init(name: String, body: @escaping @Sendable () -> Void) {
        let thread = Thread { [stopped, finished] in
            while !stopped.isSet { body() }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the loop and waits for the current iteration to end.
    func stop() {
        if stopped.setOnce() { finished.wait() }
    }
}

/// A one-way boolean shared across threads.
final class AtomicFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .releasing) }
    /// Sets the flag; true if this call was the one that set it.
    func setOnce() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
}
