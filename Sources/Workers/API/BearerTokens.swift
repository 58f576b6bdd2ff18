import Config
import HTTPTypes
import Hummingbird
import Toolkit

/// The bearer tokens of `api.tokens`, as every API of the workers checks them: one `Authorization`
/// header (with two, a proxy and this check could each read a different one), compared in constant time.
struct BearerTokens: Sendable {
    let tokens: [APIToken]

    /// The configured token the request carries, or nil.
    func match(_ request: Request) -> APIToken? {
        let credentials = request.headers[values: .authorization]
        guard credentials.count == 1, let header = credentials.first, header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return nil
        }
        return ConstantTime.firstMatch(String(header.dropFirst(7)), in: tokens.map(\.token)).map { tokens[$0] }
    }

    static var challenge: HTTPFields {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Bearer"
        return headers
    }
}
