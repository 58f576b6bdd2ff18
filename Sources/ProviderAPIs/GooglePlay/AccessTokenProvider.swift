import Foundation
import Toolkit

/// The service account's access token: fetched with a signed JWT (OAuth 2.0 JWT bearer grant),
/// kept until a minute before it expires, and fetched once however many callers are waiting for it.
actor AccessTokenProvider {
    private let key: ServiceAccountKey
    private let tokenURL: String
    private let transport: PlayTransport
    private let now: @Sendable () -> Date

    private var token: AccessToken?
    /// The fetch under way: every caller that needs a token awaits this one (single flight).
    private var refresh: Task<Result<AccessToken, PlayAPIError>, Never>?

    init(key: ServiceAccountKey, tokenURL: String, transport: PlayTransport, now: @escaping @Sendable () -> Date) {
        self.key = key
        self.tokenURL = tokenURL
        self.transport = transport
        self.now = now
    }

    func current() async throws(PlayAPIError) -> AccessToken {
        if let token, now() < token.refreshAfter { return token }
        if let refresh { return try await refresh.value.get() }
        let task = Task { await self.fetch() }
        refresh = task
        let result = await task.value
        refresh = nil
        if case .success(let fresh) = result { token = fresh }
        return try result.get()
    }

    /// Forgets a token the API refused, unless another caller has already replaced it.
    func drop(_ rejected: AccessToken) {
        if token?.value == rejected.value { token = nil }
    }

    private func fetch() async -> Result<AccessToken, PlayAPIError> {
        let issuedAt = now()
        guard let assertion = ServiceAccountAssertion.make(key: key, audience: tokenURL, issuedAt: Int64(issuedAt.timeIntervalSince1970)) else {
            return .failure(transport.failure(.token, .signing, "cannot sign the JWT of \(key)"))
        }
        let form = "grant_type=" + PercentEncoding.encode(ServiceAccountAssertion.grantType) + "&assertion=" + PercentEncoding.encode(assertion)
        let request = HTTPFetchRequest(url: tokenURL, method: "POST",
                                       headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                                       body: Array(form.utf8), timeout: transport.timeout)
        let response: HTTPFetchResponse
        do {
            response = try await transport.exchange(.token, request)
        } catch {
            return .failure(error)
        }
        guard response.status == 200 else {
            return .failure(transport.failure(.token, .http(status: response.status),
                                              "the token endpoint refused \(key): HTTP \(response.status): \(GoogleErrorBody.summary(response.body))"))
        }
        guard let answer = try? JSONDecoder().decode(AccessToken.Response.self, from: Data(response.body)), !answer.access_token.isEmpty,
              answer.token_type.map({ $0.caseInsensitiveCompare("Bearer") == .orderedSame }) ?? true else {
            return .failure(transport.failure(.token, .decode, "the token endpoint's answer holds no bearer access token"))
        }
        let lifetime = max(answer.expires_in ?? AccessToken.defaultLifetime, 0)
        transport.logger.debug("fetched a Play API access token", metadata: [
            "service_account": .string(key.clientEmail), "expires_in": .stringConvertible(lifetime)])
        return .success(AccessToken(value: answer.access_token,
                                    refreshAfter: issuedAt.addingTimeInterval(TimeInterval(lifetime) - AccessToken.margin)))
    }
}
