import Config
import Events
import Foundation
import Outbound
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// Google's key set: both published forms, from a file or from a local server standing in for
/// `https://www.googleapis.com/oauth2/v3/certs`, fetched with the gateway's real fetcher.
@Suite("Google: key set (JWKS) loading and caching")
struct GoogleKeySetTests {
    static let t0 = GoogleFixtures.now

    static func at(_ seconds: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: t0.millisecondsSince1970 + seconds * 1000)
    }

    @Test("RSA keys built from JWK n and e verify what the private key signed")
    func keyFromComponents() async throws {
        let f = await GoogleFixtures.shared()
        let components = try #require(f.signing.publicKey?.rsaComponents)
        #expect(components.exponent == [0x01, 0x00, 0x01])
        let key = try #require(PublicKey(rsaModulus: components.modulus, exponent: components.exponent))
        #expect(key.isRSA && key.bits == 2048)
        let message = Array("header.payload".utf8)
        #expect(key.verifyRSASHA256(message: message, signature: try #require(f.signing.signRSASHA256(message))))
        #expect(!key.verifyRSASHA256(message: message, signature: try #require(f.stranger.signRSASHA256(message))))
        #expect(PublicKey(rsaModulus: [], exponent: [1, 0, 1]) == nil)
    }

    @Test("both documents Google publishes: JWKS (v3) and PEM certificates (v1)")
    func documentForms() async throws {
        let f = await GoogleFixtures.shared()
        let keys = [(kid: "key-1", key: f.signing), (kid: "key-2", key: f.rotated)]
        for document in [GoogleFixtures.jwks(keys), GoogleFixtures.certificates(keys)] {
            let parsed = try GoogleKeyDocument.keys(from: Array(document.utf8))
            #expect(Set(parsed.keys) == ["key-1", "key-2"])
            let source = f.source(keySet: GoogleKeySet(keys: parsed, origin: "doc"))
            let token = f.token(header: GoogleFixtures.header(kid: "key-2"), key: f.rotated)
            #expect(await source.reason(GoogleFixtures.request(GoogleAuthenticationTests.body, token: token)) == nil)
        }
        // Keys of other kinds are skipped; a set with no usable key, or garbage, is refused.
        let mixed = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"ec","x":"AA","y":"AA"},"# + GoogleFixtures.jwks(keys).dropFirst(9)
        #expect(try GoogleKeyDocument.keys(from: Array(mixed.utf8)).count == 2)
        for bad in [#"{"keys":[]}"#, "[]", "not json", #"{"key-1":"not a certificate"}"#,
                    #"{"keys":[{"kty":"RSA","kid":"k","n":"AQAB","e":"AQAB"}]}"#] {
            #expect(throws: GoogleKeyDocument.Invalid.self) { try GoogleKeyDocument.keys(from: Array(bad.utf8)) }
        }
    }

    @Test("a key set file configured in sources.google.jwks is read at start-up; a bad one fails it")
    func fromFile() async throws {
        let f = await GoogleFixtures.shared()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-google-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("certs.json").path
        try Data(GoogleFixtures.certificates([("key-1", f.signing)]).utf8).write(to: URL(fileURLWithPath: path))
        var settings = GoogleSettings()
        settings.audience = GoogleFixtures.audience
        settings.serviceAccountEmail = GoogleFixtures.email
        settings.packages = [GoogleFixtures.package]
        settings.jwks = path
        let source = try GoogleSource(settings: settings)
        #expect(await source.reason(GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token())) == nil)
        #expect(await source.readinessProblem(now: Self.t0) == nil)

        settings.jwks = folder.appendingPathComponent("missing.json").path
        #expect(throws: ConfigError.self) { try GoogleSource(settings: settings) }
        try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
        settings.jwks = path
        #expect(throws: ConfigError.self) { try GoogleSource(settings: settings) }
    }

    @Test("fetched keys are cached for the response's max-age, refreshed a quarter of it ahead of its end")
    func cachedForMaxAge() async throws {
        let f = await GoogleFixtures.shared()
        let server = JWKSServer(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)]), maxAge: 300))
        defer { server.stop() }
        let keySet = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher())
        _ = try await keySet.key(id: "key-1", now: Self.at(0))
        _ = try await keySet.key(id: "key-1", now: Self.at(150))
        _ = try await keySet.key(id: "key-1", now: Self.at(224))
        #expect(server.requestCount == 1)
        _ = try await keySet.key(id: "key-1", now: Self.at(226))
        #expect(server.requestCount == 2)
        _ = try await keySet.key(id: "key-1", now: Self.at(450))
        #expect(server.requestCount == 2)
        #expect(GoogleKeyDocument.maxAge(cacheControl: "public, max-age=19977, must-revalidate, no-transform", age: "77") == 19_900)
        #expect(GoogleKeyDocument.maxAge(cacheControl: "no-cache", age: nil) == nil)
    }

    @Test("an unknown kid refetches at most once a minute, however many forged kids arrive, one fetch at a time")
    func unknownKidRateLimit() async throws {
        let f = await GoogleFixtures.shared()
        let server = JWKSServer(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)]), maxAge: 21_600))
        defer { server.stop() }
        let keySet = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher())
        _ = try await keySet.key(id: "key-1", now: Self.at(0))
        #expect(server.requestCount == 1)

        // Google rotated in key-2; within the first minute the set is not asked again.
        server.set(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing), ("key-2", f.rotated)])))
        await #expect(throws: Rejection.self) { try await keySet.key(id: "key-2", now: Self.at(30)) }
        #expect(server.requestCount == 1)
        _ = try await keySet.key(id: "key-2", now: Self.at(61))
        #expect(server.requestCount == 2)

        // A flood of forged kids, concurrently and over the next minute: one more fetch at most.
        let reasons = await withTaskGroup(of: (any ReasonCode)?.self) { group in
            for index in 0..<40 {
                group.addTask {
                    do throws(Rejection) {
                        _ = try await keySet.key(id: "forged-\(index)", now: Self.at(130 + Int64(index)))
                        return nil
                    } catch { return error.reason }
                }
            }
            return await group.reduce(into: [(any ReasonCode)?]()) { $0.append($1) }
        }
        #expect(reasons.allSatisfy { $0 == .unknownKeyId })
        #expect(server.requestCount == 3)
        #expect(keySet.fetchCount == 3)
    }

    @Test("a failed refresh (error status, garbage, unreachable) keeps the keys held until their cache lifetime ends")
    func failedRefetchKeepsKeys() async throws {
        let f = await GoogleFixtures.shared()
        // max-age 400: refreshed from 300 (a quarter ahead), used until 400.
        let server = JWKSServer(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)]), maxAge: 400))
        let keySet = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher())
        let source = f.source(keySet: keySet)
        _ = try await keySet.key(id: "key-1", now: Self.at(0))

        server.set(JWKSServer.Reply(status: 500, body: "oops"))
        _ = try await keySet.key(id: "key-1", now: Self.at(300))
        #expect(server.requestCount == 2)
        server.set(JWKSServer.Reply(body: #"{"keys":"#))
        _ = try await keySet.key(id: "key-1", now: Self.at(360))
        #expect(server.requestCount == 3)
        server.stop()
        let request = GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token(), now: Self.at(399))
        #expect(await source.reason(request) == nil, "still verifying with the keys it had, within their lifetime")
        #expect(keySet.fetchCount == 3, "the last attempt was less than a minute ago")
        #expect(await keySet.readinessProblem(now: Self.at(399)) == nil)
    }

    @Test("past their cache lifetime, with refreshes failing, the keys are not used: 503 key_set_unavailable and /readyz names google_key_set")
    func expiredKeysAreNotUsed() async throws {
        let f = await GoogleFixtures.shared()
        let server = JWKSServer(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)]), maxAge: 400))
        defer { server.stop() }
        let keySet = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher())
        let source = f.source(keySet: keySet)
        _ = try await keySet.key(id: "key-1", now: Self.at(0))

        server.set(JWKSServer.Reply(status: 503, body: "unavailable"))
        let late = GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token(), now: Self.at(400))
        let rejection = await source.rejection(late)
        #expect(rejection?.reason == .keySetUnavailable, "\(String(describing: rejection))")
        #expect(rejection?.message.contains("past their cache lifetime") == true && rejection?.message.contains("HTTP 503") == true,
                "\(String(describing: rejection))")
        let problem = await keySet.readinessProblem(now: Self.at(401))
        #expect(problem?.hasPrefix("google_key_set: ") == true, "\(problem ?? "ready")")
        #expect(await source.readinessProblem(now: Self.at(401)) != nil)

        // Google answers again: the next attempt (sooner than a minute, no key being usable) restores them.
        server.set(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)]), maxAge: 400))
        let recovered = GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token(), now: Self.at(410))
        #expect(await source.reason(recovered) == nil)
        #expect(await keySet.readinessProblem(now: Self.at(411)) == nil)
    }

    @Test("a key set answer is bounded while it streams: an endless body fails at the bound, not at the deadline")
    func boundedWhileStreaming() async throws {
        let f = await GoogleFixtures.shared()
        let server = JWKSServer(JWKSServer.Reply(body: String(repeating: "x", count: 16_384), endless: true))
        defer { server.stop() }
        var settings = GoogleKeySet.Settings()
        settings.timeout = .seconds(30)
        let keySet = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher(), settings: settings)
        let started = ContinuousClock.now
        let problem = await keySet.readinessProblem(now: Self.at(0))
        #expect(problem?.contains("response over 65536 bytes") == true, "\(problem ?? "ready")")
        #expect(ContinuousClock.now - started < .seconds(20), "refused while streaming, long before the deadline")
        // The transfer ended: the server stopped sending once the fetcher hung up (the body past the
        // bound is dropped as it arrives, never kept).
        let sent = try await Self.settled { server.bodyBytesSent }
        #expect(ContinuousClock.now - started < .seconds(20), "\(sent) bytes sent before the transfer stopped")
        // A larger announced Content-Length is refused before its body.
        let announced = JWKSServer(JWKSServer.Reply(body: String(repeating: " ", count: 70_000) + GoogleFixtures.jwks([("key-1", f.signing)])))
        defer { announced.stop() }
        let refused = GoogleKeySet(url: announced.url, fetcher: HTTPClientFetcher())
        #expect(await refused.readinessProblem(now: Self.at(0))?.contains("response over 65536 bytes") == true)
    }

    /// The value once it stops changing for 200 ms.
    static func settled(_ read: () -> Int) async throws -> Int {
        var last = read()
        while true {
            try await Task.sleep(for: .milliseconds(200))
            let now = read()
            if now == last { return now }
            last = now
        }
    }

    @Test("an unreachable key set URL does not fail start-up; readiness says so, pushes are 503, and it recovers")
    func unreachableAtStartUp() async throws {
        let f = await GoogleFixtures.shared()
        let port = LoopbackListener.freePort()
        var settings = GoogleSettings()
        settings.audience = GoogleFixtures.audience
        settings.serviceAccountEmail = GoogleFixtures.email
        settings.packages = [GoogleFixtures.package]
        settings.jwks = "http://127.0.0.1:\(port)/oauth2/v3/certs"
        let source = try GoogleSource(settings: settings, fetcher: HTTPClientFetcher())

        let problem = await source.readinessProblem(now: Self.at(0))
        #expect(problem?.contains("not loaded from http://127.0.0.1:\(port)") == true, "\(problem ?? "ready")")
        let request = GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token(), now: Self.at(1))
        let rejection = await source.rejection(request)
        #expect(rejection?.reason == .keySetUnavailable)
        #expect(WebhookReason.keySetUnavailable.httpStatus == 503)

        let server = JWKSServer(JWKSServer.google(GoogleFixtures.jwks([("key-1", f.signing)])))
        defer { server.stop() }
        let recovering = GoogleKeySet(url: server.url, fetcher: HTTPClientFetcher())
        #expect(await recovering.readinessProblem(now: Self.at(0)) == nil)
        #expect(server.requestCount == 1)
    }

    @Test("without a fetcher (an offline command) a URL key set is unavailable, with advice")
    func offline() async throws {
        let keySet = GoogleKeySet(url: "https://www.googleapis.com/oauth2/v3/certs", fetcher: nil)
        do throws(Rejection) {
            _ = try await keySet.key(id: "key-1", now: Self.t0)
            Issue.record("expected a rejection")
        } catch {
            #expect(error.reason == .keySetUnavailable)
            #expect(error.message.contains("save the key set to a file"))
        }
    }
}
