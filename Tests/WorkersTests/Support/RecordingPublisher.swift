import Events
import Merchant
import Synchronization

/// An `EventPublisher` without a broker: keeps what it is given (and hands it on to `forward`, a test's
/// broker, when given), or refuses it as a broker that cannot take it would.
final class RecordingPublisher: EventPublisher {
    struct Refused: Error {}

    let events = Mutex<[NormalizedEvent]>([])
    private let refuses: Bool
    private let forward: (@Sendable ([NormalizedEvent]) async throws -> Void)?

    init(refuses: Bool = false, forward: (@Sendable ([NormalizedEvent]) async throws -> Void)? = nil) {
        self.refuses = refuses
        self.forward = forward
    }

    func publish(_ events: [NormalizedEvent]) async throws {
        if refuses { throw Refused() }
        self.events.withLock { $0 += events }
        try await forward?(events)
    }
}
