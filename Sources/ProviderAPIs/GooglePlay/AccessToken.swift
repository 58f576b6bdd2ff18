import Foundation

/// An OAuth 2.0 access token and the time to stop using it. Never logged or described.
struct AccessToken: Sendable {
    let value: String
    /// Google's expiry less a margin, so a token is never sent in its last seconds.
    let refreshAfter: Date

    /// Refreshed this long before Google's expiry.
    static let margin: TimeInterval = 60
    /// Assumed when the answer has no `expires_in` (Google's tokens live an hour).
    static let defaultLifetime = 3600

    /// The token endpoint's answer (RFC 6749 section 5.1): `{access_token, expires_in, token_type}`.
    struct Response: Decodable {
        var access_token: String
        var expires_in: Int?
        var token_type: String?
    }
}
