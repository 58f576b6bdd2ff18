@testable import Entitlements
import Synchronization
import Testing

/// The projection's signal to the requests waiting for their events (docs/purchases.md): told at once,
/// the store asked for what was processed before the wait or elsewhere, the deadline kept.
@Suite("Processed events signal")
struct ProcessedEventsTests {
    /// A count the waiters' store closures share.
    final class Count: Sendable {
        private let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var now: Int { value.withLock { $0 } }
    }

    @Test("a waiter is told the moment its last event is processed, without asking the store again")
    func signalled() async {
        let signal = ProcessedEvents()
        let asked = Count()
        let started = ContinuousClock.now
        async let answered = signal.wait(for: ["a", "b"], until: .now + .seconds(30), pollEvery: .seconds(20)) { _ in
            asked.add()
            return []
        }
        // Once it waits (it asked the store once), the projection commits one event, then the other.
        while asked.now == 0 { await Task.yield() }
        signal.processed(["a", "unrelated"])
        signal.processed(["b"])
        #expect(await answered)
        #expect(ContinuousClock.now - started < .seconds(20), "answered by the signal, not the next poll")
        #expect(asked.now == 1)
    }

    @Test("events processed before the wait (or by another replica) are found in the store; the poll finds them later too")
    func storeAnswers() async {
        let signal = ProcessedEvents()
        #expect(await signal.wait(for: ["done"], until: .now + .seconds(5), pollEvery: .milliseconds(10)) { _ in ["done"] })
        let polls = Count()
        let answered = await signal.wait(for: ["elsewhere"], until: .now + .seconds(30), pollEvery: .milliseconds(10)) { _ in
            // Another replica's projection applies it by the third look.
            polls.add()
            return polls.now >= 3 ? ["elsewhere"] : []
        }
        #expect(answered && polls.now == 3)
    }

    @Test("the wait ends false at its deadline, and a late signal reaches no one")
    func deadline() async {
        let signal = ProcessedEvents()
        let started = ContinuousClock.now
        #expect(await signal.wait(for: ["never"], until: .now + .milliseconds(150), pollEvery: .milliseconds(40)) { _ in [] } == false)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        signal.processed(["never"])
        #expect(await signal.wait(for: [], until: .now, pollEvery: .milliseconds(10)) { _ in [] })
    }

    @Test("a hundred concurrent waiters, each told of its own event")
    func concurrent() async {
        let signal = ProcessedEvents()
        let waiting = Count()
        await withTaskGroup(of: Bool.self) { group in
            for n in 0..<100 {
                group.addTask {
                    await signal.wait(for: ["e\(n)"], until: .now + .seconds(30), pollEvery: .seconds(20)) { _ in
                        waiting.add()
                        return []
                    }
                }
            }
            while waiting.now < 100 { await Task.yield() }
            signal.processed((0..<100).map { "e\($0)" })
            var answered = 0
            for await done in group where done { answered += 1 }
            #expect(answered == 100)
        }
    }

    @Test("an expectation registered before publishing catches a signal that comes before the wait, and asks no store")
    func expectedBeforePublishing() async {
        let signal = ProcessedEvents()
        let asked = Count()
        let early = signal.expect(["p1", "p2"])
        // The projection applies both before the request begins to wait.
        signal.processed(["p1", "p2"])
        #expect(await signal.wait(early, until: .now + .seconds(30), pollEvery: .seconds(20)) { _ in
            asked.add()
            return []
        })
        #expect(asked.now == 0)
        // Signalled while waiting: the store is not asked either.
        let later = signal.expect(["p3"])
        async let answered = signal.wait(later, until: .now + .seconds(30), pollEvery: .seconds(20)) { _ in
            asked.add()
            return []
        }
        signal.processed(["p3"])
        #expect(await answered)
        #expect(asked.now == 0)
        // Not signalled: the store is asked once the poll is due, and answers.
        let elsewhere = signal.expect(["p4"])
        #expect(await signal.wait(elsewhere, until: .now + .seconds(30), pollEvery: .milliseconds(20)) { _ in
            asked.add()
            return ["p4"]
        })
        #expect(asked.now == 1)
        #expect(signal.registered == 0, "every ended wait is unregistered")
    }

    @Test("a cancelled expectation (its events not published) is forgotten")
    func cancelled() async {
        let signal = ProcessedEvents()
        let dropped = signal.expect(["x", "y"])
        #expect(signal.registered == 1)
        signal.cancel(dropped)
        #expect(signal.registered == 0)
        signal.processed(["x"])
        #expect(signal.registered == 0)
    }
}
