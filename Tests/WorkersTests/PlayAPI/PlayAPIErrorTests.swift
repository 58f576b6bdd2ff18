import Foundation
import Merchant
import ProviderAPIs
import TestSupport
import Testing
import Workers

/// How the client's failures are classed: transient ones go to the retry path, permanent ones are
/// given up on; none of their messages shows a credential.
@Suite("Play API: failures")
struct PlayAPIErrorTests {
    static let path = PlayHarness.subscriptionPath("purchase-token")

    func subscriptionError(_ h: PlayHarness) async -> PlayAPIError? {
        await #expect(throws: PlayAPIError.self) {
            try await h.client.subscription(packageName: PlayHarness.package, token: "purchase-token")
        }
    }

    /// No access token, key material or PEM text in what is logged or shown.
    func expectNoSecrets(_ error: PlayAPIError?, _ h: PlayHarness) {
        let text = error.map { "\($0) \($0.message)" } ?? ""
        for token in h.fake.issuedTokens { #expect(!text.contains(token)) }
        #expect(!text.contains("ya29.") && !text.contains("PRIVATE KEY") && !text.contains("Bearer"))
    }

    @Test("503 and 429 are transient", arguments: [503, 500, 429])
    func overloaded(status: Int) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.script(Self.path, .reply(.json(status, #"{"error": {"code": \#(status), "message": "Backend Error", "status": "UNAVAILABLE"}}"#)))

        let error = await subscriptionError(h)
        #expect(error?.kind == .http(status: status))
        #expect(error?.kindLabel == "http_\(status)")
        #expect(error?.call == .subscription)
        #expect(error?.isTransient == true)
        #expect(error?.message.contains("UNAVAILABLE: Backend Error") == true)
        expectNoSecrets(error, h)
    }

    @Test("404, 400 and undecodable answers are permanent")
    func permanent() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }

        // Nothing stored: the fake answers Google's 404.
        var error = await subscriptionError(h)
        #expect(error?.kind == .http(status: 404) && error?.isTransient == false)
        #expect(error?.message.contains("NOT_FOUND") == true)

        h.fake.script(Self.path, .reply(.json(400, #"{"error": {"code": 400, "message": "Invalid Value", "status": "INVALID_ARGUMENT"}}"#)))
        error = await subscriptionError(h)
        #expect(error?.kind == .http(status: 400) && error?.isTransient == false)

        h.fake.script(Self.path, .reply(LoopbackHTTPServer.Reply(status: 200, body: Array("<html>Service unavailable</html>".utf8))))
        error = await subscriptionError(h)
        #expect(error?.kind == .decode && error?.isTransient == false)
        #expect(error?.kindLabel == "decode")

        // JSON, but a time that is not RFC 3339: refused rather than read as "no expiry".
        h.fake.script(Self.path, .reply(.json(200, #"{"lineItems": [{"productId": "p", "expiryTime": "next Tuesday"}]}"#)))
        error = await subscriptionError(h)
        #expect(error?.kind == .decode && error?.isTransient == false)
        #expect(error?.message.contains("expiryTime") == true)

        // A product whose purchaseCompletionTime is not RFC 3339.
        h.fake.script(PlayHarness.productPath("purchase-token"), .reply(.json(200, #"{"purchaseCompletionTime": "yesterday"}"#)))
        let productError = await #expect(throws: PlayAPIError.self) {
            try await h.client.product(packageName: PlayHarness.package, token: "purchase-token")
        }
        #expect(productError?.kind == .decode && productError?.call == .product)
        expectNoSecrets(productError, h)
    }

    @Test("401 again after a new token, and 403, are transient")
    func unauthorized() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let refused = FakeGooglePlay.Scripted.reply(.json(401, #"{"error": {"code": 401, "message": "Invalid Credentials", "status": "UNAUTHENTICATED"}}"#))
        h.fake.script(Self.path, refused, refused)

        var error = await subscriptionError(h)
        #expect(error?.kind == .http(status: 401) && error?.isTransient == true)
        #expect(h.fake.tokenRequests == 2)
        #expect(h.fake.apiTargets.count == 2)
        expectNoSecrets(error, h)

        h.fake.script(Self.path, .reply(.json(403, #"{"error": {"code": 403, "message": "The current user has insufficient permissions to perform the requested operation.", "status": "PERMISSION_DENIED"}}"#)))
        error = await subscriptionError(h)
        #expect(error?.kind == .http(status: 403) && error?.isTransient == true)
        #expect(h.fake.tokenRequests == 2)  // 403 is not retried: a new token has the same grants
    }

    @Test("an endpoint that never answers is a transient timeout, within the configured timeout")
    func timeout() async throws {
        let h = try await PlayHarness.start(timeout: .milliseconds(500))
        defer { h.stop() }
        // The access token first, so the time measured is the hanging call's alone.
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath("warm-up"))
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: "warm-up")
        h.fake.script(Self.path, .hang)

        let clock = ContinuousClock()
        let start = clock.now
        let error = await subscriptionError(h)
        let elapsed = clock.now - start
        #expect(error?.kind == .timeout && error?.kindLabel == "timeout", "\(String(describing: error)) after \(elapsed)")
        #expect(error?.isTransient == true)
        #expect(elapsed >= .milliseconds(500) && elapsed < .seconds(3), "\(elapsed)")

        // The token endpoint too.
        let tokenTimeout = try await PlayHarness.start(timeout: .milliseconds(500))
        defer { tokenTimeout.stop() }
        tokenTimeout.fake.scriptToken(.hang)
        let tokenError = await subscriptionError(tokenTimeout)
        #expect(tokenError?.call == .token && tokenError?.kind == .timeout && tokenError?.isTransient == true)
    }

    @Test("a refused connection is a transient network error")
    func unreachable() async throws {
        let h = try await PlayHarness.start()
        h.stop()
        let error = await subscriptionError(h)
        #expect(error?.call == .token && error?.kind == .network && error?.isTransient == true, "\(String(describing: error))")
    }

    @Test("token endpoint failures are transient: an unknown key, an outage, a garbled answer")
    func tokenEndpoint() async throws {
        let stranger = try await TestServiceAccount.otherKey.value
        let h = try await PlayHarness.start(clientKey: stranger)
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: Self.path)

        var error = await subscriptionError(h)
        #expect(error?.call == .token && error?.kind == .http(status: 400) && error?.isTransient == true)
        #expect(error?.message.contains("invalid_grant: Invalid JWT Signature.") == true)
        #expect(h.fake.jwtProblems == ["signature"])
        #expect(h.fake.apiTargets.isEmpty)
        expectNoSecrets(error, h)

        let known = try await PlayHarness.start()
        defer { known.stop() }
        known.fake.store(PlayFixtures.activeSubscription, at: Self.path)
        known.fake.scriptToken(.reply(.json(503, "")), .reply(.json(200, #"{"token_type": "Bearer"}"#)))
        error = await subscriptionError(known)
        #expect(error?.call == .token && error?.kind == .http(status: 503) && error?.isTransient == true)
        error = await subscriptionError(known)
        #expect(error?.call == .token && error?.kind == .decode && error?.isTransient == true)
        // A failed refresh is not cached: the next call fetches again and succeeds.
        #expect(try await known.client.subscription(packageName: PlayHarness.package, token: "purchase-token") != nil)
        #expect(known.fake.tokenRequests == 3)
    }
}
