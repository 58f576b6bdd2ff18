/// One sender's deliveries as the gateway receives them: each index gives a different delivery
/// (its own event id), so the gateway's deduplication never answers from memory.
protocol SenderTraffic: Sendable {
    /// The source name used in the gateway's configuration and in the results (`apple`, ...).
    var source: String { get }
    /// Signature checks the gateway makes per delivery, for the ratio to the raw verify rate.
    var checksPerRequest: Int { get }
    /// The algorithm of those checks (`ES256`, `RS256`), nil for shared-secret senders.
    var algorithm: String? { get }
    /// Delivery `index` of the run `run` (a short random tag, so two runs never share ids).
    func request(_ index: Int, run: String) -> RequestParts
}

/// What a sender posts: the path, its own headers and the body, exactly as signed.
struct RequestParts {
    var path: String
    var headers: [(String, String)]
    var body: [UInt8]
}
