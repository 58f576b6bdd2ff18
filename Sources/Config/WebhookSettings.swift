/// `webhooks`: the merchant's endpoints that Tollgate delivers to (docs/outbound-webhooks.md).
/// Secrets and keys are kept as written; the Webhooks module parses them at start (a bad one stops the
/// process with its key's name).
public struct WebhookSettings: Sendable {
    public struct Endpoint: Sendable {
        public enum Kind: String, Sendable, CaseIterable {
            /// Tollgate's own CloudEvents, with the entitlement state after each.
            case events
            /// The sender's original request, for the deliveries Tollgate verified.
            case forward
        }

        /// Names the endpoint in the store, metrics and commands: `[a-z0-9-]`, 1 to 64 characters, unique.
        public var name: String
        public var url: String
        public var kind: Kind = .events
        /// `whsec_...` (one, or two during a rotation): each signs a `v1` signature.
        public var secrets: [String] = []
        /// `whsk_...` (at most two): each signs a `v1a` (Ed25519) signature.
        public var signingKeys: [String] = []
        /// Only these apps', environments' (`production`, `sandbox`), event types' (`subscription.renewed`)
        /// and senders' (`forward` endpoints) deliveries; empty: all.
        public var apps: Set<String> = []
        public var environments: Set<String> = []
        public var eventTypes: Set<String> = []
        public var senders: Set<String> = []
        public var timeoutMs = 15_000
        public var enabled = true
        /// Lets the endpoint's name resolve to a private network's address (10/8, 172.16/12, 192.168/16,
        /// fc00::/7, 100.64/10...): refused otherwise, so a merchant's URL cannot reach the network
        /// Tollgate runs in.
        public var allowPrivateNetwork = false

        public init(name: String, url: String) {
            self.name = name
            self.url = url
        }
    }

    public var endpoints: [Endpoint] = []
    /// Lets endpoints resolve to this machine (127.0.0.0/8, ::1): for tests and a local relay.
    public var allowLoopback = false
    /// The wait before each attempt of a message: the first is its first attempt (0: at once); after
    /// the last attempt fails the message is parked.
    public var retryScheduleMs: [Int] = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
    /// An endpoint whose every attempt failed for this long is disabled (`tollgate webhooks enable` resumes it).
    public var disableAfterSeconds = 432_000
    /// PEM certificates trusted for endpoints besides the system's roots (a private CA, tests).
    public var caFile: String?
    /// Deliveries in flight at once, across endpoints, per worker process.
    public var maxConcurrentDeliveries = 64
    /// How long delivered and parked messages are kept for `tollgate webhooks replay` and `attempts`.
    public var retentionDays = 7

    public init() {}
}
