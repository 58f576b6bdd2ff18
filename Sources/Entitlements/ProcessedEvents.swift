import Synchronization

/// Tells a request waiting for its events (a reported purchase, a refresh: answered once the projection
/// applied them) that the projection of this process processed them, the moment its transaction
/// committed, instead of the request polling the store. The projection of another replica (the events'
/// partition assigned elsewhere) signals nothing here: a waiter also asks the store, seldom, so it
/// learns from there (docs/purchases.md says the design).
public final class ProcessedEvents: Sendable {
    private struct Waiter {
        var pending: Set<String>
        var continuation: CheckedContinuation<Bool, Never>?
        /// Signalled (or given up) before its continuation was stored.
        var finished: Bool?
    }

    private struct State {
        var next = 0
        var waiters: [Int: Waiter] = [:]
        /// Event id -> the waiters waiting for it.
        var byEvent: [String: Set<Int>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Called by the projection once its transaction committed: the events it processed (applied, left
    /// unchanged, or duplicates).
    public func processed(_ eventIds: some Sequence<String>) {
        let resumed: [CheckedContinuation<Bool, Never>] = state.withLock { state in
            guard !state.byEvent.isEmpty else { return [] }
            var done: [CheckedContinuation<Bool, Never>] = []
            for id in eventIds {
                guard let waiting = state.byEvent.removeValue(forKey: id) else { continue }
                for key in waiting {
                    guard var waiter = state.waiters[key] else { continue }
                    waiter.pending.remove(id)
                    if waiter.pending.isEmpty {
                        if let continuation = waiter.continuation {
                            done.append(continuation)
                            state.waiters[key] = nil
                        } else {
                            waiter.finished = true
                            state.waiters[key] = waiter
                        }
                    } else {
                        state.waiters[key] = waiter
                    }
                }
            }
            return done
        }
        for continuation in resumed { continuation.resume(returning: true) }
    }

    /// A wait registered before its events are published: the projection's signal cannot come before it.
    public struct Expectation: Sendable {
        fileprivate let key: Int
        fileprivate let ids: [String]
    }

    /// Registers a wait for `eventIds` before they are published, so the projection's signal needs no
    /// look at the store to be caught; `wait(_:...)` or `cancel(_:)` ends it.
    public func expect(_ eventIds: [String]) -> Expectation {
        Expectation(key: register(Set(eventIds)), ids: eventIds)
    }

    /// Ends an expectation nobody will wait for (its events were not published).
    public func cancel(_ expectation: Expectation) {
        unregister(expectation.key)
    }

    /// The waits registered now (for tests).
    var registered: Int { state.withLock { $0.waiters.count } }

    /// Waits until every event of an expectation is processed, or `deadline`: told by the signal, and
    /// asking the store (`processedNow`: which are processed, by another replica's projection) every
    /// `pollEvery` while the signal has not come.
    public func wait(_ expectation: Expectation, until deadline: ContinuousClock.Instant, pollEvery: Duration,
                     processedNow: @escaping @Sendable ([String]) async -> Set<String>) async -> Bool {
        await wait(expectation, until: deadline, pollEvery: pollEvery, askFirst: false, processedNow: processedNow)
    }

    /// Waits until every one of `eventIds` is processed, or `deadline`. `processedNow` asks the store which
    /// are processed already (before the wait began, or by another replica); it is asked at once, then every
    /// `pollEvery` while the signal has not come.
    public func wait(for eventIds: [String], until deadline: ContinuousClock.Instant, pollEvery: Duration,
                     processedNow: @escaping @Sendable ([String]) async -> Set<String>) async -> Bool {
        await wait(expect(eventIds), until: deadline, pollEvery: pollEvery, askFirst: true, processedNow: processedNow)
    }

    private func wait(_ expectation: Expectation, until deadline: ContinuousClock.Instant, pollEvery: Duration, askFirst: Bool,
                      processedNow: @escaping @Sendable ([String]) async -> Set<String>) async -> Bool {
        let key = expectation.key
        defer { unregister(key) }
        guard !expectation.ids.isEmpty else { return true }
        var remaining = Set(expectation.ids)
        var ask = askFirst
        while true {
            if ask {
                // After registering: an event processed between the store's answer and the wait is signalled, not missed.
                remaining.subtract(await processedNow(Array(remaining)))
                if remaining.isEmpty { return true }
            }
            ask = true
            let now = ContinuousClock.now
            guard now < deadline else { return false }
            if await signalled(key, until: min(deadline, now + pollEvery)) { return true }
        }
    }

    private func register(_ ids: Set<String>) -> Int {
        state.withLock { state in
            let key = state.next
            state.next += 1
            state.waiters[key] = Waiter(pending: ids, continuation: nil, finished: nil)
            for id in ids { state.byEvent[id, default: []].insert(key) }
            return key
        }
    }

    private func unregister(_ key: Int) {
        state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: key) else { return }
            for id in waiter.pending {
                state.byEvent[id]?.remove(key)
                if state.byEvent[id]?.isEmpty == true { state.byEvent[id] = nil }
            }
        }
    }

    /// Whether the waiter's events were all signalled before `until`.
    private func signalled(_ key: Int, until: ContinuousClock.Instant) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.suspend(key) }
            group.addTask {
                try? await Task.sleep(until: until)
                self.giveUp(key)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            self.giveUp(key)
            await group.waitForAll()
            return first
        }
    }

    /// Suspends until the waiter is signalled (true) or given up for now (false).
    private func suspend(_ key: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            let now: Bool? = state.withLock { state in
                guard var waiter = state.waiters[key] else { return true }
                if let finished = waiter.finished {
                    waiter.finished = nil
                    state.waiters[key] = finished ? nil : waiter
                    return finished
                }
                waiter.continuation = continuation
                state.waiters[key] = waiter
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Wakes a suspended waiter with false (its poll is due, or the wait is over); one not suspended yet
    /// finds it on suspending.
    private func giveUp(_ key: Int) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard var waiter = state.waiters[key] else { return nil }
            if let continuation = waiter.continuation {
                waiter.continuation = nil
                state.waiters[key] = waiter
                return continuation
            }
            if waiter.finished == nil { waiter.finished = false }
            state.waiters[key] = waiter
            return nil
        }
        continuation?.resume(returning: false)
    }
}
