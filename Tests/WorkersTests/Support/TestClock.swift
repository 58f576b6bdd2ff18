import Foundation

/// A wall clock the test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date()) { current = start }

    var now: Date { lock.withLock { current } }

    func advance(seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
}
