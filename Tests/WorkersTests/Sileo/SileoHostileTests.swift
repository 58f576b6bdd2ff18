import Entitlements
import Events
import Foundation
import Store
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// What an attacker tries against the Sileo vendor API, each refused with its reason code, counted.
@Suite("Sileo: hostile clients")
struct SileoHostileTests {
    struct Scene: Sendable {
        let fixture: SileoFixture
        let harness: WorkerHarness
        let workers: RunningWorkers
        let clock: TestClock
        let base: String
        var api: String { base + SileoFixture.base }
        var packageURL: String { api + "/package/" + SileoFixture.package }

        func post(_ path: String, _ fields: [String: String]) async throws -> SileoHTTP.Answer {
            try await SileoHTTP.call("POST", api + path, json: SileoWalkTests.body(fields))
        }

        /// `user` owns the package (a paid notification projected by the workers).
        func grant(_ user: String, subject: String) async throws {
            try await harness.publish(SileoFixture.purchase(.purchaseCompleted, id: "paid-\(subject)", user: user, subject: subject))
            try await waitUntil("\(user) owns the package") {
                try await harness.storeOwns(workers, user: user)
            }
        }

        func rejected(_ reason: String) -> Int64 {
            workers.metrics.total("tollgate_sileo_rejections_total", ["vendor": SileoFixture.base, "reason": reason])
        }
    }

    static func withScene(_ body: (Scene) async throws -> Void) async throws {
        let fixture = try SileoFixture()
        defer { fixture.stop() }
        try await TestDatabases.withStore(.sqlite) { store in
            try await WorkerHarness.with { harness in
                let clock = TestClock()
                let port = LoopbackListener.freePort()
                let base = "http://127.0.0.1:\(port)"
                let vendor = try fixture.vendor(publicBaseURL: base)
                try await harness.withWorkers(store: store, clock: { Int64(clock.now.timeIntervalSince1970 * 1000) }, sileo: [vendor],
                                              sileoCheckouts: fixture.checkouts, ownServer: true, serverPort: port) { workers in
                    _ = try await workers.baseURL()
                    try await body(Scene(fixture: fixture, harness: harness, workers: workers, clock: clock, base: base))
                }
            }
        }
    }

    @Test("the sign-in cookie is Secure unless the public URL is http on this machine, where a browser would not send it back")
    func cookieSecurity() async throws {
        #expect(SileoAPI.cookieAttributes(publicBaseURL: "https://repo.example") == "HttpOnly; Secure; SameSite=Lax")
        #expect(SileoAPI.cookieAttributes(publicBaseURL: "http://repo.example") == "HttpOnly; Secure; SameSite=Lax")
        #expect(SileoAPI.cookieAttributes(publicBaseURL: "http://127.0.0.1:8080") == "HttpOnly; SameSite=Lax")
        #expect(SileoAPI.cookieAttributes(publicBaseURL: "http://localhost:8080") == "HttpOnly; SameSite=Lax")
        try await Self.withScene { scene in
            let start = try await SileoHTTP.call("GET", scene.base + SileoFixture.base + "/authenticate?udid=x&model=y")
            let cookie = try #require(start.headers["set-cookie"])
            #expect(cookie.hasSuffix("; HttpOnly; SameSite=Lax") && !cookie.contains("Secure"), "\(cookie)")
        }
    }

    @Test("a vendor whose provider takes no checkouts stops the start, naming the providers that do")
    func unknownProvider() throws {
        let fixture = try SileoFixture()
        defer { fixture.stop() }
        let error = #expect(throws: SileoVendor.SetupError.self) { try fixture.vendor(publicBaseURL: "https://repo.example", provider: "stripe") }
        #expect(error?.description.hasSuffix(#"provider "stripe" is not a checkout provider (alipayplus, citcon)"#) == true)
        #expect(try fixture.vendor(publicBaseURL: "https://repo.example", provider: "citcon").settings.provider == "citcon")
    }

