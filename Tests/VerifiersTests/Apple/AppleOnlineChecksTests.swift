import Config
import Events
import Foundation
import Outbound
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// `onlineChecks: true`: validity now, and OCSP for leaf and intermediate against the responders
/// their AIA names, here real `openssl ocsp` responders on local ports.
@Suite("Apple: online checks (OCSP)")
struct AppleOnlineChecksTests {
    @Test("good answers for leaf and intermediate accept the delivery, and are cached")
    func good() async throws {
        let fixture = try await offPool { try OnlineFixture() }
        let source = fixture.source()
        let first = try fixture.chain.sign(AppleBodies.notification())
        #expect(await source.reason(AppleBodies.request(first, now: .current)) == nil)
        // With both responders gone, the cached answers (valid until nextUpdate) still serve.
        fixture.stop()
        let second = try fixture.chain.sign(AppleBodies.notification(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED"))
        #expect(await source.reason(AppleBodies.request(second, now: .current)) == nil)
        // A fresh gateway without a cache fails closed.
        #expect(await fixture.source().reason(AppleBodies.request(second, now: .current)) == .revocationCheckFailed)
    }

    @Test("a revoked leaf or intermediate is refused as certificate_revoked")
    func revoked() async throws {
        let leafRevoked = try await offPool { try OnlineFixture(leafRevoked: true) }
        let jws = try leafRevoked.chain.sign(AppleBodies.notification())
        #expect(await leafRevoked.source().reason(AppleBodies.request(jws, now: .current)) == .certificateRevoked)

        let intermediateRevoked = try await offPool { try OnlineFixture(intermediateRevoked: true) }
        let other = try intermediateRevoked.chain.sign(AppleBodies.notification())
        #expect(await intermediateRevoked.source().reason(AppleBodies.request(other, now: .current)) == .certificateRevoked)
        #expect(WebhookReason.certificateRevoked.httpStatus == 401)
    }

    @Test("no responder, a silent responder, an unknown certificate or a forged answer fail closed with 503")
    func failsClosed() async throws {
        let unreachable = try await offPool { try OnlineFixture(start: false) }
        let jws = try unreachable.chain.sign(AppleBodies.notification())
        #expect(await unreachable.source().reason(AppleBodies.request(jws, now: .current)) == .revocationCheckFailed)
        #expect(WebhookReason.revocationCheckFailed.httpStatus == 503)

        let silent = LoopbackListener()
        let silentPort = silent.port
        let hanging = try await offPool { try OnlineFixture(start: false, leafPort: silentPort, intermediatePort: silentPort) }
        let hangingJWS = try hanging.chain.sign(AppleBodies.notification())
        let started = ContinuousClock.now
        let timedOut = await hanging.source(timeout: .milliseconds(300)).rejection(AppleBodies.request(hangingJWS, now: .current))
        #expect(timedOut?.reason == .revocationCheckFailed)
        #expect(timedOut?.message.contains("timed out") == true, "\(timedOut?.message ?? "")")
        #expect(ContinuousClock.now - started < .seconds(30), "bounded by the OCSP timeout, not by the responder")
        withExtendedLifetime(silent) {}

        let unknown = try await offPool { try OnlineFixture(leafKnown: false) }
        let unknownJWS = try unknown.chain.sign(AppleBodies.notification())
        let unknownAnswer = await unknown.source().rejection(AppleBodies.request(unknownJWS, now: .current))
        #expect(unknownAnswer?.reason == .revocationCheckFailed)
        #expect(unknownAnswer?.message.contains("does not know") == true)

        let forged = try await offPool { try OnlineFixture(forgedLeafAnswers: true) }
        let forgedJWS = try forged.chain.sign(AppleBodies.notification())
        let forgedAnswer = await forged.source().rejection(AppleBodies.request(forgedJWS, now: .current))
        #expect(forgedAnswer?.reason == .revocationCheckFailed)
        #expect(forgedAnswer?.message.contains("not signed by the issuer") == true)
    }

    @Test("online, validity is checked now rather than at signedDate")
    func validityNow() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        var options = AppleTestChain.Options()
        // Valid when Apple signed (signedDate in 2023), expired a day ago.
        options.leafValidity = (AppleBodies.signedDate / 1000 - 86_400)...(now - 86_400)
        let chain = try AppleTestChain(options)
        let jws = try chain.sign(AppleBodies.notification())
        #expect(await chain.source().reason(AppleBodies.request(jws, now: .current)) == nil)
        let online = AppleSource(apps: AppleTestChain.apps, roots: [chain.root],
                                 online: (HTTPClientFetcher(), OCSPChecker.Settings(timeout: .seconds(5))))
        #expect(await online.reason(AppleBodies.request(jws, now: .current)) == .certificateExpired)
    }

    @Test("a certificate without an AIA responder fails closed, unless a responder override is configured")
    func responderOverride() async throws {
        let fixture = try await offPool { try OnlineFixture(leafAIA: false) }
        let store = try #require(TrustStore(roots: [fixture.chain.root]))
        let now = Int64(Date().timeIntervalSince1970)
        let plain = OCSPChecker(fetcher: HTTPClientFetcher(), trustStore: store)
        do throws(Rejection) {
            try await plain.check(fixture.chain.leaf, issuer: fixture.chain.intermediate, now: now)
            Issue.record("a certificate without a responder passed")
        } catch {
            #expect(error.reason == .revocationCheckFailed)
        }
        let overridden = OCSPChecker(fetcher: HTTPClientFetcher(), trustStore: store,
                                     settings: OCSPChecker.Settings(responderOverride: fixture.leafResponder?.url))
        try await overridden.check(fixture.chain.leaf, issuer: fixture.chain.intermediate, now: now)
        #expect(overridden.cachedAnswers == 1)
    }
}

/// A chain whose AIA names two local `openssl ocsp` responders: the intermediate answers for
/// the leaf, the root for the intermediate (as Apple's WWDR and root CAs do).
struct OnlineFixture: Sendable {
    let chain: AppleTestChain
    let leafResponder: OCSPResponder?
    let intermediateResponder: OCSPResponder?

