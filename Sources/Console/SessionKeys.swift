import Entitlements
import Rejections
import Synchronization
import Toolkit

/// The sessions' key, read from the store once (a key every replica and restart shares, so a session
/// outlives the process that signed it in), and the `OperatorSessions` made with it.
final class SessionKeys: Sendable {
    private let store: EntitlementStore
    private let make: @Sendable ([UInt8]) -> OperatorSessions
    private let made = Mutex<OperatorSessions?>(nil)

    init(store: EntitlementStore, make: @escaping @Sendable ([UInt8]) -> OperatorSessions) {
        self.store = store
        self.make = make
    }

    func sessions() async throws(Rejection) -> OperatorSessions {
        if let sessions = made.withLock({ $0 }) { return sessions }
        var candidate = [UInt8](repeating: 0, count: 32)
        for i in candidate.indices { candidate[i] = UInt8.random(in: .min ... .max) }
        let secret: String
        do {
            secret = try await store.serverKey(named: "console sessions", candidate: Digest.hex(candidate))
        } catch {
            throw Rejection(ConsoleReason.storeUnavailable, "the store cannot answer now; try again shortly", retryAfterSeconds: 5)
        }
        return made.withLock { made in
            if let made { return made }
            let sessions = make(Array(secret.utf8))
            made = sessions
            return sessions
        }
    }
}