    @Test("a wrong or missing payment secret buys nothing: 403 wrong_payment_secret, status -1, no checkout")
    func wrongPaymentSecret() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            for fields in [["token": device.bearer, "payment_secret": String(repeating: "0", count: 64)], ["token": device.bearer]] {
                let answer = try await scene.post("/package/\(SileoFixture.package)/purchase", fields)
                #expect(answer.status == 403)
                #expect(answer.json["status"]?.int64 == -1)
                #expect(answer.json["reason"]?.string == "wrong_payment_secret")
            }
            #expect(scene.fixture.checkouts.pending.withLock { $0.isEmpty })
            #expect(scene.rejected("wrong_payment_secret") == 2)
        }
    }

    @Test("a download key expires after downloadKeyTtlSeconds, and is refused once used")
    func expiredAndReusedKey() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            try await scene.grant("user-a", subject: "pay-a")
            let first = try await scene.post("/package/\(SileoFixture.package)/authorize_download", ["token": device.bearer])
            let expiring = try #require(first.json["url"]?.string)
            scene.clock.advance(seconds: 121)
            let late = try await SileoHTTP.call("GET", expiring)
            #expect(late.status == 403)
            #expect(late.json["reason"]?.string == "invalid_download_key")

            let second = try await scene.post("/package/\(SileoFixture.package)/authorize_download", ["token": device.bearer])
            let url = try #require(second.json["url"]?.string)
            #expect(try await SileoHTTP.call("GET", url).status == 200)
            #expect(try await SileoHTTP.call("GET", url).status == 403)
            // A made-up key, and a real key on another package's route.
            let third = try #require(try await scene.post("/package/\(SileoFixture.package)/authorize_download", ["token": device.bearer]).json["url"]?.string)
            let key = try #require(third.split(separator: "?key=").last.map(String.init))
            #expect(try await SileoHTTP.call("GET", scene.api + "/download/com.example.retired?key=" + key).status == 403)
            #expect(try await SileoHTTP.call("GET", scene.api + "/download/\(SileoFixture.package)?key=" + String(repeating: "a", count: 64)).status == 403)
            #expect(scene.rejected("invalid_download_key") == 4)
        }
    }

    @Test("a downloadURL package redirects to its URL signed to expire: the merchant's check (docs/sileo.md) takes it until then, not after, nor with another path or expiry")
    func signedDownloadRedirect() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            try await scene.harness.publish(SileoFixture.purchase(.purchaseCompleted, id: "paid-cdn", user: "user-a", subject: "pay-cdn",
                                                                  product: SileoFixture.cdnProduct))
            let path = "/package/\(SileoFixture.cdnPackage)/authorize_download"
            try await waitUntil("user-a owns the package") { try await scene.post(path, ["token": device.bearer]).status == 200 }
            let authorized = try #require(try await scene.post(path, ["token": device.bearer]).json["url"]?.string)
            let redirect = try await SileoHTTP.call("GET", authorized)
            #expect(redirect.status == 302)
            #expect(redirect.headers["cache-control"] == "no-store")
            let location = redirect.location
            let now = Int64(scene.clock.now.timeIntervalSince1970)
            let expires = now + 120
            #expect(location.hasPrefix(SileoFixture.cdnURL + "?expires=\(expires)&signature="), "\(location)")
            #expect(!location.contains(SileoFixture.downloadSecret) && !location.contains(device.token))
            let secret = SileoFixture.downloadSecret
            #expect(Self.merchantServes(location, secret: secret, nowSeconds: now))
            #expect(Self.merchantServes(location, secret: secret, nowSeconds: expires))
            #expect(!Self.merchantServes(location, secret: secret, nowSeconds: expires + 1))
            // The link names one file until one time: another path or a later expiry does not verify.
            #expect(!Self.merchantServes(location.replacingOccurrences(of: "tweak-cdn_1.0.deb", with: "other_1.0.deb"), secret: secret,
                                         nowSeconds: now))
            #expect(!Self.merchantServes(location.replacingOccurrences(of: "expires=\(expires)", with: "expires=\(expires + 86_400)"),
                                         secret: secret, nowSeconds: now))
            #expect(!Self.merchantServes(location, secret: String(secret.reversed()), nowSeconds: now))
            #expect(scene.workers.metrics.total("tollgate_sileo_downloads_total", ["vendor": SileoFixture.base, "delivery": "redirect"]) == 1)
            // The key was single-use all the same.
            #expect(try await SileoHTTP.call("GET", authorized).status == 403)
        }
    }

    @Test("the worked example of docs/sileo.md is what Tollgate signs")
    func documentedSignature() {
        let signer = SileoDownloadSignature(secret: Array("6f1c9e0a2b7d4c8e9a1f3b5d7c9e0f2a4b6d8e0c2a4f6b8d".utf8))
        #expect(signer.signedURL("https://files.example.com/debs/classicfolders_2.0.deb", expires: 1_798_761_600)
                == "https://files.example.com/debs/classicfolders_2.0.deb?expires=1798761600&signature=5f714c5f3661eab47d14b56fcabfb565300db904c3cd9d7da7ec22a002ac7a6c")
        #expect(SileoDownloadSignature.secret(fromFile: Array("too short\n".utf8)) == nil)
        #expect(SileoDownloadSignature.secret(fromFile: Array("6f1c9e0a2b7d4c8e9a1f3b5d7c9e0f2a4b6d8e0c2a4f6b8d\r\n".utf8)) == signer.secret)
    }

    /// The check docs/sileo.md asks of the merchant's file server, written from the document: `expires`
    /// not passed, and the hex HMAC-SHA256 of `<path>\n<expires>` under the shared secret equal to
    /// `signature`. HMAC is built here from SHA-256 as RFC 2104 defines it, not with Tollgate's own.
    static func merchantServes(_ url: String, secret: String, nowSeconds: Int64) -> Bool {
        guard let components = URLComponents(string: url), let items = components.queryItems,
              let expiresText = items.first(where: { $0.name == "expires" })?.value, let expires = Int64(expiresText),
              let signature = items.first(where: { $0.name == "signature" })?.value, nowSeconds <= expires else { return false }
        var key = Array(secret.utf8)
        if key.count > 64 { key = Digest.sha256(key) }
        key += [UInt8](repeating: 0, count: 64 - key.count)
        let inner = Digest.sha256(key.map { $0 ^ 0x36 } + Array("\(components.percentEncodedPath)\n\(expiresText)".utf8))
        return Digest.hex(Digest.sha256(key.map { $0 ^ 0x5C } + inner)) == signature
    }

    @Test("another user's token sees and downloads only that user's purchases, and cannot spend the first user's secret")
    func anotherUsersToken() async throws {
        try await Self.withScene { scene in
            let alice = try await scene.fixture.signIn(at: scene.base)
            scene.fixture.page.user.withLock { $0 = "user-b" }
            let bob = try await scene.fixture.signIn(at: scene.base)
            try await scene.grant("user-a", subject: "pay-a")

            let bobsInfo = try await scene.post("/user_info", ["token": bob.bearer])
            #expect(bobsInfo.json["items"]?.array == [])
            #expect(bobsInfo.json["user"]?["email"]?.string == "user-b@example.com")
            let download = try await scene.post("/package/\(SileoFixture.package)/authorize_download", ["token": bob.bearer])
            #expect(download.status == 403)
            #expect(download.json["reason"]?.string == "not_entitled")
            let purchase = try await scene.post("/package/\(SileoFixture.package)/purchase", ["token": bob.bearer, "payment_secret": alice.paymentSecret])
            #expect(purchase.status == 403)
            #expect(purchase.json["reason"]?.string == "wrong_payment_secret")
            let info = try await scene.post("/package/\(SileoFixture.package)/info", ["token": bob.bearer])
            #expect(info.json["purchased"]?.bool == false)
        }
    }

    @Test("a signed-out, unknown or missing token answers 401 with invalidate: true")
    func signedOutToken() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            // Stored only as SHA-256: the row holds the hashes, never the token or the payment secret.
            let stored = try await scene.workers.workers.store.database.read { connection throws(StoreError) in
                try connection.query("SELECT token_hash, payment_secret_hash FROM sileo_tokens", []).map {
                    ($0.text("token_hash") ?? "", $0.text("payment_secret_hash") ?? "")
                }
            }
            #expect(stored.count == 1 && stored.first?.0 == SileoCredentials.hash(device.token) && stored.first?.1 == SileoCredentials.hash(device.paymentSecret))
            #expect(stored.first?.0 != device.token && stored.first?.1 != device.paymentSecret)
            let out = try await scene.post("/sign_out", ["token": device.bearer])
            #expect(out.status == 200)
            #expect(out.json["success"]?.bool == true)
            for path in ["/user_info", "/sign_out", "/package/\(SileoFixture.package)/info", "/package/\(SileoFixture.package)/authorize_download"] {
                let answer = try await scene.post(path, ["token": device.bearer])
                #expect(answer.status == 401, "\(path)")
                #expect(answer.json["invalidate"]?.bool == true, "\(path)")
                #expect(answer.json["reason"]?.string == "invalid_sileo_token", "\(path)")
                #expect(answer.json["error"]?.string?.contains(device.token) == false)
            }
            let purchase = try await scene.post("/package/\(SileoFixture.package)/purchase", ["token": device.bearer, "payment_secret": device.paymentSecret])
            #expect(purchase.status == 401)
            #expect(purchase.json["status"]?.int64 == -1)
            #expect(try await scene.post("/user_info", [:]).json["invalidate"]?.bool == true)
            // Without a token, package info still shows the price.
            let anonymous = try await scene.post("/package/\(SileoFixture.package)/info", [:])
            #expect(anonymous.status == 200)
            #expect(anonymous.json["price"]?.string == "$1.99")
        }
    }

    @Test("forged, wrong-algorithm, expired, replayed and other-browser assertions issue no token")
    func hostileAssertions() async throws {
        try await Self.withScene { scene in
            let fixture = scene.fixture
            func completion(_ makeAssertion: @escaping @Sendable (String) -> String, cookie useCookie: Bool = true) async throws -> SileoHTTP.Answer {
                fixture.page.override.withLock { $0 = makeAssertion }
                defer { fixture.page.override.withLock { $0 = nil } }
                let (returnURL, cookie) = try await fixture.signInUpToReturn(at: scene.base)
                return try await SileoHTTP.call("GET", returnURL, cookie: useCookie ? cookie : "tollgate_sileo_signin=" + String(repeating: "0", count: 64))
            }
            let otherKey = try #require(PrivateKey.generateP256())
            let forged = try await completion { SileoFixture.assertion(key: otherKey, user: "user-a", nonce: $0) }
            #expect(forged.status == 401)
            #expect(forged.json["reason"]?.string == "invalid_assertion")

            let key = fixture.signingKey
            let wrongAlg = try await completion { SileoFixture.assertion(key: key, user: "user-a", nonce: $0, alg: "ES384") }
            #expect(wrongAlg.json["reason"]?.string == "invalid_assertion")
            // alg none: the header says none and the signature part is empty.
            let none = try await completion { nonce in
                let signed = SileoFixture.assertion(key: key, user: "user-a", nonce: nonce)
                let parts = signed.split(separator: ".")
                return Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + "."
            }
            #expect(none.json["reason"]?.string == "invalid_assertion")
            // HS256 keyed with the public key's PEM (the algorithm-confusion forgery), RS256, and a `crit`
            // header under the right key: each refused.
            struct Claims: Encodable { var sub = "user-a", name = "a", email = "a@example.com", nonce: String; var iat, exp: Int64 }
            let publicPEM = Array((key.publicKeyPEM ?? "").utf8)
            let rsa = try #require(await offPool { PrivateKey.generateRSA() })
            let nowSeconds = Timestamp.now.millisecondsSince1970 / 1000
            struct Header: Encodable { var alg: String; var typ = "JWT"; var crit: [String]?; var b64: Bool? }
            for name in ["HS256", "RS256", "crit"] {
                let refused = try await completion { nonce in
                    let claims = Claims(nonce: nonce, iat: nowSeconds, exp: nowSeconds + 120)
                    let signed = switch name {
                    case "HS256": CompactJWS.signed(header: Header(alg: "HS256"), claims: claims) { Digest.hmacSHA256(key: publicPEM, message: $0) }
                    case "RS256": CompactJWS.signed(header: Header(alg: "RS256"), claims: claims) { rsa.signRSASHA256($0) }
                    default: CompactJWS.signed(header: Header(alg: "ES256", crit: ["b64"], b64: false), claims: claims) { key.signES256($0) }
                    }
                    return signed ?? ""
                }
                #expect(refused.status == 401 && refused.json["reason"]?.string == "invalid_assertion", "\(name): \(refused.status) \(refused.json)")
            }

            let issued = Timestamp.now.millisecondsSince1970 / 1000 - 3_600
            let expired = try await completion { SileoFixture.assertion(key: key, user: "user-a", nonce: $0, issuedAt: issued) }
            #expect(expired.status == 401)
            #expect(expired.json["reason"]?.string == "assertion_expired")
            let longLived = try await completion { SileoFixture.assertion(key: key, user: "user-a", nonce: $0, lifetime: 86_400) }
            #expect(longLived.json["reason"]?.string == "assertion_expired")

            let madeUpNonce = try await completion { _ in SileoFixture.assertion(key: key, user: "user-a", nonce: "nonce-tollgate-never-issued") }
            #expect(madeUpNonce.json["reason"]?.string == "invalid_nonce")
            let otherBrowser = try await completion({ SileoFixture.assertion(key: key, user: "user-a", nonce: $0) }, cookie: false)
            #expect(otherBrowser.json["reason"]?.string == "invalid_nonce")

            // Replayed: a completion that worked, sent again.
            let (returnURL, cookie) = try await fixture.signInUpToReturn(at: scene.base)
            #expect(try await SileoHTTP.call("GET", returnURL, cookie: cookie).status == 302)
            let replayed = try await SileoHTTP.call("GET", returnURL, cookie: cookie)
            #expect(replayed.status == 401)
            #expect(replayed.json["reason"]?.string == "invalid_nonce")
            #expect(replayed.headers["location"] == nil)
            #expect(scene.rejected("invalid_nonce") == 3)
        }
    }

    @Test("credentials end on time and ownership is asked again: a key issued before a refund downloads nothing, a package not for sale is 409, a sign-in nonce dies after ten minutes, a token after tokenTtlDays")
    func credentialsEndOnTime() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            try await scene.grant("user-a", subject: "pay-r")

            // A download link taken while owned, used after a refund: the refund takes the download back.
            let authorized = try await scene.post("/package/\(SileoFixture.package)/authorize_download", ["token": device.bearer])
            let link = try #require(authorized.json["url"]?.string, "\(authorized.status)")
            try await scene.harness.publish(SileoFixture.purchase(.purchaseRefunded, id: "refund-pay-r", user: "user-a", subject: "pay-r"))
            try await waitUntil("the refund applied") { try await !scene.harness.storeOwns(scene.workers, user: "user-a") }
            let afterRefund = try await SileoHTTP.call("GET", link)
            #expect(afterRefund.status == 403 && afterRefund.json["reason"]?.string == "not_entitled", "\(afterRefund.status)")
            #expect(afterRefund.body.count < 1_000, "no file bytes")
            #expect(scene.rejected("not_entitled") == 1)

            // A package the vendor no longer sells: 409 with its recovery page, and no checkout starts.
            let retired = try await scene.post("/package/com.example.retired/purchase", ["token": device.bearer, "payment_secret": device.paymentSecret])
            #expect(retired.status == 409 && retired.json["reason"]?.string == "package_unavailable", "\(retired.status) \(retired.json)")
            #expect(retired.json["recovery_url"]?.string == "https://repo.example/retired", "\(retired.json)")
            #expect(scene.fixture.checkouts.pending.withLock { $0.isEmpty })
            #expect(scene.rejected("package_unavailable") == 1)

            // A sign-in completed eleven minutes after it began, with an assertion fresh at that time:
            // the nonce has expired, so no token.
            let key = scene.fixture.signingKey
            let later = Int64(scene.clock.now.timeIntervalSince1970) + 660
            scene.fixture.page.override.withLock { $0 = { SileoFixture.assertion(key: key, user: "user-a", nonce: $0, issuedAt: later) } }
            let (returnURL, cookie) = try await scene.fixture.signInUpToReturn(at: scene.base)
            scene.fixture.page.override.withLock { $0 = nil }
            scene.clock.advance(seconds: 660)
            let lateSignIn = try await SileoHTTP.call("GET", returnURL, cookie: cookie)
            #expect(lateSignIn.status == 401 && lateSignIn.json["reason"]?.string == "invalid_nonce", "\(lateSignIn.status) \(lateSignIn.json)")
            #expect(lateSignIn.headers["location"] == nil)

            // The device's token still works a second before tokenTtlDays have passed since its sign-in, not after.
            let ttl = Double(SileoFixture.tokenTtlDays) * 86_400
            scene.clock.advance(seconds: ttl - 660 - 1)
            #expect(try await scene.post("/user_info", ["token": device.bearer]).status == 200)
            scene.clock.advance(seconds: 2)
            let expired = try await scene.post("/user_info", ["token": device.bearer])
            #expect(expired.status == 401 && expired.json["invalidate"]?.bool == true && expired.json["reason"]?.string == "invalid_sileo_token",
                    "\(expired.status) \(expired.json)")
        }
    }

    @Test("a package id that walks out of the catalog or the directory is unknown: 404")
    func pathTraversal() async throws {
        try await Self.withScene { scene in
            let device = try await scene.fixture.signIn(at: scene.base)
            for id in ["..%2F..%2Fetc%2Fpasswd", "..%2Fsignin.pem", "%2E%2E", "debs%2Ftweak_1.0.deb"] {
                let info = try await SileoHTTP.call("POST", scene.api + "/package/\(id)/info", json: SileoWalkTests.body(["token": device.bearer]))
                #expect(info.status == 404, "\(id)")
                let download = try await SileoHTTP.call("GET", scene.api + "/download/\(id)?key=" + String(repeating: "a", count: 64))
                #expect(download.status == 404 || download.status == 403, "\(id)")
                #expect(download.body.count < 1_000)
            }
            let raw = try await SileoHTTP.call("GET", scene.api + "/download/../../signin.pem?key=x", pathAsIs: true)
            #expect(raw.status == 404)
            #expect(scene.rejected("unknown_sileo_package") >= 4)
        }
    }
}

extension WorkerHarness {
    /// Whether the store says `user` owns the fixture's product now.
    func storeOwns(_ workers: RunningWorkers, user: String) async throws -> Bool {
        let found = try await workers.workers.store.entitlements(app: SileoFixture.app, user: user) ?? []
        return found.contains { $0.product == SileoFixture.product && $0.isActive(atMs: Timestamp.now.millisecondsSince1970) }
    }
}