    init(leafRevoked: Bool = false, intermediateRevoked: Bool = false, leafKnown: Bool = true, forgedLeafAnswers: Bool = false,
         leafAIA: Bool = true, start: Bool = true, leafPort: Int? = nil, intermediatePort: Int? = nil) throws {
        let leafPort = leafPort ?? LoopbackListener.freePort()
        var intermediatePort = intermediatePort ?? LoopbackListener.freePort()
        while start, intermediatePort == leafPort { intermediatePort = LoopbackListener.freePort() }
        var options = AppleTestChain.Options()
        options.leafOCSP = leafAIA ? "http://127.0.0.1:\(leafPort)" : nil
        options.intermediateOCSP = "http://127.0.0.1:\(intermediatePort)"
        chain = try AppleTestChain(options)
        guard start else {
            leafResponder = nil
            intermediateResponder = nil
            return
        }
        var signer = (certificate: chain.intermediate, key: chain.intermediateKey)
        if forgedLeafAnswers {
            // Self-signed under the intermediate's name: not the issuer, not delegated by it.
            let key = try #require(PrivateKey.generateP256())
            var builder = CertificateBuilder(subject: "Test WWDR", notBefore: AppleTestChain.y2020, notAfter: AppleTestChain.y2040)
            builder.extendedKeyUsage = "OCSPSigning"
            signer = (try #require(builder.issue(key: key, issuer: nil, issuerKey: key)), key)
        }
        leafResponder = try OCSPResponder(
            port: leafPort, issuer: chain.intermediate, signer: signer.certificate, signerKey: signer.key,
            entries: [.init(certificate: chain.leaf, subject: "Test Leaf", serial: leafKnown ? 3 : 0x77, revoked: leafRevoked)])
        intermediateResponder = try OCSPResponder(
            port: intermediatePort, issuer: chain.root, signer: chain.root, signerKey: chain.rootKey,
            entries: [.init(certificate: chain.intermediate, subject: "Test WWDR", serial: 2, revoked: intermediateRevoked)])
    }

    func source(timeout: Duration = .seconds(5)) -> AppleSource {
        AppleSource(apps: AppleTestChain.apps, roots: [chain.root],
                    online: (HTTPClientFetcher(), OCSPChecker.Settings(timeout: timeout)))
    }

    func stop() {
        leafResponder?.stop()
        intermediateResponder?.stop()
    }
}

extension Timestamp {
    static var current: Timestamp { Timestamp(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000)) }
}
