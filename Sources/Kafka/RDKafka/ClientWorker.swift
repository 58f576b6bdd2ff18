import Foundation
import Synchronization

/// The one place blocking librdkafka calls run: each client owns one `ClientWorker`, a dedicated OS
/// thread that runs the client's jobs one after the other. Async callers suspend on a continuation
/// that the job resumes, so no blocking call ever runs on the Swift concurrency pool or a NIO event
/// loop (`tollgate` makes NIO's event loops the global executor: a blocked task there stalls HTTP).
///
/// A client that must serve librdkafka between jobs (the producer's delivery reports) passes `idle`,
/// a bounded blocking wait (`rd_kafka_poll(rk, 100)`), and `wake`, which interrupts it
/// (`rd_kafka_yield`) so a submitted job starts at once.
final class ClientWorker: Sendable {
    private struct State {
        /// Run jobs are set to nil at once: a job captures its client, which owns this worker.
        var jobs: [(@Sendable () -> Void)?] = []
        var head = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let wake: @Sendable () -> Void
    private let threadKey: String

    init(name: String, idle: (@Sendable () -> Void)? = nil, wake: @escaping @Sendable () -> Void = {}) {
        self.wake = wake
        self.threadKey = "tollgate.kafka.worker.\(UInt64.random(in: 0...UInt64.max))"
        // The thread keeps the worker alive until `stop` ends it.
        let thread = Thread { [self] in
            Thread.current.threadDictionary[threadKey] = true
            loop(idle: idle)
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    private func loop(idle: (@Sendable () -> Void)?) {
        while true {
            if let idle, available.wait(timeout: .now()) != .success {
                idle()
                continue
            }
            if idle == nil { available.wait() }
            let job: (@Sendable () -> Void)? = state.withLock { state in
                guard state.head < state.jobs.count else { return nil }
                let job = state.jobs[state.head]
                state.jobs[state.head] = nil
                state.head += 1
                if state.head > 64, state.head * 2 > state.jobs.count {
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                return job
            }
            // nil: the stop signal, sent after every job accepted before it.
            guard let job else { return }
            job()
        }
    }

    /// Queues `job` behind the jobs already queued. False once the worker is stopping.
    @discardableResult
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            available.signal()
            wake()
        }
        return accepted
    }

    /// Runs `body` on the worker and hands its result back; `whenStopped` if the worker no longer runs jobs.
    func run<T: Sendable>(whenStopped: T, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            if !submit({ continuation.resume(returning: body()) }) {
                continuation.resume(returning: whenStopped)
            }
        }
    }

    /// True while jobs wait behind the running one: a long job (a consumer poll) gives way to them.
    var hasWaitingJobs: Bool { state.withLock { $0.head < $0.jobs.count } }

    /// True on the worker's own thread.
    var isCurrent: Bool { Thread.current.threadDictionary[threadKey] != nil }

    /// Lets the queued jobs run, then ends the thread; waits for that unless called from a job on the
    /// worker itself (a client released by its last job). Later `submit`s are refused.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        available.signal()
        wake()
        if !isCurrent { finished.wait() }
    }
}
